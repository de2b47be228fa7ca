package postgres

import (
	"strings"
	"testing"
	"time"

	"agentd/internal/store/postgres/pgtest"
)

// TestSettingsReachTheServer: the pool size, the statement timeout and
// the connection string's sslmode (where agentd.yaml's store.sslmode
// goes) are what the connections use.
func TestSettingsReachTheServer(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := t.Context()
	for _, c := range []struct {
		sslmode string
		tls     bool
	}{{"disable", false}, {"require", true}} {
		t.Run(c.sslmode, func(t *testing.T) {
			u := db + "?sslmode=" + c.sslmode
			if strings.Contains(db, "?") {
				u = db + "&sslmode=" + c.sslmode
			}
			s, err := Open(ctx, u, &Options{PoolSize: 3, StatementTimeout: 1234 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.pool.Config().MaxConns; got != 3 {
				t.Errorf("pool size %d, want 3", got)
			}
			var timeout string
			var tls bool
			err = s.pool.QueryRow(ctx, `SELECT current_setting('statement_timeout'),
				coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false)`).Scan(&timeout, &tls)
			if err != nil {
				t.Fatal(err)
			}
			if timeout != "1234ms" {
				t.Errorf("statement_timeout %q, want 1234ms", timeout)
			}
			if tls != c.tls {
				t.Errorf("TLS in use: %v, want %v (is ssl on on the test server?)", tls, c.tls)
			}
		})
	}
}
