package webext_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"agentd/internal/extension"
	"agentd/internal/webext"
)

// appSpec is an app with these files.
func appSpec(files map[string]string) string {
	b, _ := json.Marshal(webext.App{Title: "t", Files: files})
	return string(b)
}

func TestAppChecks(t *testing.T) {
	many := map[string]string{"index.html": "x"}
	for i := range webext.MaxAppFiles {
		many[fmt.Sprintf("f%d.js", i)] = "x"
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		ptr   string
		want  string
	}{
		{"fine", map[string]string{"index.html": "<p>", "js/app.js": "1", "img/dot.png": base64.StdEncoding.EncodeToString(pngBytes)}, "", ""},
		{"no page", map[string]string{"app.js": "1"}, "/spec/files", "index.html"},
		{"too many", many, "/spec/files", "at most 64"},
		{"too big", map[string]string{"index.html": strings.Repeat("x", webext.MaxAppBytes+1)}, "/spec/files", "at most 524288"},
		{"dot dot", map[string]string{"index.html": "", "../x.html": ""}, "/spec/files/..~1x.html", "a path is"},
		{"hidden", map[string]string{"index.html": "", ".env.txt": ""}, "/spec/files/.env.txt", "a path is"},
		{"absolute", map[string]string{"index.html": "", "/x.html": ""}, "/spec/files/~1x.html", "a path is"},
		{"double slash", map[string]string{"index.html": "", "a//x.html": ""}, "/spec/files/a~1~1x.html", "a path is"},
		{"backslash", map[string]string{"index.html": "", `a\x.html`: ""}, `/spec/files/a\x.html`, "a path is"},
		{"no extension", map[string]string{"index.html": "", "run": ""}, "/spec/files/run", "a path is"},
		{"executable", map[string]string{"index.html": "", "x.exe": ""}, "/spec/files/x.exe", "a path is"},
		{"bad image", map[string]string{"index.html": "", "x.png": "not base64!"}, "/spec/files/x.png", "base64"},
	} {
		got := check(t, webext.AppType(webext.NewApps()), doc("app", "a", appSpec(tc.files)))
		if tc.want == "" && got != nil || tc.want != "" && !hasProblemAt(got, tc.ptr, tc.want) {
			t.Errorf("%s: %q, want a problem at %s saying %q", tc.name, got, tc.ptr, tc.want)
		}
	}
}

// An app over its cap is refused through the manager with the field
// named, and nothing is written.
func TestAppOverCapRefused(t *testing.T) {
	w := newWorld(t, nil)
	_, err := w.m.Put(t.Context(), doc("app", "big", appSpec(map[string]string{"index.html": strings.Repeat("x", webext.MaxAppBytes+1)})), person)
	if got := problems(t, err); !containsPrefix(got, "/spec/files") {
		t.Errorf("got %q", got)
	}
	if _, err := w.m.Get(t.Context(), "app", "big"); err == nil {
		t.Error("written")
	}
}

// served returns the index.html an app serves, "" when it serves none.
func served(t *testing.T, apps *webext.Apps, name string) string {
	t.Helper()
	f, err := apps.File(name, "")
	if errors.Is(err, webext.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(f.Body)
}

// An app runs in people's browsers with their login: one an agent writes
// is stored disabled and not served until a person enables it; an
// agent's change to an enabled app is not served until a person enables
// it again; and an agent may not enable one. A restart changes none of it.
func TestAgentAppsWaitForAPerson(t *testing.T) {
	w := newWorld(t, nil)
	ctx := t.Context()
	st, err := w.m.Put(ctx, doc("app", "spend", appSpec(map[string]string{"index.html": "one"})), alice)
	if err != nil {
		t.Fatal(err)
	}
	if st.Enabled || served(t, w.apps, "spend") != "" {
		t.Fatalf("an agent's app: enabled %v, served %q", st.Enabled, served(t, w.apps, "spend"))
	}
	// Asking for it enabled changes nothing.
	on := true
	d := doc("app", "spend", appSpec(map[string]string{"index.html": "one"}))
	d.Enabled = &on
	if st, err := w.m.Put(ctx, d, alice); err != nil || st.Enabled || served(t, w.apps, "spend") != "" {
		t.Fatalf("an agent's app put enabled: %+v, %v", st.Extension, err)
	}
	if _, err := w.m.SetEnabled(ctx, "app", "spend", true, alice); !errors.Is(err, extension.ErrForbidden) {
		t.Fatalf("an agent enabling its app: %v", err)
	}
	if _, err := w.m.SetEnabled(ctx, "app", "spend", true, person); err != nil {
		t.Fatal(err)
	}
	if got := served(t, w.apps, "spend"); got != "one" {
		t.Fatalf("enabled by a person: served %q", got)
	}

	// The agent changes the enabled app: the app is disabled, nothing it
	// wrote is served, until a person enables it.
	st, err = w.m.Put(ctx, doc("app", "spend", appSpec(map[string]string{"index.html": "two: fetch('/v1/agents/x/key')"})), alice)
	if err != nil {
		t.Fatal(err)
	}
	if got := served(t, w.apps, "spend"); got != "" || st.Enabled || st.Active != 0 {
		t.Fatalf("after an agent's change: served %q, status %+v", got, st)
	}
	// After a restart nothing an agent wrote is served either.
	w2 := newWorld(t, w.st)
	if got := served(t, w2.apps, "spend"); got != "" {
		t.Fatalf("after a restart: served %q", got)
	}
	// A person looks and enables it: theirs now.
	if _, err := w2.m.SetEnabled(ctx, "app", "spend", true, person); err != nil {
		t.Fatal(err)
	}
	if got := served(t, w2.apps, "spend"); !strings.HasPrefix(got, "two") {
		t.Fatalf("enabled again by a person: served %q", got)
	}
}

func TestAppFiles(t *testing.T) {
	w := newWorld(t, nil)
	if _, err := w.m.Put(t.Context(), doc("app", "a", appSpec(map[string]string{
		"index.html": "<p>", "js/app.js": "1", "docs/index.html": "docs", "dot.png": base64.StdEncoding.EncodeToString(pngBytes),
	})), person); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, ctype, body string }{
		{"", "text/html; charset=utf-8", "<p>"},
		{"index.html", "text/html; charset=utf-8", "<p>"},
		{"js/app.js", "text/javascript; charset=utf-8", "1"},
		{"docs/", "text/html; charset=utf-8", "docs"},
		{"dot.png", "image/png", string(pngBytes)},
	} {
		f, err := w.apps.File("a", tc.path)
		if err != nil || f.ContentType != tc.ctype || string(f.Body) != tc.body || f.ETag == "" {
			t.Errorf("%q: %+v, %v", tc.path, f, err)
		}
	}
	for _, p := range []string{"js", "nothing.js", "../a/index.html", "js/../index.html"} {
		if _, err := w.apps.File("a", p); !errors.Is(err, webext.ErrNotFound) {
			t.Errorf("%q: %v, want not found", p, err)
		}
	}
	if _, err := w.m.SetEnabled(t.Context(), "app", "a", false, person); err != nil {
		t.Fatal(err)
	}
	if _, err := w.apps.File("a", ""); !errors.Is(err, webext.ErrNotFound) {
		t.Errorf("disabled: %v", err)
	}
}
