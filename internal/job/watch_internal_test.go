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

// TestWatchSkipsTheDataDirectory: a watch of a directory that holds the
// data directory watches its workspace, not the rest of it (agentd's own
// writes there would fire the watch).
func TestWatchSkipsTheDataDirectory(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"notes", "data/agents", "data/workspace/x"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r := New(nil, nil, nil, &Options{Dir: filepath.Join(root, "data")})
	defer r.Close()
	w, err := newWatches(r, slog.New(slog.DiscardHandler), 0).newWatcher("w", &Watch{Path: root})
	if err != nil {
		t.Fatal(err)
	}
	defer w.fsw.Close()
	got := map[string]bool{}
	for _, p := range w.fsw.WatchList() {
		rel, _ := filepath.Rel(root, p)
		got[filepath.ToSlash(rel)] = true
	}
	want := map[string]bool{".": true, "notes": true, "data/workspace": true, "data/workspace/x": true}
	if len(got) != len(want) {
		t.Fatalf("watched %v, want %v", got, want)
	}
	for p := range want {
		if !got[p] {
			t.Fatalf("watched %v, want %v", got, want)
		}
	}
}
