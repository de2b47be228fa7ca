package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://agentd:s3cret@db:5432/agentd?sslmode=require": "postgres://agentd:xxxxx@db:5432/agentd?sslmode=require",
		"postgresql://agentd@db/agentd":                           "postgresql://agentd@db/agentd",
		"postgres://db/agentd?password=s3cret&sslmode=disable":    "postgres://db/agentd?password=xxxxx&sslmode=disable",
		"host=db user=agentd password=s3cret dbname=agentd":       "host=db user=agentd password=xxxxx dbname=agentd",
		"host=db user=agentd":                                     "host=db user=agentd",
		"postgres://a:b@c:d@e/%zz":                                "postgres://(a connection string that does not parse)",
	} {
		if got := postgres.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(postgres.Redact(in), "s3cret") {
			t.Errorf("Redact(%q) shows the password", in)
		}
	}
}

// A connection that fails says why without the password it was given.
func TestOpenErrorHidesPassword(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "wr0ng-s3cret")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, cs := range []string{u.String(), "postgres://agentd:wr0ng-s3cret@127.0.0.1:1/agentd?connect_timeout=2", "postgres://agentd:wr0ng-s3cret@[bad"} {
		s, err := postgres.Open(ctx, cs, nil)
		if err == nil {
			s.Close()
			t.Fatalf("Open with a wrong password succeeded")
		}
		if strings.Contains(err.Error(), "wr0ng-s3cret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// One node uses a database at a time: a second store on it is refused
// until the first closes (or its process dies, taking its connection).
func TestOneNodePerDatabase(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := t.Context()
	a, err := postgres.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := postgres.Open(ctx, db, nil); !errors.Is(err, postgres.ErrInUse) {
		if b != nil {
			b.Close()
		}
		t.Fatalf("a second store on the database: %v, want ErrInUse", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := postgres.Open(ctx, db, nil)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	b.Close()
}
