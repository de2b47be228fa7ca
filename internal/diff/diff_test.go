package diff

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnified(t *testing.T) {
	a := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\n"
	b := "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\neight\nnine\nten\neleven\ntwelve\nthirteen"
	want := `--- a/x.txt
+++ b/x.txt
@@ -1,6 +1,6 @@
 one
 two
-three
+THREE
 four
 five
 six
@@ -10,3 +10,4 @@
 ten
 eleven
 twelve
+thirteen
\ No newline at end of file
`
	if diff := cmp.Diff(want, Unified("x.txt", "x.txt", a, b)); diff != "" {
		t.Errorf("Unified (-want +got):\n%s", diff)
	}
	if got := Unified("x", "x", a, a); got != "" {
		t.Errorf("equal inputs: %q", got)
	}
	created := Unified("", "new", "", "hi\n")
	if want := "--- /dev/null\n+++ b/new\n@@ -0,0 +1 @@\n+hi\n"; created != want {
		t.Errorf("create: %q", created)
	}
	deleted := Unified("old", "", "hi\nthere\n", "")
	if want := "--- a/old\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-hi\n-there\n"; deleted != want {
		t.Errorf("delete: %q", deleted)
	}
}

func roundTrip(t testing.TB, a, b string) {
	t.Helper()
	u := Unified("f", "f", a, b)
	if u == "" {
		if a != b {
			t.Fatalf("no diff between %q and %q", a, b)
		}
		return
	}
	fs, err := Parse(u)
	if err != nil {
		t.Fatalf("Parse(Unified(%q, %q)): %v\n%s", a, b, err, u)
	}
	if len(fs) != 1 {
		t.Fatalf("%d files", len(fs))
	}
	got, err := Apply(a, fs[0])
	if err != nil {
		t.Fatalf("Apply: %v\n%s", err, u)
	}
	if got != b {
		t.Fatalf("round trip of %q → %q gave %q\n%s", a, b, got, u)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range [][2]string{
		{"", "a\n"},
		{"a\n", ""},
		{"a", "a\n"},
		{"a\n", "a"},
		{"a\nb\nc\n", "c\nb\na\n"},
		{"x\n\n\ny\n", "\n\nx\ny\n\n"},
		{strings.Repeat("same\n", 20) + "a\n" + strings.Repeat("same\n", 20), strings.Repeat("same\n", 20) + "b\n" + strings.Repeat("same\n", 21)},
		{"-- a\n+++ b\n@@ c\n", "--- a\n++ b\n\\ c\n"},
	} {
		roundTrip(t, c[0], c[1])
	}
}

// TestLargeDifference: past maxD differences the diff is a plain
// replacement, still correct.
func TestLargeDifference(t *testing.T) {
	var a, b strings.Builder
	for i := range 3000 {
		a.WriteString(strings.Repeat("a", i%7) + "\n")
		b.WriteString(strings.Repeat("b", i%5) + "\n")
	}
	roundTrip(t, a.String(), b.String())
}

func FuzzRoundTrip(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd")
	f.Add("", "x")
	f.Add("\\ x\n@@ -1 +1 @@\n", "--- a\n+++ b\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		roundTrip(t, a, b)
	})
}

func TestParse(t *testing.T) {
	patch := `From: someone
Subject: a change

diff --git a/src/x.go b/src/x.go
index 1111111..2222222 100644
--- a/src/x.go
+++ b/src/x.go
@@ -1,2 +1,2 @@ func main() {
-a
+b
 c
diff --git a/new.txt b/new.txt
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/new.txt
@@ -0,0 +1 @@
+hello
\ No newline at end of file
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
--- a/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
diff --git a/empty b/empty
new file mode 100644
index 0000000..e69de29
--- plain.txt	2026-01-02 10:00:00.000000000 +0000
+++ plain.txt	2026-01-02 10:01:00.000000000 +0000
@@ -3 +3 @@
-x

+y
`
	// the last hunk counts one old line but has two: the blank line is
	// context whose space an editor trimmed, and the count is off.
	_, err := Parse(patch)
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("miscounted hunk: %v", err)
	}
	patch = strings.Replace(patch, "@@ -3 +3 @@\n-x\n\n+y\n", "@@ -3,2 +3,2 @@\n-x\n\n+y\n", 1)
	fs, err := Parse(patch)
	if err != nil {
		t.Fatal(err)
	}
	want := []*File{
		{OldPath: "src/x.go", NewPath: "src/x.go", Hunks: []Hunk{{OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 2, Section: "func main() {",
			Lines: []Line{{'-', "a\n"}, {'+', "b\n"}, {' ', "c\n"}}}}},
		{NewPath: "new.txt", Hunks: []Hunk{{OldStart: 0, OldLines: 0, NewStart: 1, NewLines: 1, Lines: []Line{{'+', "hello"}}}}},
		{OldPath: "gone.txt", Hunks: []Hunk{{OldStart: 1, OldLines: 1, NewStart: 0, NewLines: 0, Lines: []Line{{'-', "bye\n"}}}}},
		{NewPath: "empty"},
		{OldPath: "plain.txt", NewPath: "plain.txt", Hunks: []Hunk{{OldStart: 3, OldLines: 2, NewStart: 3, NewLines: 2,
			Lines: []Line{{'-', "x\n"}, {' ', "\n"}, {'+', "y\n"}}}}},
	}
	if diff := cmp.Diff(want, fs); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ patch, want string }{
		{"just words\n", "no file headers"},
		{"@@ -1 +1 @@\n-a\n+b\n", "a hunk before its file's"},
		{"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n", "ends early"},
		{"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n*b\n", "is not a hunk line"},
		{"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n", "more lines than its header"},
		{"--- a/x\n+++ b/x\n@@ one @@\n", "bad hunk header"},
		{"diff --git a/x b/y\nrename from x\nrename to y\n", "renames"},
		{"diff --git a/x b/x\nGIT binary patch\n", "binary"},
		{"--- /dev/null\n+++ /dev/null\n", "both sides"},
	} {
		_, err := Parse(tc.patch)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v; want %q", tc.patch, err, tc.want)
		}
	}
}

// TestApplyOffset: a hunk whose lines moved is applied where they are
// now; one whose lines are gone is an error naming the file, the hunk and
// the line that differs.
func TestApplyOffset(t *testing.T) {
	fs, err := Parse("--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n@@ -8,2 +8,2 @@\n h\n-i\n+I\n")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Apply("new\nnew\na\nb\nc\nd\ne\nf\ng\nh\ni\n", fs[0])
	if want := "new\nnew\na\nb\nC\nd\ne\nf\ng\nh\nI\n"; err != nil || got != want {
		t.Errorf("offset: %q, %v", got, err)
	}
	_, err = Apply("a\nb\nx\nd\ne\nf\ng\nh\ni\n", fs[0])
	want := `hunk does not apply: @@ -2,3 +2,3 @@ of f: its lines are not in the file (line 3 reads "x", the hunk expects "c")`
	if !errors.Is(err, ErrConflict) || err.Error() != want {
		t.Errorf("conflict:\n got %v\nwant %s", err, want)
	}
	del, _ := Parse("--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n")
	if _, err := Apply("a\nb\n", del[0]); !errors.Is(err, ErrConflict) {
		t.Errorf("partial delete: %v", err)
	}
}

// FuzzParse: any text parses or is refused without panicking, and what
// parses applies (or is refused) to any content without panicking; what
// Apply returns to content a hunk fitted is valid input for another diff.
func FuzzParse(f *testing.F) {
	f.Add("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", "a\nb\n")
	f.Add("diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n", "")
	f.Add("--- x\t2026-01-01\n+++ x\t2026-01-02\n@@ -3 +3,0 @@\n-c\n", "a\nb\nc\n")
	f.Fuzz(func(t *testing.T, patch, content string) {
		fs, err := Parse(patch)
		if err != nil {
			return
		}
		for _, fp := range fs {
			if out, err := Apply(content, fp); err == nil {
				roundTrip(t, content, out)
			}
		}
	})
}

func TestCount(t *testing.T) {
	if a, r := Count("a\nb\nc\n", "a\nB\nc\nd\n"); a != 2 || r != 1 {
		t.Errorf("Count = +%d −%d", a, r)
	}
}
