package sqlite_test

import (
	"path/filepath"
	"testing"

	"agentd/internal/store/sqlite"
	"agentd/internal/store/storetest"
)

// TestContract runs the store contract against SQLite, a database file
// per store name in a directory of the test's.
func TestContract(t *testing.T) {
	dir := t.TempDir()
	storetest.Run(t, func(t testing.TB, name string) storetest.Store {
		t.Helper()
		s, err := sqlite.Open(t.Context(), filepath.Join(dir, name+".db"), nil)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
