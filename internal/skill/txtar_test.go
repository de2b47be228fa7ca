package skill

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// archive is a txtar-style fixture: a comment, then files, each starting
// with a line "-- name --".
type archive struct {
	comment string
	files   []archiveFile
}

type archiveFile struct {
	name string
	data string
}

func parseArchive(data string) archive {
	var a archive
	cur := -1
	for _, line := range strings.SplitAfter(data, "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			a.files = append(a.files, archiveFile{name: strings.TrimSpace(trimmed[3 : len(trimmed)-3])})
			cur = len(a.files) - 1
			continue
		}
		if cur < 0 {
			a.comment += line
		} else {
			a.files[cur].data += line
		}
	}
	return a
}

func readArchive(t testing.TB, path string) archive {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseArchive(string(raw))
}

func (a archive) get(name string) string {
	for _, f := range a.files {
		if f.name == name {
			return f.data
		}
	}
	return ""
}

// set moves file name to the end of the archive, with data.
func (a *archive) set(name, data string) {
	a.files = slices.DeleteFunc(a.files, func(f archiveFile) bool { return f.name == name })
	a.files = append(a.files, archiveFile{name: name, data: data})
}

func (a archive) format() []byte {
	var b bytes.Buffer
	b.WriteString(a.comment)
	for _, f := range a.files {
		b.WriteString("-- " + f.name + " --\n")
		b.WriteString(f.data)
		if f.data != "" && !strings.HasSuffix(f.data, "\n") {
			b.WriteString("\n")
		}
	}
	return b.Bytes()
}

// directives returns the values of the comment's lines "key: value".
func (a archive) directives(key string) []string {
	var out []string
	for _, line := range strings.Split(a.comment, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

// extract writes the archive's files, except those whose names start with
// "want", under root, and makes the symbolic links its comment lists as
// "link: path -> target".
func (a archive) extract(t testing.TB, root string) {
	t.Helper()
	for _, f := range a.files {
		if strings.HasPrefix(f.name, "want") {
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range a.directives("link") {
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
