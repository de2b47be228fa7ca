package webext_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/webext"
)

func TestCheckCSSValue(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"#4f46e5", true},
		{"12px", true},
		{"0 1px 2px rgb(0 0 0 / 0.05), 0 2px 8px rgb(0 0 0 / 0.04)", true},
		{`system-ui, -apple-system, "Segoe UI", Roboto, sans-serif`, true},
		{"calc(var(--header-h) + 4px)", true},
		{"oklch(70% 0.1 200)", true},
		{"url(https://evil.example/x.png)", false},
		{"URL(x)", false},
		{"image-set('a.png' 1x)", false},
		{"expression(alert(1))", false},
		{"red; background: blue", false},
		{"red} body {color: red", false},
		{"</style><script>", false},
		{`\75rl(x)`, false},
		{"@import 'x'", false},
		{"red /* comment */", false},
		{"rgb(0 0 0", false},
		{"rgb(0 0 0))", false},
		{`"Segoe UI`, false},
		{"(1px)", false},
		{"", false},
		{strings.Repeat("a", 301), false},
	} {
		got := webext.CheckCSSValue(tc.v)
		if (got == "") != tc.ok {
			t.Errorf("CheckCSSValue(%q) = %q, want ok %v", tc.v, got, tc.ok)
		}
	}
}

// A theme with unsafe values or names is refused by its type's checks,
// each problem at its pointer, whatever the schema says (the checks do
// not rely on it).
func TestThemeChecks(t *testing.T) {
	d := doc("theme", "evil", `{"light": {"--bg": "url(evil.png)", "--ok": "#fff"},
		"dark": {"--x": "red;}body{background:red", "Bad": "#000"}}`)
	got := check(t, webext.ThemeType(), d)
	for _, want := range [][2]string{
		{"/spec/light/--bg", "url() is not allowed"},
		{"/spec/dark/--x", "letters, digits"},
		{"/spec/dark/Bad", "custom property's name"},
	} {
		if !hasProblemAt(got, want[0], want[1]) {
			t.Errorf("no problem at %s saying %q in %q", want[0], want[1], got)
		}
	}
	if hasProblemAt(got, "/spec/light/--ok", "") {
		t.Errorf("a good value refused: %q", got)
	}
}

// Through the manager, each unsafe theme is refused and nothing written.
func TestThemeRefused(t *testing.T) {
	w := newWorld(t, nil)
	for _, tc := range []struct{ spec, ptr string }{
		{`{"light": {"--bg": "url(evil.png)"}}`, "/spec/light/--bg"},
		{`{"light": {"--bg": "expression(alert(1))"}}`, "/spec/light/--bg"},
		{`{"light": {"--bg": "red;}body{background:red"}}`, "/spec/light/--bg"},
		{`{"light": {"--bg": "rgb(0 0 0"}}`, "/spec/light/--bg"},
		{`{"light": {"bg": "#fff"}}`, "/spec/light"},
	} {
		_, err := w.m.Put(t.Context(), doc("theme", "evil", tc.spec), person)
		if got := problems(t, err); !hasProblemAt(got, tc.ptr, "") && !containsPrefix(got, tc.ptr) {
			t.Errorf("%s: want a problem at %s, got %q", tc.spec, tc.ptr, got)
		}
	}
	if _, err := w.m.Get(t.Context(), "theme", "evil"); err == nil {
		t.Error("a refused theme was written")
	}
}

func TestThemeSchema(t *testing.T) {
	s := validator(t, webext.ThemeType().Schema)
	for _, tc := range []struct {
		spec string
		bad  []string // pointers with a problem
	}{
		{`{"light": {"--bg": "#fff"}, "dark": {"--bg": "#000"}}`, nil},
		{`{"dark": {"--bg": "#000"}}`, []string{""}},
		{`{"light": {"bg": "#fff"}}`, []string{"/light"}},
		{`{"light": {"--bg": "red;"}}`, []string{"/light/--bg"}},
		{`{"light": {"--bg": 3}}`, []string{"/light/--bg"}},
		{`{"light": {}, "extra": 1}`, []string{""}},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.spec), &v); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range s.Validate(v) {
			got = append(got, e.Pointer)
		}
		for _, ptr := range tc.bad {
			if !containsPrefix(got, ptr) {
				t.Errorf("%s: no problem at %q in %q", tc.spec, ptr, got)
			}
		}
		if tc.bad == nil && got != nil {
			t.Errorf("%s: %q", tc.spec, got)
		}
	}
}

func containsPrefix(ptrs []string, prefix string) bool {
	for _, p := range ptrs {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// cssVar is a custom property's declaration in app.css.
var cssVar = regexp.MustCompile(`(?m)^\s*(--[a-z0-9-]+):\s*(.+?);\s*$`)

// The default theme is what the console's stylesheet sets: light in its
// :root, dark in its prefers-color-scheme: dark block.
func TestDefaultThemeIsTheConsoles(t *testing.T) {
	css, err := os.ReadFile("../gateway/console/static/app.css")
	if err != nil {
		t.Fatal(err)
	}
	s := string(css)
	root := s[strings.Index(s, ":root {"):]
	dark := root[strings.Index(root, "@media (prefers-color-scheme: dark)"):]
	root = root[:strings.Index(root, "}")]
	dark = dark[:strings.Index(dark, "}")]
	want := webext.Theme{Title: "Default", Light: vars(root), Dark: vars(dark)}

	st, err := newWorld(t, nil).m.Get(t.Context(), "theme", "default")
	if err != nil {
		t.Fatal(err)
	}
	var got webext.Theme
	if err := json.Unmarshal(st.Spec, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("builtin/theme/default.yaml is not app.css's (-app.css +default.yaml):\n%s", diff)
	}
}

func vars(block string) map[string]string {
	out := map[string]string{}
	for _, m := range cssVar.FindAllStringSubmatch(block, -1) {
		out[m[1]] = m[2]
	}
	return out
}
