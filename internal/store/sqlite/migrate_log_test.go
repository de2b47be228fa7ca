package sqlite

import (
	"bytes"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Opening a new database logs nothing at info (the steps are debug lines);
// upgrading an existing one logs one line at info, from which version to
// which.
func TestMigrateLogsOneLine(t *testing.T) {
	ctx := t.Context()
	var buf bytes.Buffer
	info := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := Open(ctx, filepath.Join(t.TempDir(), "new.db"), &Options{Logger: info})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if strings.Contains(buf.String(), "migrat") {
		t.Errorf("a new database logged its migrations at info:\n%s", buf.String())
	}

	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, conn, migrations()[:2], slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	db.Close()
	buf.Reset()
	if s, err = Open(ctx, path, &Options{Logger: info}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n := strings.Count(buf.String(), "store migrated"); n != 1 || !strings.Contains(buf.String(), "from=2") {
		t.Errorf("an upgrade logged %d lines, want one from version 2:\n%s", n, buf.String())
	}
}

// The schema version of a database file is read without writing a byte,
// while the store has it open and after.
func TestFileSchemaVersion(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "agentd.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := FileSchemaVersion(ctx, path); err != nil || v != SchemaVersion() {
		t.Errorf("while open: %d, %v; want %d", v, err, SchemaVersion())
	}
	s.Close()
	before, _ := os.ReadDir(dir)
	if v, err := FileSchemaVersion(ctx, path); err != nil || v != SchemaVersion() {
		t.Errorf("after: %d, %v; want %d", v, err, SchemaVersion())
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("reading the version made files: %d before, %d after", len(before), len(after))
	}
	if _, err := FileSchemaVersion(ctx, filepath.Join(dir, "none.db")); err == nil {
		t.Error("a missing database has a version")
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); err == nil {
		t.Error("asking a missing database made it")
	}
}
