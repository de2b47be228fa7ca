package sandbox_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/sandbox"
)

// TestWorkspaceFDSwapped: the workspace's path is swapped for a symlink to
// another host folder after agentd opened it; with Spec.WorkspaceFD the
// command gets the directory opened, at the workspace's path, and no
// descriptor of the host's tree is left to it.
func TestWorkspaceFDSwapped(t *testing.T) {
	needBwrap(t)
	base := t.TempDir()
	ws, other, moved := filepath.Join(base, "ws"), filepath.Join(base, "other"), filepath.Join(base, "moved")
	for d, content := range map[string]string{ws: "mine", other: "other"} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if err := os.Rename(ws, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, ws); err != nil {
		t.Fatal(err)
	}
	r := run(t, &sandbox.Spec{Workspace: ws, WorkspaceFD: dir,
		Argv: sh(`cat f; echo; pwd; echo new > g; for f in /proc/self/fd/*; do readlink "$f" || true; done`)})
	if r.exit.Code != 0 || !strings.HasPrefix(r.out, "mine\n"+ws+"\n") {
		t.Errorf("in bwrap with WorkspaceFD: %+v %q; want the opened directory's f at %s", r.exit, r.out, ws)
	}
	if _, err := os.Stat(filepath.Join(other, "g")); err == nil {
		t.Errorf("the command wrote in the folder the path was swapped for")
	}
	if b, err := os.ReadFile(filepath.Join(moved, "g")); err != nil || string(b) != "new\n" {
		t.Errorf("the opened directory's g = %q, %v; want the command's write", b, err)
	}
	if strings.Count(r.out, base) > 1 {
		t.Errorf("the command holds a descriptor of the host's tree: %q", r.out)
	}
	// The descriptor stays the caller's: it is open still.
	if _, err := dir.Stat(); err != nil {
		t.Errorf("WorkspaceFD after the run: %v", err)
	}
}
