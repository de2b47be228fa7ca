package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/store/postgres/pgtest"
)

// A store that does not open is an error from Open, whichever store it
// is, and the parts opened before it are closed; the password of a
// PostgreSQL store that refuses it is not in the error.
func TestOpenStoreFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DBFile), []byte("not a database, not at all, no"), 0o600); err != nil {
		t.Fatal(err)
	}
	if a, err := Open(context.Background(), dir, nil); err == nil {
		a.Close(context.Background())
		t.Fatal("Open on a broken agentd.db succeeded")
	}

	for _, store := range []string{"mysql://db/agentd", "postgres://agentd:n0t-the-pw@127.0.0.1:1/agentd?connect_timeout=1"} {
		_, err := Open(context.Background(), t.TempDir(), &Options{Store: store})
		if err == nil || strings.Contains(err.Error(), "n0t-the-pw") {
			t.Errorf("Open with store %s: %v", store, err)
		}
	}
}

// With a PostgreSQL store, long-term memory is in its database: the data
// directory holds neither agentd.db nor memory.db.
func TestPostgresStoreKeepsNothingInTheDataDirectory(t *testing.T) {
	db := pgtest.NewDB(t)
	dir := t.TempDir()
	a, err := Open(context.Background(), dir, &Options{Store: db})
	if err != nil {
		t.Fatal(err)
	}
	if a.Memory == nil || a.storeKind != StorePostgres {
		t.Errorf("memory %v, store %s; want memory on postgres", a.Memory, a.storeKind)
	}
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{DBFile, MemoryFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s is in the data directory", f)
		}
	}
}
