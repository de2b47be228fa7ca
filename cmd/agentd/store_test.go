package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"agentd/internal/app"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/store/sqlite"
)

// With AGENTD_TEST_STORE=postgres, every data directory the harness makes
// (dataDir) keeps its store in a PostgreSQL database of its own, on the
// server pgtest names, and the harness points each agentd it runs with
// --data at it ($AGENTD_STORE): the same tests then run against
// PostgreSQL.
const testStoreEnv = "AGENTD_TEST_STORE"

// pgDirs maps a data directory to its database's connection string.
var pgDirs sync.Map

// usePostgres reports whether the harness's data directories use PostgreSQL.
func usePostgres() bool { return os.Getenv(testStoreEnv) == "postgres" }

// newStoreFor gives a new data directory its own database when the
// harness uses PostgreSQL.
func newStoreFor(t *testing.T, dir string) {
	if usePostgres() {
		pgDirs.Store(dir, pgtest.NewDB(t))
	}
}

// storeEnv returns the environment that points agentd, run with args, at
// its data directory's store.
func storeEnv(args []string) []string {
	i := slices.Index(args, "--data")
	if i < 0 || i+1 >= len(args) {
		return nil
	}
	if u, ok := pgDirs.Load(args[i+1]); ok {
		return []string{app.StoreEnv + "=" + u.(string)}
	}
	return nil
}

// openDataStore opens the store of a data directory that no agentd runs
// on any more, for a test to check what it holds.
func openDataStore(t *testing.T, dir string) app.Store {
	t.Helper()
	var st app.Store
	var err error
	if u, ok := pgDirs.Load(dir); ok {
		st, err = postgres.Open(context.Background(), u.(string), nil)
	} else {
		st, err = sqlite.Open(context.Background(), filepath.Join(dir, "agentd.db"), nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	t.Logf("the data directory's store: %T", st)
	return st
}

// searchAll returns every history hit of query in agent's sessions,
// following the cursors.
func searchAll(t *testing.T, st app.Store, agent, query string) []store.HistoryHit {
	t.Helper()
	var all []store.HistoryHit
	cursor := ""
	for {
		hits, next, err := st.SearchHistory(context.Background(), store.HistoryQuery{Query: query, Agents: []string{agent}, Limit: 100, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, hits...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

// integrity checks a store that can check itself.
func integrity(t *testing.T, st app.Store) {
	t.Helper()
	c, ok := st.(interface {
		IntegrityCheck(ctx context.Context) (string, error)
	})
	if !ok {
		return
	}
	if res, err := c.IntegrityCheck(context.Background()); err != nil || strings.TrimSpace(res) != "ok" {
		t.Fatalf("integrity_check: %q %v", res, err)
	}
}
