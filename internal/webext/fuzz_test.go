package webext_test

import (
	"encoding/json"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/webext"
)

// quoted finds CSS strings.
var quoted = regexp.MustCompile(`'[^']*'|"[^"]*"`)

// A value CheckCSSValue accepts cannot end its declaration, open a rule,
// a comment, an at-rule or an escape, nor load anything.
func FuzzCSSValue(f *testing.F) {
	for _, s := range []string{"#fff", "rgb(0 0 0 / 0.5)", `"Segoe UI", sans-serif`, "url(x)", "red;}", "a/**/b",
		"calc(1px + var(--x))", "expression(1)", "image-set('x' 1x)", `\75 rl(x)`, "(", "')'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if webext.CheckCSSValue(v) != "" {
			return
		}
		if strings.ContainsAny(v, ";{}<>\\@*!:\n\r\t\x00") {
			t.Fatalf("accepted %q", v)
		}
		low := strings.ToLower(v)
		for _, bad := range []string{"url(", "expression(", "image(", "image-set(", "element(", "attr(", "/*"} {
			if strings.Contains(low, bad) {
				t.Fatalf("accepted %q", v)
			}
		}
		if bare := quoted.ReplaceAllString(v, ""); strings.Count(bare, "(") != strings.Count(bare, ")") || strings.ContainsAny(bare, `'"`) {
			t.Fatalf("accepted unbalanced %q", v)
		}
	})
}

// A file path an app's checks accept is clean as the standard library's
// path.Clean says, relative, without dot segments or hidden files, so it
// names one file under /apps/<name>/ and nothing else.
func FuzzAppPath(f *testing.F) {
	for _, s := range []string{"index.html", "js/app.js", "../x.html", "./x.js", "a//b.css", "/abs.js", ".env.txt", "a/.b/c.js",
		"a\\b.js", "x.exe", "a/b/", "a..b.js", "img/dot.png"} {
		f.Add(s)
	}
	apps := webext.NewApps()
	f.Fuzz(func(t *testing.T, p string) {
		if !utf8.ValidString(p) {
			return // JSON would hold another name
		}
		spec, err := json.Marshal(webext.App{Title: "t", Files: map[string]string{"index.html": "", p: ""}})
		if err != nil {
			t.Fatal(err)
		}
		d := extension.Doc{Type: "app", Name: "a", Spec: spec}
		errs := apps.Check(t.Context(), &d)
		if p == "index.html" || hasPointer(errs, "/spec/files/"+schema.Escape(p)) {
			return
		}
		if path.Clean(p) != p || path.IsAbs(p) || strings.Contains(p, "\\") {
			t.Fatalf("accepted %q (clean: %q)", p, path.Clean(p))
		}
		for _, seg := range strings.Split(p, "/") {
			if strings.HasPrefix(seg, ".") {
				t.Fatalf("accepted %q: segment %q", p, seg)
			}
		}
	})
}

func hasPointer(errs []schema.Error, ptr string) bool {
	for _, e := range errs {
		if e.Pointer == ptr {
			return true
		}
	}
	return false
}
