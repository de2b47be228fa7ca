// Package pgtest gives tests a PostgreSQL database of their own, on the
// server that AGENTD_TEST_POSTGRES names (a postgres:// URL whose role may
// create databases). Without it, tests that need PostgreSQL are skipped,
// unless AGENTD_INTEROP=1 or CI is set: then they fail, so that a run that
// should test PostgreSQL cannot pass without it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Env is the environment variable naming the test server.
const Env = "AGENTD_TEST_POSTGRES"

// URL returns the test server's connection string, or skips t (fails it
// where PostgreSQL is required) when there is none.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		if os.Getenv("AGENTD_INTEROP") == "1" || os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: the PostgreSQL tests must run here", Env)
		}
		t.Skipf("%s is not set: no PostgreSQL to test against", Env)
	}
	return u
}

// NewDB creates an empty database on the test server, dropped when t
// ends, and returns its connection string.
func NewDB(t testing.TB) string {
	t.Helper()
	return newDB(t, "")
}

// NewDBCollated is NewDB with the ICU collation locale (e.g. "en-US") as
// the database's default, for tests of what must not depend on it.
func NewDBCollated(t testing.TB, locale string) string {
	t.Helper()
	return newDB(t, " TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '"+locale+"' LOCALE 'C.UTF-8'")
}

func newDB(t testing.TB, with string) string {
	t.Helper()
	admin := URL(t)
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", Env, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	name := "agentd_t_" + hex.EncodeToString(b)
	exec(t, admin, "CREATE DATABASE "+name+with)
	t.Cleanup(func() { drop(t, admin, name) })
	u.Path = "/" + name
	return u.String()
}

// drop removes a test's database. An autovacuum worker the server started
// on it cannot be ended by a role that is not a superuser's member
// (SQLSTATE 42501): that worker finishes soon, so the drop is tried again
// for a while; a database left behind is logged, not a test's failure.
func drop(t testing.TB, admin, name string) {
	t.Helper()
	sql := "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"
	var err error
	for range 50 {
		if err = tryExec(admin, sql); err == nil {
			return
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("test database %s left behind: %v", name, err)
}

func tryExec(connString, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func exec(t testing.TB, connString, sql string) {
	t.Helper()
	if err := tryExec(connString, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
