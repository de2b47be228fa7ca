package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the file is replaced whole with its mode, and no temporary
// file is left beside it.
func TestWrite(t *testing.T) {
	name := filepath.Join(t.TempDir(), "point")
	for _, data := range []string{"one", "two, longer"} {
		if err := Write(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if es, _ := os.ReadDir(filepath.Dir(name)); len(es) != 1 {
		t.Errorf("%d files in the directory, want 1", len(es))
	}
	if err := Write(filepath.Join(name, "under-a-file"), nil, 0o600); err == nil {
		t.Error("a write under a file succeeded")
	}
}
