package connector

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A connector's resume point survives its instance (a restart reads what
// the last run wrote), in a file only agentd's user can read; with no
// StateDir nothing is kept.
func TestResumePointFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	in := &instance{m: &Manager{o: Options{StateDir: dir}}, name: "dc"}
	if b, err := in.ResumePoint(ctx); err != nil || b != nil {
		t.Fatalf("before any save: %q, %v", b, err)
	}
	for _, p := range []string{`{"seq":1}`, `{"seq":2}`} {
		if err := in.SaveResumePoint(ctx, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	again := &instance{m: &Manager{o: Options{StateDir: dir}}, name: "dc"}
	if b, err := again.ResumePoint(ctx); err != nil || string(b) != `{"seq":2}` {
		t.Errorf("after a restart: %q, %v", b, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "connectors", "dc.resume"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	none := &instance{m: &Manager{}, name: "dc"}
	if err := none.SaveResumePoint(ctx, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if b, _ := none.ResumePoint(ctx); b != nil {
		t.Errorf("no StateDir kept %q", b)
	}
}
