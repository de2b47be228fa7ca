package files

import (
	"path"
	"strings"
	"testing"
)

// FuzzMatchGlob: without "**", matchGlob agrees with path.Match; with it,
// "**/" before a pattern matches that pattern at any depth.
func FuzzMatchGlob(f *testing.F) {
	f.Add("*.go", "a.go")
	f.Add("a/*/c", "a/b/c")
	f.Add("?", "/")
	f.Fuzz(func(t *testing.T, pat, name string) {
		if strings.ContainsAny(pat, `\[`) || strings.Contains(pat, "**") {
			return
		}
		want, err := path.Match(pat, name)
		if err != nil {
			return
		}
		if got := matchGlob(pat, name); got != want {
			t.Fatalf("matchGlob(%q, %q) = %v, path.Match says %v", pat, name, got, want)
		}
		if want && !matchGlob("**/"+pat, "x/y/"+name) {
			t.Fatalf("**/%s does not match x/y/%s", pat, name)
		}
	})
}
