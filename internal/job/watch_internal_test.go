package job

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestWatchDirsBounded: a watch watches at most its bound of
// directories; past it the rest are not watched, and it says so once.
func TestWatchDirsBounded(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c/d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r := New(nil, nil, nil, nil)
	defer r.Close()
	w, err := newWatches(r, slog.New(slog.DiscardHandler), 3).newWatcher("w", &Watch{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer w.fsw.Close()
	if n := len(w.fsw.WatchList()); n != 3 || !w.full {
		t.Fatalf("%d directories watched (full %v), want 3 of 5", n, w.full)
	}
}
