package app

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// privateDataDir removes group and other access from the directory and
// everything in it, says so once, and never follows a symbolic link out of
// the directory.
func TestPrivateDataDir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	outside := filepath.Join(root, "outside.txt")
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{"agents/a.yaml", 0o644}, {"agentd.db", 0o640}, {"skills/s/run.sh", 0o755}, {"keys/a.json", 0o600}} {
		p := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, f.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, f.mode)
	}
	if err := os.WriteFile(outside, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(outside, 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)

	var log bytes.Buffer
	if err := privateDataDir(dir, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{".": 0o700, "agents": 0o700, "agents/a.yaml": 0o600, "agentd.db": 0o600,
		"skills/s": 0o700, "skills/s/run.sh": 0o700, "keys": 0o700, "keys/a.json": 0o600}
	for name, mode := range want {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, %v; want %v", name, fi.Mode().Perm(), err, mode)
		}
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o644 {
		t.Errorf("the file a link points to was changed: %v", fi.Mode().Perm())
	}
	if n := strings.Count(log.String(), "\n"); n != 1 || !strings.Contains(log.String(), "was mode 0755, readable by other users: made it 0700, and 7 entries") {
		t.Errorf("log (%d lines): %s", n, log.String())
	}

	// Nothing to do: nothing said.
	log.Reset()
	if err := privateDataDir(dir, slog.New(slog.NewTextHandler(&log, nil))); err != nil || log.Len() != 0 {
		t.Errorf("second call: %v, %q", err, log.String())
	}
}
