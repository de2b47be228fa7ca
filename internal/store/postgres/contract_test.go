package postgres_test

import (
	"sync"
	"testing"

	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/store/storetest"
)

// TestContract runs the store contract against PostgreSQL, a database
// per store name.
func TestContract(t *testing.T) {
	pgtest.URL(t) // skips here, not in a subtest, without a server
	var mu sync.Mutex
	dbs := map[string]string{}
	storetest.Run(t, func(tb testing.TB, name string) storetest.Store {
		tb.Helper()
		mu.Lock()
		db, ok := dbs[name]
		if !ok {
			db = pgtest.NewDB(t)
			dbs[name] = db
		}
		mu.Unlock()
		s, err := postgres.Open(tb.Context(), db, nil)
		if err != nil {
			tb.Fatalf("Open: %v", err)
		}
		tb.Cleanup(func() { s.Close() })
		return s
	})
}
