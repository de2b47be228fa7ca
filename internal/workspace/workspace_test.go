package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const canary = "canary: the content of a file outside the workspace"

// fixture makes base/outside/secret (the canary) and base/ws, the
// workspace, opened.
func fixture(t testing.TB) (w *Workspace, base string) {
	t.Helper()
	base = t.TempDir()
	if err := os.MkdirAll(filepath.Join(base, "outside"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "outside", "secret"), []byte(canary), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(filepath.Join(base, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, base
}

func mustCanary(t testing.TB, base string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(base, "outside", "secret"))
	if err != nil || string(got) != canary {
		t.Fatalf("the canary outside changed: %q, %v", got, err)
	}
	ents, _ := os.ReadDir(filepath.Join(base, "outside"))
	if len(ents) != 1 {
		t.Fatalf("a file appeared outside: %v", ents)
	}
	top, _ := os.ReadDir(base)
	if len(top) != 2 {
		t.Fatalf("a file appeared beside the workspace: %v", top)
	}
}

// TestEscapes: every way out of the workspace is refused, for reading,
// writing, removing and as a command's directory, and the file outside
// keeps its content.
func TestEscapes(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, ws, base string)
		path  string
		want  error
	}{
		{name: "absolute", path: "/etc/passwd", want: ErrOutside},
		{name: "absolute to the canary", path: "BASE/outside/secret", want: ErrOutside},
		{name: "dot dot", path: "../outside/secret", want: ErrOutside},
		{name: "dot dot inside then out", path: "a/../../outside/secret", want: ErrOutside},
		{name: "NUL", path: "a\x00b", want: ErrOutside},
		{name: "symlink to slash", path: "root/etc/passwd", want: ErrOutside, setup: func(t *testing.T, ws, base string) {
			symlink(t, "/", filepath.Join(ws, "root"))
		}},
		{name: "symlink to dot dot", path: "up/outside/secret", want: ErrOutside, setup: func(t *testing.T, ws, base string) {
			symlink(t, "..", filepath.Join(ws, "up"))
		}},
		{name: "symlink to the file", path: "link", want: ErrOutside, setup: func(t *testing.T, ws, base string) {
			symlink(t, filepath.Join(base, "outside", "secret"), filepath.Join(ws, "link"))
		}},
		{name: "chained symlinks", path: "a/secret", want: ErrOutside, setup: func(t *testing.T, ws, base string) {
			symlink(t, "b", filepath.Join(ws, "a"))
			mkdir(t, filepath.Join(ws, "c"))
			symlink(t, "../../outside", filepath.Join(ws, "c", "d"))
			symlink(t, "c/d", filepath.Join(ws, "b"))
		}},
		{name: "file swapped for a symlink", path: "f", want: ErrOutside, setup: func(t *testing.T, ws, base string) {
			write(t, filepath.Join(ws, "f"), "mine")
			os.Remove(filepath.Join(ws, "f"))
			symlink(t, filepath.Join(base, "outside", "secret"), filepath.Join(ws, "f"))
		}},
		{name: "dir replaced by a symlink", path: "d/secret", want: ErrOutside, setup: func(t *testing.T, ws, base string) {
			mkdir(t, filepath.Join(ws, "d"))
			os.Remove(filepath.Join(ws, "d"))
			symlink(t, filepath.Join(base, "outside"), filepath.Join(ws, "d"))
		}},
		{name: "hard link to a file outside", path: "hard", want: ErrHardLink, setup: func(t *testing.T, ws, base string) {
			if err := os.Link(filepath.Join(base, "outside", "secret"), filepath.Join(ws, "hard")); err != nil {
				t.Skip("no hard links here:", err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, base := fixture(t)
			if tc.setup != nil {
				tc.setup(t, w.Dir(), base)
			}
			p := strings.ReplaceAll(tc.path, "BASE", base)
			if got, err := w.ReadFile(p, 0); !errors.Is(err, tc.want) {
				t.Errorf("ReadFile(%q) = %q, %v; want %v", p, got, err, tc.want)
			}
			if err := w.WriteFile(p, []byte("pwned")); !errors.Is(err, tc.want) {
				t.Errorf("WriteFile(%q) = %v; want %v", p, err, tc.want)
			}
			if err := w.Remove(p); err == nil && tc.want != ErrOutside {
				t.Errorf("Remove(%q) = nil", p)
			}
			if dir, err := w.HostDir(filepath.Dir(p)); err == nil && !strings.HasPrefix(dir, w.Dir()) {
				t.Errorf("HostDir(%q) = %q, outside", filepath.Dir(p), dir)
			}
			mustCanary(t, base)
		})
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFile: parents are made, a new file is 0600, an existing one
// keeps its mode, no temporary file is left, and a symlink inside is
// followed for reading.
func TestWriteFile(t *testing.T) {
	w, _ := fixture(t)
	if err := w.WriteFile("a/b/new.txt", []byte("one")); err != nil {
		t.Fatal(err)
	}
	fi, err := w.Stat("a/b/new.txt")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new file: %v, %v", fi, err)
	}
	write(t, filepath.Join(w.Dir(), "exec.sh"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(w.Dir(), "exec.sh"), 0o755)
	if err := w.WriteFile("exec.sh", []byte("#!/bin/sh\necho\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := w.Stat("exec.sh"); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode not kept: %v", fi.Mode())
	}
	symlink(t, "a/b/new.txt", filepath.Join(w.Dir(), "inside"))
	if got, err := w.ReadFile("inside", 0); err != nil || string(got) != "one" {
		t.Errorf("symlink inside: %q, %v", got, err)
	}
	ents, _ := os.ReadDir(filepath.Join(w.Dir(), "a", "b"))
	if len(ents) != 1 {
		t.Errorf("left beside: %v", ents)
	}
	if err := w.WriteFile("a", []byte("x")); err == nil {
		t.Error("a directory was overwritten")
	}
	if _, err := w.ReadFile("a/b/new.txt", 2); !errors.Is(err, ErrTooLarge) {
		t.Errorf("cap: %v", err)
	}
}

func TestHostDir(t *testing.T) {
	w, base := fixture(t)
	mkdir(t, filepath.Join(w.Dir(), "src", "pkg"))
	write(t, filepath.Join(w.Dir(), "file"), "x")
	symlink(t, filepath.Join(base, "outside"), filepath.Join(w.Dir(), "out"))
	for _, tc := range []struct {
		rel  string
		want string
		err  error
	}{
		{rel: "", want: w.Dir()},
		{rel: "src/pkg", want: filepath.Join(w.Dir(), "src", "pkg")},
		{rel: "./src/../src", want: filepath.Join(w.Dir(), "src")},
		{rel: "file", err: ErrNotDir},
		{rel: "out", err: ErrOutside},
		{rel: "..", err: ErrOutside},
		{rel: "missing", err: fs.ErrNotExist},
	} {
		got, err := w.HostDir(tc.rel)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("HostDir(%q) = %q, %v; want %q, %v", tc.rel, got, err, tc.want, tc.err)
		}
	}
}

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		data string
		bin  bool
	}{
		{data: "hello\n"},
		{data: "héllo"[:2]}, // a rune cut at the end of a head read
		{data: "a\x00b", bin: true},
		{data: "\xff\xfe bad", bin: true},
		{data: "\x89PNG\r\n\x1a\n", bin: true},
	} {
		err := CheckText([]byte(tc.data))
		if (err != nil) != tc.bin || (err != nil && !errors.Is(err, ErrBinary)) {
			t.Errorf("CheckText(%q) = %v", tc.data, err)
		}
	}
}

func TestSet(t *testing.T) {
	base := t.TempDir()
	s := NewSet(func(id string) (string, error) { return filepath.Join(base, id), nil })
	a, err := s.For("a")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := s.For("a"); again != a {
		t.Error("opened twice")
	}
	if fi, err := os.Stat(filepath.Join(base, "a")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir: %v, %v", fi, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.For("a"); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// TestOpenDir: the handle OpenDir gives is the directory the workspace
// opened, even once its path names another.
func TestOpenDir(t *testing.T) {
	w, base := fixture(t)
	if err := os.WriteFile(filepath.Join(w.Dir(), "mine"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w.Dir(), filepath.Join(base, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "outside"), w.Dir()); err != nil {
		t.Fatal(err)
	}
	f, err := w.OpenDir()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil || strings.Join(names, ",") != "mine" {
		t.Errorf("OpenDir after the path was swapped lists %q, %v; want the workspace's own [mine]", names, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() {
		t.Fatalf("Stat = %v, %v; want a directory", fi, err)
	}
	moved, _ := os.Stat(filepath.Join(base, "moved"))
	if !os.SameFile(fi, moved) {
		t.Errorf("OpenDir is not the directory the workspace opened")
	}
}
