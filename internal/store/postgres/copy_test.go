package postgres_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/store/sqlite"
)

// TestCopyClaims: work claimed on SQLite stays claimed after the store
// is copied to PostgreSQL.
func TestCopyClaims(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentd.db")
	lite, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took, err := lite.Claim(ctx, "cron:digest:1", "old"); err != nil || !took {
		t.Fatalf("Claim on SQLite = %v, %v", took, err)
	}
	lite.Close()
	src, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	pg, err := postgres.Open(ctx, pgtest.NewDB(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	rep, err := pg.CopyFromSQLite(ctx, src, nil)
	if err != nil {
		t.Fatalf("CopyFromSQLite: %v (%+v)", err, rep)
	}
	if took, err := pg.Claim(ctx, "cron:digest:1", "new"); err != nil || took {
		t.Errorf("Claim after the copy = %v, %v; want false: claimed on SQLite", took, err)
	}
}
