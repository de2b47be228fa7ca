package agent

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestWorkspaceIn: a workspace that is the data directory, holds it, is
// workspace/ itself or lies in it outside workspace/ is refused, whatever
// symlinks lead there; the default, a folder under workspace/ (also when
// workspace/ is a symlink to another disk) and one outside are kept.
func TestWorkspaceIn(t *testing.T) {
	data, other := t.TempDir(), t.TempDir()
	if err := os.Symlink(data, filepath.Join(other, "to-data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(data, "keys"), filepath.Join(other, "to-keys")); err != nil {
		t.Fatal(err)
	}
	moved := t.TempDir() // a data directory whose workspace/ is on another disk
	if err := os.Symlink(other, filepath.Join(moved, WorkspaceDir)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		data, ws string
		refused  bool
	}{
		{data, "", false},
		{data, "workspace/team", false},
		{data, filepath.Join(other, "work"), false},
		{moved, "", false},
		{data, ".", true},
		{data, "/", true},
		{data, "..", true},
		{data, "keys/..", true},
		{data, "keys", true},
		{data, "workspace", true},
		{data, "workspace/..", true},
		{data, filepath.Join(other, "to-data"), true},
		{data, filepath.Join(other, "to-data", "agents"), true},
		{data, filepath.Join(other, "to-keys", "new"), true},
	} {
		d := &Definition{ID: "w", Workspace: tc.ws}
		dir, err := d.WorkspaceIn(tc.data)
		if refused := errors.Is(err, ErrUnsafeWorkspace); refused != tc.refused || (err != nil) != tc.refused {
			t.Errorf("workspace %q in %s: %q, %v; want refused %v", tc.ws, tc.data, dir, err, tc.refused)
		}
	}
}
