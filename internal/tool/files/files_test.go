package files

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"agentd/internal/tool"
	"agentd/internal/workspace"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// harness is the tools over one agent's workspace in a TempDir.
type harness struct {
	t     *testing.T
	dir   string
	tools map[string]tool.Tool
}

func newHarness(t *testing.T, o *Options) *harness {
	t.Helper()
	base := t.TempDir()
	set := workspace.NewSet(func(id string) (string, error) { return filepath.Join(base, id), nil })
	t.Cleanup(func() { set.Close() })
	h := &harness{t: t, dir: filepath.Join(base, "a"), tools: map[string]tool.Tool{}}
	for _, tl := range Tools(set, o) {
		h.tools[tl.Spec().Name] = tl
	}
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) write(rel, data string) {
	h.t.Helper()
	p := filepath.Join(h.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) read(rel string) string {
	h.t.Helper()
	data, err := os.ReadFile(filepath.Join(h.dir, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(data)
}

func (h *harness) call(name string, args any) (string, error) {
	h.t.Helper()
	raw, _ := json.Marshal(args)
	res, err := h.tools[name].Call(context.Background(), &tool.Call{Name: name, Agent: "a", Args: raw})
	return res.Output, err
}

func (h *harness) preview(name string, args any) (tool.Card, error) {
	h.t.Helper()
	raw, _ := json.Marshal(args)
	return h.tools[name].(tool.Previewer).Preview(context.Background(), &tool.Call{Name: name, Agent: "a", Args: raw})
}

type m = map[string]any

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", p, diff)
	}
}

// TestSpecs: the policy markings of DESIGN §0.2, valid schemas, and a
// preview on every tool that writes.
func TestSpecs(t *testing.T) {
	h := newHarness(t, nil)
	want := map[string]string{
		"read_file": "ReadOnly", "list_dir": "ReadOnly", "glob": "ReadOnly", "grep": "ReadOnly",
		"write_file": "AskFirst Idempotent", "edit_file": "AskFirst", "apply_patch": "AskFirst",
	}
	if len(h.tools) != len(want) {
		t.Fatalf("%d tools", len(h.tools))
	}
	for name, tl := range h.tools {
		s := tl.Spec()
		var marks []string
		for _, mk := range []struct {
			on   bool
			name string
		}{{s.ReadOnly, "ReadOnly"}, {s.AskFirst, "AskFirst"}, {s.Idempotent, "Idempotent"}, {s.Risky, "Risky"}, {s.Destructive, "Destructive"}} {
			if mk.on {
				marks = append(marks, mk.name)
			}
		}
		if got := strings.Join(marks, " "); got != want[name] {
			t.Errorf("%s: %s; want %s", name, got, want[name])
		}
		var sch map[string]any
		if err := json.Unmarshal(s.InputSchema, &sch); err != nil {
			t.Errorf("%s: schema: %v", name, err)
		}
		_, previews := tl.(tool.Previewer)
		if previews != s.AskFirst {
			t.Errorf("%s: previews %v", name, previews)
		}
	}
}

func TestReadFile(t *testing.T) {
	h := newHarness(t, &Options{MaxReadBytes: 40})
	h.write("src/x.txt", "one\ntwo\nthree\nfour\nfive")
	h.write("empty", "")
	h.write("bin", "PK\x03\x04\x00\x00zip")
	h.write("latin1", "caf\xe9\n")
	h.write("long", strings.Repeat("0123456789\n", 10))
	h.write("minified", "a"+strings.Repeat("é", 30)+"\nnext\n")
	for _, tc := range []struct {
		args m
		want string
		err  error
	}{
		{args: m{"path": "src/x.txt"}, want: "src/x.txt lines 1–5 of 5\none\ntwo\nthree\nfour\nfive"},
		{args: m{"path": "./src/x.txt", "offset": 2, "limit": 2}, want: "src/x.txt lines 2–3 of 5\ntwo\nthree\n[2 more lines: read on with offset 4]\n"},
		{args: m{"path": "src/x.txt", "offset": 5}, want: "src/x.txt lines 5–5 of 5\nfive"},
		{args: m{"path": "src/x.txt", "offset": 6}, err: ErrArgs},
		{args: m{"path": "empty"}, want: "empty is empty (0 lines)\n"},
		{args: m{"path": "long", "offset": 3}, want: "long lines 3–5 of 10\n0123456789\n0123456789\n0123456789\n\n[cut at the read limit: read on with offset 6]\n"},
		{args: m{"path": "minified"}, want: "minified line 1 of 2, its first 39 bytes (the line is longer than a read returns)\na" + strings.Repeat("é", 19) + "\n"},
		{args: m{"path": "minified", "offset": 2}, want: "minified lines 2–2 of 2\nnext\n"},
		{args: m{"path": "bin"}, err: workspace.ErrBinary},
		{args: m{"path": "latin1"}, err: workspace.ErrBinary},
		{args: m{"path": "../a/src/x.txt"}, err: workspace.ErrOutside},
		{args: m{"path": "/etc/passwd"}, err: workspace.ErrOutside},
		{args: m{"path": "src/x.txt", "lines": 3}, err: ErrArgs},
		{args: m{"path": "missing"}, err: os.ErrNotExist},
	} {
		got, err := h.call("read_file", tc.args)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("read_file %v:\n got %q, %v\nwant %q, %v", tc.args, got, err, tc.want, tc.err)
		}
	}
	_, err := h.call("read_file", m{"path": "bin"})
	if !strings.Contains(err.Error(), "application/zip") {
		t.Errorf("binary error does not name the type: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	h := newHarness(t, &Options{MaxFileBytes: 100})
	card, err := h.preview("write_file", m{"path": "a/b.txt", "content": "hi\n"})
	wantCard := tool.Card{Kind: tool.CardDiff, Title: "Create a/b.txt (+1 −0)", Paths: []string{"a/b.txt"},
		Diff: "--- /dev/null\n+++ b/a/b.txt\n@@ -0,0 +1 @@\n+hi\n"}
	if diff := cmp.Diff(wantCard, card); err != nil || diff != "" {
		t.Errorf("preview: %v (-want +got):\n%s", err, diff)
	}
	if h.read("a/b.txt") != "<"+"open "+filepath.Join(h.dir, "a/b.txt")+": no such file or directory>" {
		t.Errorf("the preview wrote: %s", h.read("a/b.txt"))
	}
	if out, err := h.call("write_file", m{"path": "a/b.txt", "content": "hi\n"}); err != nil || out != "created a/b.txt (3 bytes, 1 lines)" {
		t.Errorf("create: %q, %v", out, err)
	}
	if out, err := h.call("write_file", m{"path": "a/b.txt", "content": "hello\n"}); err != nil || out != "replaced a/b.txt (6 bytes, 1 lines)" {
		t.Errorf("replace: %q, %v", out, err)
	}
	if h.read("a/b.txt") != "hello\n" {
		t.Errorf("content: %q", h.read("a/b.txt"))
	}
	if _, err := h.call("write_file", m{"path": "big", "content": strings.Repeat("x", 101)}); !errors.Is(err, ErrArgs) {
		t.Errorf("cap: %v", err)
	}
	for _, p := range []string{"../x", "/tmp/x", "", "."} {
		if _, err := h.preview("write_file", m{"path": p, "content": "x"}); err == nil {
			t.Errorf("preview of %q: no error", p)
		}
	}
}

// TestCardCap: a diff past CardDiffBytes is cut at a line, the rest
// counted.
func TestCardCap(t *testing.T) {
	h := newHarness(t, nil)
	content := strings.Repeat("a line of the new file\n", 5000)
	card, err := h.preview("write_file", m{"path": "big.txt", "content": content})
	if err != nil {
		t.Fatal(err)
	}
	full := "--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,5000 @@\n" + strings.ReplaceAll(content, "a line", "+a line")
	if len(card.Diff) > CardDiffBytes || card.DiffOmitted == 0 || len(card.Diff)+card.DiffOmitted != len(full) || !strings.HasSuffix(card.Diff, "\n") {
		t.Errorf("diff %d bytes, %d omitted, of %d", len(card.Diff), card.DiffOmitted, len(full))
	}
}

func TestEditFile(t *testing.T) {
	h := newHarness(t, nil)
	src := "package x\n\nfunc a() error {\n\treturn nil\n}\n\nfunc b() error {\n\treturn nil\n}\n\nfunc handleRequest() {}\n"
	h.write("x.go", src)

	_, err := h.call("edit_file", m{"path": "x.go", "old": "\treturn nil\n", "new": "\treturn err\n"})
	if !errors.Is(err, ErrManyMatches) {
		t.Fatalf("many: %v", err)
	}
	golden(t, "edit-many", err.Error())

	_, err = h.call("edit_file", m{"path": "x.go", "old": "func handleRequests() {}", "new": "x"})
	if !errors.Is(err, ErrNoMatch) {
		t.Fatalf("none: %v", err)
	}
	golden(t, "edit-none", err.Error())

	_, err = h.call("edit_file", m{"path": "x.go", "old": "func b() error {\n    return nil\n}", "new": "x"})
	if !errors.Is(err, ErrNoMatch) {
		t.Fatalf("whitespace: %v", err)
	}
	golden(t, "edit-whitespace", err.Error())

	if _, err := h.preview("edit_file", m{"path": "x.go", "old": "nothing like it", "new": "x"}); !errors.Is(err, ErrNoMatch) {
		t.Errorf("preview of an edit that does not apply: %v", err)
	}
	card, err := h.preview("edit_file", m{"path": "x.go", "old": "func a() error {\n\treturn nil", "new": "func a() error {\n\treturn errA"})
	if err != nil || card.Title != "Edit x.go (+1 −1)" || !strings.Contains(card.Diff, "-\treturn nil\n+\treturn errA\n") || card.Exact != "" {
		t.Errorf("preview: %+v, %v", card, err)
	}
	if h.read("x.go") != src {
		t.Error("the preview wrote")
	}
	out, err := h.call("edit_file", m{"path": "x.go", "old": "func a() error {\n\treturn nil", "new": "func a() error {\n\treturn errA"})
	if err != nil || out != "edited x.go: replaced 1 occurrence at line 3" {
		t.Errorf("edit: %q, %v", out, err)
	}
	out, err = h.call("edit_file", m{"path": "x.go", "old": "error", "new": "bool", "replace_all": true})
	if err != nil || out != "edited x.go: replaced 2 occurrences at lines 3 and 7" {
		t.Errorf("replace_all: %q, %v", out, err)
	}
	if want := strings.NewReplacer("error", "bool", "func a() error {\n\treturn nil", "func a() bool {\n\treturn errA").Replace(src); h.read("x.go") != strings.Replace(want, "func a() bool {\n\treturn nil", "func a() bool {\n\treturn errA", 1) {
		t.Errorf("content:\n%s", h.read("x.go"))
	}
	for _, args := range []m{
		{"path": "x.go", "old": "", "new": "x"},
		{"path": "x.go", "old": "a", "new": "a"},
		{"path": "missing.go", "old": "a", "new": "b"},
	} {
		if _, err := h.call("edit_file", args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestApplyPatch(t *testing.T) {
	h := newHarness(t, nil)
	h.write("src/a.txt", "one\ntwo\nthree\n")
	h.write("old.txt", "bye\n")
	patch := "diff --git a/src/a.txt b/src/a.txt\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n" +
		"--- /dev/null\n+++ b/new/file.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n" +
		"--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
	card, err := h.preview("apply_patch", m{"patch": patch})
	if err != nil || card.Title != "Patch src/a.txt, new/file.txt, old.txt" || len(card.Paths) != 3 || !strings.Contains(card.Diff, "+++ /dev/null") {
		t.Errorf("preview: %+v, %v", card, err)
	}
	out, err := h.call("apply_patch", m{"patch": patch})
	if want := "patched 3 file(s):\nM src/a.txt (+1 −1)\nA new/file.txt (2 lines)\nD old.txt\n"; err != nil || out != want {
		t.Errorf("apply: %q, %v", out, err)
	}
	if h.read("src/a.txt") != "one\nTWO\nthree\n" || h.read("new/file.txt") != "hello\nworld\n" || !strings.HasPrefix(h.read("old.txt"), "<") {
		t.Errorf("files: %q %q %q", h.read("src/a.txt"), h.read("new/file.txt"), h.read("old.txt"))
	}

	// all or nothing: the second file's hunk does not apply, the first
	// file is left as it was
	bad := "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n--- a/new/file.txt\n+++ b/new/file.txt\n@@ -2 +2 @@\n-planet\n+earth\n"
	_, err = h.call("apply_patch", m{"patch": bad})
	if want := `hunk does not apply: @@ -2 +2 @@ of new/file.txt: its lines are not in the file (line 2 reads "world", the hunk expects "planet")`; err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("conflict: %v", err)
	}
	if h.read("src/a.txt") != "one\nTWO\nthree\n" {
		t.Errorf("a file was written before every hunk was checked: %q", h.read("src/a.txt"))
	}
	// diff -u x.orig x: the file that exists is patched
	if out, err := h.call("apply_patch", m{"patch": "--- src/a.txt.orig\t2026-11-26 10:00:00\n+++ src/a.txt\t2026-11-26 10:01:00\n@@ -3 +3 @@\n-three\n+3\n"}); err != nil || out != "patched 1 file(s):\nM src/a.txt (+1 −1)\n" {
		t.Errorf("diff -u names: %q, %v", out, err)
	}
	if _, err := h.call("apply_patch", m{"patch": "--- src/a.txt\n+++ src/a.txt.new\n@@ -3 +3 @@\n-3\n+three\n"}); err != nil || h.read("src/a.txt") != "one\nTWO\nthree\n" {
		t.Errorf("diff -u names, the old one existing: %v, %q", err, h.read("src/a.txt"))
	}
	for _, tc := range []struct{ patch, want string }{
		{"--- /dev/null\n+++ b/src/a.txt\n@@ -0,0 +1 @@\n+x\n", "exists"},
		{"--- a/nope\n+++ b/nope\n@@ -1 +1 @@\n-a\n+b\n", "no such file"},
		{"--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "outside"},
		{"diff --git a/src/a.txt b/src/b.txt\nsimilarity index 90%\nrename from src/a.txt\n", "renames"},
		{"--- ../outside.orig\n+++ src/a.txt\n@@ -1 +1 @@\n-one\n+b\n", "outside"},
		{"not a patch", "no file headers"},
	} {
		if _, err := h.call("apply_patch", m{"patch": tc.patch}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v; want %q", tc.patch, err, tc.want)
		}
	}
}

func TestListDir(t *testing.T) {
	h := newHarness(t, nil)
	h.write("b.txt", "12345")
	h.write("a/x", "")
	h.write("c/y", "")
	os.Symlink("b.txt", filepath.Join(h.dir, "link"))
	out, err := h.call("list_dir", m{})
	want := "the workspace: 2 folders, 2 other entries\ndir   a/\ndir   c/\nfile  b.txt  5 bytes\nlink  link -> b.txt\n"
	if err != nil || out != want {
		t.Errorf("list_dir:\n%s%v", out, err)
	}
	if out, err := h.call("list_dir", m{"path": "a"}); err != nil || out != "a/: 0 folders, 1 other entries\nfile  x  0 bytes\n" {
		t.Errorf("list_dir a: %q, %v", out, err)
	}
	for _, p := range []string{"..", "b.txt", "/"} {
		if _, err := h.call("list_dir", m{"path": p}); err == nil {
			t.Errorf("list_dir %q: no error", p)
		}
	}
}

func TestGlob(t *testing.T) {
	h := newHarness(t, &Options{MaxEntries: 4})
	for _, p := range []string{"main.go", "a/x.go", "a/b/y.go", "a/b/z.txt", ".git/HEAD.go", "c/d/e/f.go"} {
		h.write(p, "")
	}
	for _, tc := range []struct{ pattern, want string }{
		{"*.go", "main.go\n"},
		{"**/*.go", "a/b/y.go\na/x.go\nc/d/e/f.go\nmain.go\n"},
		{"a/**", "a/b/\na/b/y.go\na/b/z.txt\na/x.go\n"},
		{"a/*/*.txt", "a/b/z.txt\n"},
		{"**", "a/\na/b/\na/b/y.go\na/b/z.txt\n[6 more paths left out: narrow the pattern]\n"},
		{"nothing/*", "no paths match nothing/*"},
	} {
		if got, err := h.call("glob", m{"pattern": tc.pattern}); err != nil || got != tc.want {
			t.Errorf("glob %q:\n got %q, %v\nwant %q", tc.pattern, got, err, tc.want)
		}
	}
	for _, p := range []string{"../*", "/etc/*", "[a"} {
		if _, err := h.call("glob", m{"pattern": p}); err == nil {
			t.Errorf("glob %q: no error", p)
		}
	}
}

func TestGrep(t *testing.T) {
	h := newHarness(t, nil)
	h.write("a.go", "package a\n\nfunc Hello() {}\n\nfunc other() {}\n")
	h.write("sub/b.go", "package sub\n// hello there\n")
	h.write("sub/c.txt", "Hello text\n")
	h.write("bin.dat", "Hello\x00binary")
	h.write(".git/config", "Hello git\n")
	os.Link(filepath.Join(h.dir, "a.go"), filepath.Join(h.dir, "hard.go"))
	for _, tc := range []struct {
		args m
		want string
	}{
		{m{"pattern": "Hello"}, "sub/c.txt:1:Hello text\n[2 files skipped: larger than 16777216 bytes or with more than one link]\n"},
		{m{"pattern": "hello", "ignore_case": true, "glob": "*.go"}, "sub/b.go:2:// hello there\n[2 files skipped: larger than 16777216 bytes or with more than one link]\n"},
		{m{"pattern": "^func", "path": "sub"}, "no matches for ^func\n"},
		{m{"pattern": "hello", "path": "sub/b.go", "context": 1}, "sub/b.go-1-package sub\nsub/b.go:2:// hello there\n"},
		{m{"pattern": "package", "glob": "sub/**"}, "sub/b.go:1:package sub\n"},
		{m{"pattern": "e", "max_results": 2, "glob": "sub/*"}, "sub/b.go:1:package sub\nsub/b.go:2:// hello there\n[2 of 3 matching lines in 2 files; narrow it with path or glob, or raise max_results]\n"},
	} {
		if got, err := h.call("grep", tc.args); err != nil || got != tc.want {
			t.Errorf("grep %v:\n got %q, %v\nwant %q", tc.args, got, err, tc.want)
		}
	}
	os.Remove(filepath.Join(h.dir, "hard.go"))
	got, err := h.call("grep", m{"pattern": "func", "context": 1})
	if want := "a.go-2-\na.go:3:func Hello() {}\na.go-4-\na.go:5:func other() {}\n"; err != nil || got != want {
		t.Errorf("context:\n%s", got)
	}
	got, _ = h.call("grep", m{"pattern": "package", "context": 0})
	if !strings.HasPrefix(got, "a.go:1:package a\nsub/b.go:1:package sub\n") {
		t.Errorf("sorted by path:\n%s", got)
	}
	for _, args := range []m{{"pattern": "("}, {"pattern": "x", "path": ".."}, {"pattern": "x", "glob": "[a"}} {
		if _, err := h.call("grep", args); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// TestGrepMany: over many folders and files with many workers, grep finds
// every match, the same each time, stops at its cap, and leaves no
// directory open.
func TestGrepMany(t *testing.T) {
	h := newHarness(t, &Options{Workers: 8})
	for d := range 20 {
		for f := range 150 {
			text := "nothing\n"
			if f%50 == 0 {
				text = "match\n"
			}
			h.write(fmt.Sprintf("d%02d/e/f%03d.txt", d, f), text)
		}
	}
	h.call("list_dir", m{}) // opens the workspace
	before := openFDs(t)
	first, err := h.call("grep", m{"pattern": "match", "max_results": 1000})
	if err != nil || strings.Count(first, ":1:match") != 60 {
		t.Fatalf("%d matches, %v", strings.Count(first, ":1:match"), err)
	}
	for range 3 {
		if again, _ := h.call("grep", m{"pattern": "match", "max_results": 1000}); again != first {
			t.Fatal("another order")
		}
	}
	capped, _ := h.call("grep", m{"pattern": "nothing", "max_results": 5})
	if !strings.Contains(capped, "[the first 5 matching lines; the search stopped after") {
		t.Errorf("cap:\n%s", capped)
	}
	if after := openFDs(t); after != before {
		t.Errorf("%d files open before, %d after", before, after)
	}
}

// TestConfined: a symlink in the workspace to a folder outside leads
// none of the tools there.
func TestConfined(t *testing.T) {
	h := newHarness(t, nil)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("CANARY-CONTENT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(h.dir, "out"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(h.dir, "secret"))
	h.write("in.txt", "inside\n")
	for _, c := range []struct {
		tool string
		args m
	}{
		{"read_file", m{"path": "out/secret"}},
		{"read_file", m{"path": "secret"}},
		{"list_dir", m{"path": "out"}},
		{"glob", m{"pattern": "out/*"}},
		{"grep", m{"pattern": "CANARY-CON"}},
		{"grep", m{"pattern": "CANARY-CON", "path": "out"}},
		{"grep", m{"pattern": "CANARY-CON", "path": "secret"}},
		{"write_file", m{"path": "out/secret", "content": "pwned"}},
		{"write_file", m{"path": "secret", "content": "pwned"}},
		{"edit_file", m{"path": "secret", "old": "CANARY-CONTENT", "new": "pwned"}},
		{"apply_patch", m{"patch": "--- a/secret\n+++ b/secret\n@@ -1 +1 @@\n-CANARY-CONTENT\n+pwned\n"}},
		{"apply_patch", m{"patch": "--- /dev/null\n+++ b/out/new\n@@ -0,0 +1 @@\n+pwned\n"}},
	} {
		out, err := h.call(c.tool, c.args)
		if strings.Contains(out, "CANARY-CONTENT") || (err == nil && c.tool != "grep" && c.tool != "glob") {
			t.Errorf("%s %v: %q, %v", c.tool, c.args, out, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "secret")); string(got) != "CANARY-CONTENT\n" {
		t.Errorf("the file outside changed: %q", got)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("a file appeared outside: %v", ents)
	}
}

// TestReadingDoesNotOpenAFIFO: read_file, edit_file and grep given a FIFO
// refuse it without opening it: an open for reading would wake a writer
// waiting on it (and opening a device may act on it). inotify sees every
// open of the FIFO, so the test asks the kernel rather than the clock.
func TestReadingDoesNotOpenAFIFO(t *testing.T) {
	h := newHarness(t, nil)
	fifo := filepath.Join(h.dir, "pipe")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, fifo, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args m
	}{
		{"read_file", m{"path": "pipe"}},
		{"edit_file", m{"path": "pipe", "old": "a", "new": "b"}},
		{"grep", m{"pattern": "a", "path": "pipe"}},
	} {
		if _, err := h.call(c.tool, c.args); !errors.Is(err, workspace.ErrNotRegular) {
			t.Errorf("%s of a FIFO: error %v, want ErrNotRegular", c.tool, err)
		}
		var buf [4096]byte
		if n, _ := unix.Read(in, buf[:]); n > 0 {
			t.Errorf("%s opened the FIFO before refusing it", c.tool)
		}
	}
}
