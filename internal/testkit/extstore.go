package testkit

import (
	"context"
	"path/filepath"
	"testing"

	"agentd/internal/store/sqlite"
)

// ExtensionStore opens a SQLite store in a temporary directory for tests
// of what keeps extension rows (the manager, the types, the API); it is
// closed when the test ends. The stores' own behaviour is storetest's.
func ExtensionStore(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agentd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
