package skill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/txtar"
)

// The skill fixtures are text archives: skill folders as files, and lines
// "key: value" in the comment that say how to load them.

func readArchive(t testing.TB, path string) *txtar.Archive {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// section returns the data of the archive's file name, or "".
func section(a *txtar.Archive, name string) string {
	data, _ := a.Get(name)
	return data
}

// directives returns the values of the comment's lines "key: value".
func directives(a *txtar.Archive, key string) []string {
	var out []string
	for _, line := range strings.Split(a.Comment, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// extract writes the archive's files, except those whose names start with
// "want", under root, and makes the symbolic links its comment lists as
// "link: path -> target".
func extract(t testing.TB, a *txtar.Archive, root string) {
	t.Helper()
	for _, f := range a.Files {
		if strings.HasPrefix(f.Name, "want") {
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.Data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range directives(a, "link") {
		from, to, ok := strings.Cut(l, " -> ")
		if !ok {
			t.Fatalf("bad link directive %q", l)
		}
		p := filepath.Join(root, filepath.FromSlash(from))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.FromSlash(to), p); err != nil {
			t.Fatal(err)
		}
	}
}
