package skill

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden sections of the testdata fixtures")

// fixtureOptions returns Options whose LookPath finds only the binaries the
// archive's "bins:" lines name and whose Getenv sees only its "env:" lines
// (NAME=value).
func fixtureOptions(a *txtar.Archive) *Options {
	bins := map[string]bool{}
	for _, l := range directives(a, "bins") {
		for _, b := range strings.Fields(l) {
			bins[b] = true
		}
	}
	env := map[string]string{}
	for _, l := range directives(a, "env") {
		for _, kv := range strings.Fields(l) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	return &Options{
		LookPath: func(name string) (string, error) {
			if bins[name] {
				return "/usr/bin/" + name, nil
			}
			return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
		},
		Getenv: func(name string) string { return env[name] },
	}
}

// loadFixture extracts the archive at path into a temporary folder and
// loads the skills of its "dirs:" (default: skills).
func loadFixture(t testing.TB, path string) (*txtar.Archive, string, *Set) {
	t.Helper()
	a := readArchive(t, path)
	root := t.TempDir()
	extract(t, a, root)
	dirs := []string{"skills"}
	if d := directives(a, "dirs"); len(d) > 0 {
		dirs = strings.Fields(d[0])
	}
	for i := range dirs {
		dirs[i] = filepath.Join(root, dirs[i])
	}
	set, err := Load(dirs, fixtureOptions(a))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return a, root, set
}

// relative replaces the fixture's root folder in s.
func relative(root, s string) string {
	s = strings.ReplaceAll(s, root+string(filepath.Separator), "")
	return strings.ReplaceAll(s, root, "$ROOT")
}

// dump writes out what List returns, paths relative to root.
func dump(t testing.TB, set *Set, root string) string {
	t.Helper()
	var b strings.Builder
	js := func(v any) string {
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	for _, sk := range set.List() {
		fmt.Fprintf(&b, "%s (%s)\n", sk.Name, sk.Dir)
		if sk.Description != "" {
			fmt.Fprintf(&b, "  description: %q\n", sk.Description)
		}
		if len(sk.Requires.Bins)+len(sk.Requires.Env) > 0 {
			fmt.Fprintf(&b, "  requires: bins %q env %q\n", sk.Requires.Bins, sk.Requires.Env)
		}
		fmt.Fprintf(&b, "  available: %v\n", sk.Available)
		for _, m := range sk.Missing {
			fmt.Fprintf(&b, "  missing: %s\n", m)
		}
		if sk.MCPServers != nil {
			fmt.Fprintf(&b, "  mcp_servers: %s\n", js(sk.MCPServers))
		}
		if sk.Metadata != nil {
			fmt.Fprintf(&b, "  metadata: %s\n", js(sk.Metadata))
		}
		if sk.Extra != nil {
			fmt.Fprintf(&b, "  extra: %s\n", js(sk.Extra))
		}
		for _, o := range sk.Overrides {
			fmt.Fprintf(&b, "  overrides: %s\n", o)
		}
		if sk.Err != nil {
			for _, line := range strings.Split(sk.Err.Error(), "\n") {
				fmt.Fprintf(&b, "  error: %s\n", line)
			}
		}
	}
	return relative(root, b.String())
}

// Each testdata/load/*.txtar fixture is a set of skill directories; its
// "want" section is the golden listing of what Load found.
func TestLoadFixtures(t *testing.T) {
	paths, err := filepath.Glob("testdata/load/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no fixtures")
	}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".txtar"), func(t *testing.T) {
			a, root, set := loadFixture(t, p)
			got := dump(t, set, root)
			if *update {
				a.Set("want", got)
				if err := os.WriteFile(p, a.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(section(a, "want"), got); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadInvalidErrors(t *testing.T) {
	_, _, set := loadFixture(t, "testdata/load/invalid.txtar")
	var n int
	for _, sk := range set.List() {
		if sk.Err == nil {
			continue
		}
		n++
		if sk.Available {
			t.Errorf("%s: invalid but available", sk.Name)
		}
		if !errors.Is(sk.Err, ErrInvalid) {
			t.Errorf("%s: error does not match ErrInvalid: %v", sk.Name, sk.Err)
		}
		var pe *ParseError
		if !errors.As(sk.Err, &pe) {
			t.Fatalf("%s: error is not a *ParseError: %v", sk.Name, sk.Err)
		}
		if want := filepath.Join(sk.Dir, FileName); pe.File != want || pe.Line < 1 {
			t.Errorf("%s: error names %s:%d, want %s and a line", sk.Name, pe.File, pe.Line, want)
		}
		if _, err := set.Body(sk.Name); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Body error = %v, want ErrInvalid", sk.Name, err)
		}
	}
	if n < 10 {
		t.Errorf("only %d invalid skills in the fixture", n)
	}
}

func TestLoadMissingAndBadDirs(t *testing.T) {
	root := t.TempDir()
	set, err := Load([]string{filepath.Join(root, "nope"), ""}, nil)
	if err != nil {
		t.Fatalf("missing dir: %v", err)
	}
	if got := set.List(); len(got) != 0 {
		t.Errorf("List = %v, want none", got)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load([]string{file}, nil); err == nil {
		t.Error("Load of a file: no error")
	}
}

func TestLoadUnreadableSkill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "skills")
	if err := os.MkdirAll(filepath.Join(dir, "big"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := "---\nname: big\ndescription: x\n---\n" + strings.Repeat("x", maxSkillFile)
	if err := os.WriteFile(filepath.Join(dir, "big", FileName), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "folder", FileName), 0o755); err != nil {
		t.Fatal(err)
	}
	set, err := Load([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"big", "folder"} {
		sk, ok := set.Get(name)
		if !ok {
			t.Fatalf("%s not listed", name)
		}
		if !errors.Is(sk.Err, ErrInvalid) || !strings.HasPrefix(sk.Err.Error(), filepath.Join(dir, name, FileName)+": ") {
			t.Errorf("%s: Err = %v, want an ErrInvalid naming the file", name, sk.Err)
		}
	}
}

func TestAllowed(t *testing.T) {
	_, _, set := loadFixture(t, "testdata/load/requires.txtar")
	names := func(skills []Skill) []string {
		var out []string
		for _, sk := range skills {
			out = append(out, sk.Name)
		}
		return out
	}
	if got := names(set.List()); !slices.Contains(got, "video") || !slices.Contains(got, "broken") {
		t.Fatalf("fixture lacks the unavailable and invalid skills: %v", got)
	}
	tests := []struct {
		name     string
		patterns []string
		want     []string
	}{
		{"nil allows all available", nil, []string{"gh", "git-tools", "notes"}},
		{"empty allows none", []string{}, nil},
		{"star", []string{"*"}, []string{"gh", "git-tools", "notes"}},
		{"prefix glob", []string{"g*"}, []string{"gh", "git-tools"}},
		{"exact", []string{"notes"}, []string{"notes"}},
		{"question mark", []string{"g?"}, []string{"gh"}},
		{"class", []string{"[gn]*-*"}, []string{"git-tools"}},
		{"unavailable never", []string{"video", "broken"}, nil},
		{"several", []string{"notes", "gh"}, []string{"gh", "notes"}},
		{"malformed matches nothing", []string{"[", "no*"}, []string{"notes"}},
		{"no match", []string{"zzz"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, names(set.Allowed(tt.patterns))); diff != "" {
				t.Errorf("Allowed(%q) (-want +got):\n%s", tt.patterns, diff)
			}
		})
	}
}

func TestNilSet(t *testing.T) {
	var s *Set
	if s.List() != nil || s.Allowed(nil) != nil || s.Prompt(nil) != "" {
		t.Error("nil Set is not empty")
	}
	if _, ok := s.Get("x"); ok {
		t.Error("nil Set has a skill")
	}
	if _, err := s.Body("x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Body: %v, want ErrNotFound", err)
	}
	if _, err := s.ReadFile("x", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadFile: %v, want ErrNotFound", err)
	}
}

// testdata/prompt.txtar holds skills and, in its want/<case> sections,
// the golden Prompt for each case's patterns.
func TestPrompt(t *testing.T) {
	const path = "testdata/prompt.txtar"
	a, _, set := loadFixture(t, path)
	cases := []struct {
		name     string
		patterns []string
	}{
		{"all", nil},
		{"pdf", []string{"pdf-*"}},
		{"none", []string{}},
		{"unavailable", []string{"video"}},
	}
	for _, c := range cases {
		got := set.Prompt(c.patterns)
		name := "want/" + c.name
		if *update {
			a.Set(name, got)
			continue
		}
		if diff := cmp.Diff(section(a, name), got); diff != "" {
			t.Errorf("Prompt(%q) (-want +got):\n%s", c.patterns, diff)
		}
	}
	if *update {
		if err := os.WriteFile(path, a.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := set.Prompt([]string{}); got != "" {
		t.Errorf("Prompt with no skills = %q, want \"\"", got)
	}
}

func BenchmarkPrompt(b *testing.B) {
	_, _, set := loadFixture(b, "testdata/prompt.txtar")
	b.ReportAllocs()
	for b.Loop() {
		_ = set.Prompt([]string{"pdf-*", "notes"})
	}
}
