package memory

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store/postgres/pgtest"
)

// With AGENTD_TEST_STORE=postgres, the tests open every memory store in a
// PostgreSQL database of its own (one per test and path), so that the
// same tests check both databases.

// pgPaths maps a test's database path to its PostgreSQL database.
var pgPaths sync.Map

func usePostgres() bool { return os.Getenv("AGENTD_TEST_STORE") == "postgres" }

// openPostgresAt opens the PostgreSQL database standing for path.
func openPostgresAt(t testing.TB, path string, o *Options) (*Store, error) {
	t.Helper()
	u, ok := pgPaths.Load(path)
	if !ok {
		u, _ = pgPaths.LoadOrStore(path, pgtest.NewDB(t))
	}
	cfg, err := pgx.ParseConfig(u.(string))
	if err != nil {
		t.Fatal(err)
	}
	return OpenPostgres(context.Background(), cfg, 0, o)
}

func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 1":                          "SELECT 1",
		"a = ? AND b = ?":                   "a = $1 AND b = $2",
		"x = ?1 OR y = ?1 AND z = ?2 ?3 ?4": "x = $1 OR y = $1 AND z = $2 $3 $4",
		"IN (?,?,?) LIMIT ?":                "IN ($1,$2,$3) LIMIT $4",
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}
