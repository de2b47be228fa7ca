package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Open with Existing refuses a directory without agentd data, missing or
// empty, and makes nothing there; a directory with data opens.
func TestOpenExisting(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	empty := t.TempDir()
	for _, dir := range []string{missing, empty} {
		_, err := Open(context.Background(), dir, &Options{Existing: true})
		if !errors.Is(err, ErrNoData) {
			t.Errorf("Open(%s, Existing): %v, want ErrNoData", dir, err)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("Open made %s", missing)
	}
	if list, _ := os.ReadDir(empty); len(list) != 0 {
		t.Errorf("Open wrote %d files in an empty directory", len(list))
	}
	withConfig := t.TempDir()
	os.WriteFile(filepath.Join(withConfig, "agentd.yaml"), []byte("{}\n"), 0o600)
	a, err := Open(context.Background(), withConfig, &Options{Existing: true})
	if err != nil {
		t.Fatal(err)
	}
	a.Close(context.Background())
}
