package gateway_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/extension"
	"agentd/internal/gateway"
	"agentd/internal/store"
	"agentd/internal/webext"
)

// extRows is a fixed set of extension rows with their histories, as the
// extension manager would give them.
type extRows struct {
	rows map[string]extension.Status
	hist map[string][]store.ExtensionChange
}

func (x *extRows) List(_ context.Context, typ string) ([]extension.Status, error) {
	var out []extension.Status
	for _, s := range x.rows {
		if s.Type == typ {
			out = append(out, s)
		}
	}
	return out, nil
}

func (x *extRows) Get(_ context.Context, typ, name string) (extension.Status, error) {
	s, ok := x.rows[typ+"/"+name]
	if !ok {
		return s, store.ErrNotFound
	}
	return s, nil
}

func (x *extRows) History(_ context.Context, typ, name string) ([]store.ExtensionChange, error) {
	h, ok := x.hist[typ+"/"+name]
	if !ok {
		return nil, store.ErrNotFound
	}
	return h, nil
}

// put adds version after version of a row; the last is the row.
func (x *extRows) put(typ, name string, specs ...string) {
	k := typ + "/" + name
	for i, spec := range specs {
		at := time.Date(2026, 11, 25, 0, 0, i, 0, time.UTC)
		x.hist[k] = append(x.hist[k], store.ExtensionChange{Version: int64(i + 1), Op: store.ExtPut, Spec: json.RawMessage(spec), Enabled: true, At: at})
		x.rows[k] = extension.Status{Extension: store.Extension{Type: typ, Name: name, Spec: json.RawMessage(spec), Enabled: true,
			Version: int64(i + 1), UpdatedAt: at}}
	}
}

// pngDot is a 1×1 PNG.
var pngDot, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")

// webextServer serves the console's extension routes over rows and one
// active app, "hello".
func webextServer(t *testing.T) (*gateway.Server, *webext.Apps) {
	t.Helper()
	rows := &extRows{rows: map[string]extension.Status{}, hist: map[string][]store.ExtensionChange{}}
	rows.put("artifact", "page", `{"title": "Page", "kind": "html", "content": "<script>alert(1)</script>", "session": "a/chat:1", "agent": "a"}`,
		`{"title": "Page", "kind": "html", "content": "<svg onload=alert(2)>", "session": "a/chat:1", "agent": "a"}`)
	rows.put("artifact", "dot", `{"title": "Dot", "kind": "image", "media_type": "image/png", "content": "`+base64.StdEncoding.EncodeToString(pngDot)+`", "session": "b/chat:1"}`)
	rows.put("artifact", "notes", `{"title": "Notes", "kind": "markdown", "content": "# hi"}`)
	rows.put("widget", "spend", `{"title": "Spend", "query": {"kind": "usage"}}`)
	apps := webext.NewApps()
	spec, _ := json.Marshal(webext.App{Title: "Hello", Files: map[string]string{
		"index.html": "<!doctype html><script src=app.js></script>", "app.js": "fetch('/v1/usage')",
		"img/dot.png": base64.StdEncoding.EncodeToString(pngDot), "pic.svg": "<svg xmlns='http://www.w3.org/2000/svg'/>",
	}})
	if err := apps.Activate(t.Context(), &store.Extension{Type: "app", Name: "hello", Spec: spec, Enabled: true, Version: 1, Provenance: store.ProvenanceUser}); err != nil {
		t.Fatal(err)
	}
	srv := gateway.New(&gateway.Options{Version: "v9", Widgets: webext.NewWidgets(rows, nil),
		Artifacts: webext.NewArtifacts(rows, rows), Apps: apps})
	return srv, apps
}

// get sends a GET with the headers given and returns the response, its
// body read.
func get(t *testing.T, h http.Handler, path string, hdr http.Header) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), "GET", path, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestWidgetRoutes(t *testing.T) {
	srv, _ := webextServer(t)
	resp, body := get(t, srv, "/v1/widgets", nil)
	var page gateway.WidgetsPage
	if err := json.Unmarshal([]byte(body), &page); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	// No usage figures here: the widget says so; the page is answered.
	if len(page.Widgets) != 1 || page.Widgets[0].Name != "spend" || !strings.Contains(page.Widgets[0].Error, "usage is not available") {
		t.Errorf("widgets: %+v", page)
	}
	if resp, body := get(t, srv, "/v1/widgets/spend", nil); resp.StatusCode != 200 || !strings.Contains(body, `"title":"Spend"`) {
		t.Errorf("one widget: %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, srv, "/v1/widgets/nothing", nil); resp.StatusCode != 404 || !strings.Contains(body, `"code":"not_found"`) {
		t.Errorf("no widget: %d %s", resp.StatusCode, body)
	}
	bare := gateway.New(&gateway.Options{})
	for _, p := range []string{"/v1/widgets", "/v1/artifacts", "/v1/artifacts/x", "/apps/x/"} {
		if resp, body := get(t, bare, p, nil); resp.StatusCode != 501 {
			t.Errorf("%s without the part: %d %s", p, resp.StatusCode, body)
		}
	}
}

func TestArtifactRoutes(t *testing.T) {
	srv, _ := webextServer(t)
	resp, body := get(t, srv, "/v1/artifacts?session=a/chat:1", nil)
	var page gateway.ArtifactsPage
	if err := json.Unmarshal([]byte(body), &page); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if len(page.Artifacts) != 1 || page.Artifacts[0].Name != "page" || page.Artifacts[0].Version != 2 {
		t.Errorf("a session's artifacts: %+v", page)
	}
	if resp, body := get(t, srv, "/v1/artifacts?session=nonsense", nil); resp.StatusCode != 400 {
		t.Errorf("a bad session: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		path    string
		status  int
		content string
	}{
		{"/v1/artifacts/page", 200, "<svg onload=alert(2)>"},
		{"/v1/artifacts/page?version=1", 200, "<script>alert(1)</script>"},
		{"/v1/artifacts/dot", 200, "data:image/png;base64,"},
		{"/v1/artifacts/page?version=7", 404, ""},
		{"/v1/artifacts/page?version=x", 400, ""},
		{"/v1/artifacts/nothing", 404, ""},
	} {
		resp, body := get(t, srv, tc.path, nil)
		var v webext.ArtifactView
		json.Unmarshal([]byte(body), &v)
		if resp.StatusCode != tc.status || !strings.HasPrefix(v.Content, tc.content) {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, body)
		}
	}
}

// A download is an attachment of a type no browser runs, whatever the
// artifact holds: an agent's HTML or SVG never runs on agentd's origin.
func TestArtifactDownloads(t *testing.T) {
	srv, _ := webextServer(t)
	for _, tc := range []struct {
		path, ctype, file, body string
	}{
		{"/v1/artifacts/page/download", "text/plain; charset=utf-8", "page.html", "<svg onload=alert(2)>"},
		{"/v1/artifacts/page/download?version=1", "text/plain; charset=utf-8", "page.html", "<script>alert(1)</script>"},
		{"/v1/artifacts/notes/download", "text/markdown; charset=utf-8", "notes.md", "# hi"},
		{"/v1/artifacts/dot/download", "image/png", "dot.png", string(pngDot)},
	} {
		resp, body := get(t, srv, tc.path, nil)
		h := resp.Header
		got := []string{h.Get("Content-Type"), h.Get("Content-Disposition"), h.Get("X-Content-Type-Options"), h.Get("Content-Security-Policy"), body}
		want := []string{tc.ctype, `attachment; filename=` + tc.file, "nosniff", "default-src 'none'; sandbox", tc.body}
		if diff := cmp.Diff(want, got); resp.StatusCode != 200 || diff != "" {
			t.Errorf("%s: %d (-want +got):\n%s", tc.path, resp.StatusCode, diff)
		}
	}
}

// appCSP is what every file of an app is served with.
const appCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"object-src 'none'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'"

func TestAppRoutes(t *testing.T) {
	srv, _ := webextServer(t)
	for _, tc := range []struct{ path, ctype, body string }{
		{"/apps/hello/", "text/html; charset=utf-8", "<!doctype html><script src=app.js></script>"},
		{"/apps/hello/index.html", "text/html; charset=utf-8", "<!doctype html><script src=app.js></script>"},
		{"/apps/hello/app.js", "text/javascript; charset=utf-8", "fetch('/v1/usage')"},
		{"/apps/hello/img/dot.png", "image/png", string(pngDot)},
		{"/apps/hello/pic.svg", "image/svg+xml", "<svg xmlns='http://www.w3.org/2000/svg'/>"},
	} {
		resp, body := get(t, srv, tc.path, nil)
		h := resp.Header
		if resp.StatusCode != 200 || h.Get("Content-Type") != tc.ctype || body != tc.body ||
			h.Get("Content-Security-Policy") != appCSP || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d %v %q", tc.path, resp.StatusCode, h, body)
		}
		etag := h.Get("ETag")
		if resp, _ := get(t, srv, tc.path, http.Header{"If-None-Match": {etag}}); etag == "" || resp.StatusCode != 304 {
			t.Errorf("%s again with its ETag %q: %d", tc.path, etag, resp.StatusCode)
		}
	}
	if webext.AppCSP != appCSP {
		t.Errorf("webext.AppCSP is %q", webext.AppCSP)
	}
	if resp, _ := get(t, srv, "/apps/hello", nil); resp.StatusCode != 301 || resp.Header.Get("Location") != "/apps/hello/" {
		t.Errorf("the app's root: %d %v", resp.StatusCode, resp.Header)
	}
	// Nothing but the app's own files, and a miss carries the CSP too.
	for _, p := range []string{"/apps/hello/nothing.js", "/apps/other/", "/apps/hello/img", "/apps/hello/img/../../other/index.html",
		"/apps/hello/%2e%2e/%2e%2e/v1/widgets", "/apps/hello/..%2fapp.js"} {
		resp, body := get(t, srv, p, nil)
		if resp.StatusCode == 200 {
			t.Errorf("%s: served %q", p, body)
		}
		if resp.StatusCode == 404 && resp.Header.Get("Content-Security-Policy") != appCSP {
			t.Errorf("%s: a 404 without the app's CSP: %v", p, resp.Header)
		}
	}
}

// An app's files need the token or the console's login over TCP, like
// the API its page calls; they are never public, and a login cookie sent
// by another site is refused.
func TestAppsNeedALogin(t *testing.T) {
	srv, _ := webextServer(t)
	tk, tok := authTokens(t)
	ts := httptest.NewServer(srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420"}))
	t.Cleanup(ts.Close)
	do := func(hdr http.Header) int {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", ts.URL+"/apps/hello/", nil)
		req.Host = "127.0.0.1:7420"
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	login, err := http.NewRequestWithContext(t.Context(), "POST", ts.URL+"/v1/auth/login", strings.NewReader(`{"token": "`+tok+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	login.Host = "127.0.0.1:7420"
	resp, err := http.DefaultTransport.RoundTrip(login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Header)
	}
	cookie := cookies[0].Name + "=" + cookies[0].Value
	for _, tc := range []struct {
		name string
		hdr  http.Header
		want int
	}{
		{"nothing", nil, 401},
		{"a wrong token", http.Header{"Authorization": {"Bearer " + strings.Repeat("x", 40)}}, 401},
		{"the token", http.Header{"Authorization": {"Bearer " + tok}}, 200},
		{"the console's login", http.Header{"Cookie": {cookie}, "Sec-Fetch-Site": {"same-origin"}}, 200},
		{"the login, opened by the person", http.Header{"Cookie": {cookie}, "Sec-Fetch-Site": {"none"}}, 200},
		{"the login, from another site", http.Header{"Cookie": {cookie}, "Sec-Fetch-Site": {"cross-site"}}, 403},
	} {
		if got := do(tc.hdr); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	for _, rt := range srv.Routes() {
		if strings.Contains(rt.Pattern, "/apps/") && (rt.Public || rt.Admin) {
			t.Errorf("route %s: public %v, admin %v", rt.Pattern, rt.Public, rt.Admin)
		}
	}
}

// An app over its caps is never served: its activation fails.
func TestAppOverCapNotServed(t *testing.T) {
	srv, apps := webextServer(t)
	files := map[string]string{"index.html": strings.Repeat("x", webext.MaxAppBytes+1)}
	spec, _ := json.Marshal(webext.App{Title: "Big", Files: files})
	err := apps.Activate(t.Context(), &store.Extension{Type: "app", Name: "big", Spec: spec, Enabled: true, Version: 1, Provenance: store.ProvenanceUser})
	if err == nil {
		t.Fatal("an app over its cap activated")
	}
	if resp, _ := get(t, srv, "/apps/big/", nil); resp.StatusCode != 404 {
		t.Errorf("served: %d", resp.StatusCode)
	}
}
