package postgres_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/store"
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

// TestCopyExtensions: extension rows and their histories come along, as
// they are in SQLite; a copy run again after rows were changed, deleted
// and made again there brings PostgreSQL to the same, and PostgreSQL
// numbers a row's next version on from the copied history.
func TestCopyExtensions(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentd.db")
	lite, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	put := func(name, url string, ifVersion int64) {
		t.Helper()
		e := store.Extension{Type: "action", Name: name, Spec: []byte(`{"url":"` + url + `"}`), Enabled: true,
			Provenance: store.ProvenanceAgent + "a1", SeedHash: "h-" + url}
		if _, err := lite.PutExtension(ctx, e, store.ExtPut, ifVersion); err != nil {
			t.Fatalf("PutExtension(%s): %v", name, err)
		}
	}
	del := func(name string) {
		t.Helper()
		if err := lite.DeleteExtension(ctx, "action", name, "user:cli", store.AnyVersion); err != nil {
			t.Fatalf("DeleteExtension(%s): %v", name, err)
		}
	}
	put("a", "a1", store.NoVersion)
	put("a", "a2", 1)
	put("b", "b1", store.NoVersion)
	put("c", "c1", store.NoVersion)
	del("c")
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
	same := func(what string) {
		t.Helper()
		rep, err := pg.CopyFromSQLite(ctx, src, nil)
		if err != nil || !rep.OK() {
			t.Fatalf("%s: CopyFromSQLite: %v (%+v)", what, err, rep)
		}
		want, err := lite.Extensions(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.Extensions(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: the rows (-sqlite +postgres):\n%s", what, d)
		}
		for _, name := range []string{"a", "b", "c"} {
			want, err := lite.ExtensionHistory(ctx, "action", name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pg.ExtensionHistory(ctx, "action", name)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s: the history of %s (-sqlite +postgres):\n%s", what, name, d)
			}
		}
	}
	same("the first copy")
	put("a", "a3", 2)
	del("b")
	put("c", "c2", store.NoVersion)
	same("the copy after changes")
	e, err := pg.PutExtension(ctx, store.Extension{Type: "action", Name: "c", Spec: []byte(`{}`), Provenance: store.ProvenanceUser}, store.ExtPut, 3)
	if err != nil || e.Version != 4 {
		t.Errorf("PutExtension on the copy = version %d, %v; want 4", e.Version, err)
	}
}
