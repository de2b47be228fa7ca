package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfinement: whatever symlink an attacker plants in the workspace
// (by a command, say) and whatever path a model names, nothing outside is
// read or written: the canary keeps its content, is never returned, and no
// file appears beside the workspace.
func FuzzConfinement(f *testing.F) {
	for _, s := range [][2]string{
		{"a", "../outside/secret"},
		{"a/secret", "../outside"},
		{"x", "/"},
		{"a/b/../../../outside/secret", "a"},
		{"a/etc/passwd", "/"},
		{"a/new", "../outside"},
		{"a", "a"},
		{"./a/./b", "b/../.."},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, rel, target string) {
		w, base := fixture(t)
		target = strings.ReplaceAll(target, "BASE", base)
		if target != "" && !strings.ContainsRune(target, 0) {
			os.MkdirAll(filepath.Join(w.Dir(), "b"), 0o700)
			_ = os.Symlink(target, filepath.Join(w.Dir(), "a"))
			_ = os.Symlink(target, filepath.Join(w.Dir(), "b", "c"))
		}
		if got, err := w.ReadFile(rel, 1<<20); err == nil && strings.Contains(string(got), "canary") {
			t.Fatalf("ReadFile(%q) read the canary through %q", rel, target)
		}
		if f, _, err := w.Open(rel); err == nil {
			f.Close()
		}
		_ = w.WriteFile(rel, []byte("pwned"))
		_ = w.Remove(rel)
		if dir, err := w.HostDir(rel); err == nil && dir != w.Dir() && !strings.HasPrefix(dir, w.Dir()+"/") {
			t.Fatalf("HostDir(%q) = %q", rel, dir)
		}
		mustCanary(t, base)
	})
}
