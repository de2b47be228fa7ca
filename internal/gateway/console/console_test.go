package console_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/gateway/console"
	"agentd/internal/store"
)

// get serves one request to a new handler.
func get(t testing.TB, h http.Handler, method, target string, hdr ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, "http://agentd.test/", nil)
	r.URL.Path = target // as the mux hands it on: not cleaned here
	r.URL.RawPath = ""
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t testing.TB, res *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func staticFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("static", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// versioned returns the asset prefix index.html names.
func versioned(t testing.TB, h http.Handler) string {
	t.Helper()
	m := regexp.MustCompile(`/console/v-[0-9a-f]{12}/`).FindString(body(t, get(t, h, "GET", "/")))
	if m == "" {
		t.Fatal("index.html names no versioned asset prefix")
	}
	return m
}

func TestContentTypesAndCaching(t *testing.T) {
	h := console.Handler(nil)
	v := versioned(t, h)
	for _, tc := range []struct {
		path, ctype, cache string
	}{
		{"/", "text/html; charset=utf-8", "no-cache"},
		{v + "app.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable"},
		{v + "md.js", "text/javascript; charset=utf-8", "public, max-age=31536000, immutable"},
		{v + "app.css", "text/css; charset=utf-8", "public, max-age=31536000, immutable"},
		{v + "icon.svg", "image/svg+xml", "public, max-age=31536000, immutable"},
		{"/console/app.js", "text/javascript; charset=utf-8", "no-cache"},
		{"/console/app.css", "text/css; charset=utf-8", "no-cache"},
	} {
		res := get(t, h, "GET", tc.path)
		if res.StatusCode != 200 {
			t.Errorf("%s: status %d", tc.path, res.StatusCode)
			continue
		}
		got := []string{res.Header.Get("Content-Type"), res.Header.Get("Cache-Control")}
		if diff := cmp.Diff([]string{tc.ctype, tc.cache}, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.path, diff)
		}
		if res.Header.Get("ETag") == "" {
			t.Errorf("%s: no ETag", tc.path)
		}
	}
	// Every file the page loads is served from this build's prefix.
	idx := body(t, get(t, h, "GET", "/"))
	if strings.Contains(idx, "{{") {
		t.Errorf("index.html keeps a placeholder:\n%s", idx)
	}
	for _, m := range regexp.MustCompile(`(?:href|src)="([^"]+)"`).FindAllStringSubmatch(idx, -1) {
		if !strings.HasPrefix(m[1], v) {
			t.Errorf("index.html loads %s, outside %s", m[1], v)
		}
		if res := get(t, h, "GET", m[1]); res.StatusCode != 200 {
			t.Errorf("%s: status %d", m[1], res.StatusCode)
		}
	}
	// Every module another one imports is served.
	for _, name := range jsFiles(t) {
		for _, m := range regexp.MustCompile(`from '\./([a-z]+\.js)'`).FindAllStringSubmatch(staticFile(t, name), -1) {
			if res := get(t, h, "GET", v+m[1]); res.StatusCode != 200 {
				t.Errorf("%s imports %s: status %d", name, m[1], res.StatusCode)
			}
		}
	}
}

func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	h := console.Handler(nil)
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/", 200},
		{"HEAD", "/", 200},
		{"GET", "/console/app.js", 200},
		{"GET", "/console/nope.js", 404},
		{"POST", "/", 405},
		{"PUT", "/console/app.js", 405},
	} {
		res := get(t, h, tc.method, tc.path)
		if res.StatusCode != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, res.StatusCode, tc.status)
		}
		csp := res.Header.Get("Content-Security-Policy")
		for _, d := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'",
			"img-src 'self' data:", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, d+";") && !strings.HasSuffix(csp, d) {
				t.Errorf("%s %s: CSP %q lacks %q", tc.method, tc.path, csp, d)
			}
		}
		if strings.Contains(csp, "unsafe") || strings.Contains(csp, "*") || strings.Contains(csp, "http") {
			t.Errorf("CSP allows too much: %q", csp)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
			if got := res.Header.Get(k); got != want {
				t.Errorf("%s %s: %s = %q, want %q", tc.method, tc.path, k, got, want)
			}
		}
	}
	if res := get(t, h, "HEAD", "/"); body(t, res) != "" {
		t.Error("HEAD answered with a body")
	}
}

func TestOnlyEmbeddedFilesAreServed(t *testing.T) {
	h := console.Handler(nil)
	v := versioned(t, h)
	for _, p := range []string{
		"/console/nope.js",
		"/console/",
		"/console",
		"/console/index.html", // the page is only at /
		"/console/static/app.js",
		"/console/../console.go",
		"/console/../../go.mod",
		"/console/%2e%2e/console.go",
		"/console/..%2fconsole.go",
		"/console/./app.js",
		"/console//app.js",
		"/console/app.js/",
		"/console/APP.JS",
		"/console/app.js\x00.png",
		"/console/testdata/md.test.mjs",
		"/console/console.go",
		"/console/v-000000000000/app.js", // another build
		v + "../console.go",
		v + "index.html",
		v,
		"/console/v-/app.js",
		"/index.html",
		"/app.js",
		"/etc/passwd",
		"//console/app.js",
	} {
		res := get(t, h, "GET", p)
		if b := body(t, res); res.StatusCode != 404 {
			t.Errorf("%q: status %d (%.60q), want 404", p, res.StatusCode, b)
		}
	}
}

// TestThroughTheMux serves the handler as the gateway mounts it, so that
// the paths a browser can send are cleaned as in production.
func TestThroughTheMux(t *testing.T) {
	mux := http.NewServeMux()
	h := console.Handler(nil)
	mux.Handle("GET /{$}", h)
	mux.Handle("GET /console/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/", 200},
		{"/?server=http://evil.example", 200},
		{"/console/app.js", 200},
		{"/console/../console/app.js", 307}, // the mux cleans the path and redirects to it
		{"/console/%2e%2e/console.go", 404},
		{"/console/..%2f..%2fgo.mod", 404},
		{"/console/app.js?v=1", 200},
		{"/console/nope", 404},
	} {
		req, _ := http.NewRequest("GET", srv.URL+tc.path, nil)
		req.URL.Opaque = tc.path // as sent, not re-encoded
		if i := strings.IndexByte(tc.path, '?'); i >= 0 {
			req.URL.Opaque, req.URL.RawQuery = tc.path[:i], tc.path[i+1:]
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.path, res.StatusCode, tc.status)
		}
		if res.StatusCode == 200 && bytes.Contains(b, []byte("package console")) {
			t.Errorf("%s: served Go source", tc.path)
		}
	}
	// The page is the same whatever its query says.
	a := body(t, get(t, h, "GET", "/"))
	res, _ := c.Get(srv.URL + "/?server=http://evil.example&api=//evil.example")
	if b := body(t, res); b != a {
		t.Error("the query changed the page")
	}
}

func TestRevalidationAndCompression(t *testing.T) {
	h := console.Handler(nil)
	res := get(t, h, "GET", "/console/app.js")
	tag := res.Header.Get("ETag")
	plain := body(t, res)
	if plain != staticFile(t, "app.js") {
		t.Fatal("app.js differs from the file")
	}
	for _, inm := range []string{tag, "W/" + tag, `"x", ` + tag, "*"} {
		if r := get(t, h, "GET", "/console/app.js", "If-None-Match", inm); r.StatusCode != 304 || body(t, r) != "" {
			t.Errorf("If-None-Match %s: status %d", inm, r.StatusCode)
		}
	}
	if r := get(t, h, "GET", "/console/app.js", "If-None-Match", `"other"`); r.StatusCode != 200 {
		t.Errorf("a stale ETag: status %d", r.StatusCode)
	}
	gz := get(t, h, "GET", "/console/app.js", "Accept-Encoding", "br, gzip;q=0.8")
	if gz.Header.Get("Content-Encoding") != "gzip" || gz.Header.Get("ETag") == tag || !strings.Contains(gz.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("gzip: headers %v", gz.Header)
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); string(b) != plain {
		t.Error("gzip body differs")
	}
	if r := get(t, h, "GET", "/console/app.js", "If-None-Match", gz.Header.Get("ETag"), "Accept-Encoding", "gzip"); r.StatusCode != 304 {
		t.Errorf("gzip revalidation: status %d", r.StatusCode)
	}
	for _, ae := range []string{"gzip;q=0", "identity", "", "gzipx"} {
		if r := get(t, h, "GET", "/console/app.js", "Accept-Encoding", ae); r.Header.Get("Content-Encoding") != "" {
			t.Errorf("Accept-Encoding %q: compressed", ae)
		}
	}
}

func jsFiles(t testing.TB) []string {
	t.Helper()
	var out []string
	fs.WalkDir(os.DirFS("static"), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".js") {
			out = append(out, p)
		}
		return nil
	})
	if len(out) < 5 {
		t.Fatalf("found only %v", out)
	}
	return out
}

// TestNoServerAddressFromThePage reads the scripts: the API base is the
// page's own origin, never something read from its address; nothing is
// written as HTML; nothing is loaded from elsewhere.
func TestNoServerAddressFromThePage(t *testing.T) {
	forbidden := []string{
		"location.search", "location.href", "location.origin", "document.URL", "document.location", "document.referrer",
		"window.name", "URLSearchParams(location", "document.baseURI", "location.assign", "location.replace",
		"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setTimeout('", "srcdoc",
		"postMessage", "importScripts", "import(",
	}
	// Where the hash may be read: the router, and the login's return.
	hashReaders := map[string]bool{"app.js": true, "chat.js": true, "screens.js": true, "ext.js": true}
	for _, name := range jsFiles(t) {
		src := staticFile(t, name)
		if name == "dom.js" {
			// dom.js names them only to refuse them.
			src = regexp.MustCompile(`(?m)^.*is not set here.*$`).ReplaceAllString(src, "")
		}
		for _, f := range forbidden {
			if strings.Contains(src, f) {
				t.Errorf("%s uses %s", name, f)
			}
		}
		if strings.Contains(src, "location.hash") && !hashReaders[name] {
			t.Errorf("%s reads location.hash", name)
		}
		if n := strings.Count(src, "fetch("); n > 0 && name != "api.js" {
			t.Errorf("%s calls fetch itself; requests go through api.js", name)
		}
		if strings.Contains(src, "new WebSocket(") && !strings.Contains(src, "location.host + '/v1/stream'") {
			t.Errorf("%s opens a WebSocket to somewhere else than this origin", name)
		}
	}
	// The hash readers only read it as a route.
	for name := range hashReaders {
		for _, line := range strings.Split(staticFile(t, name), "\n") {
			if strings.Contains(line, "location.hash") && !regexp.MustCompile(`parseRoute\(location\.hash\)|location\.hash = routeHash\(|location\.hash !== (want|'#/login')|returnTo = location\.hash`).MatchString(line) {
				t.Errorf("%s: location.hash used as more than a route: %s", name, strings.TrimSpace(line))
			}
		}
	}
	api := staticFile(t, "api.js")
	if !strings.Contains(api, "!p.startsWith('/v1/')") || !strings.Contains(api, "credentials: 'same-origin'") {
		t.Error("api.js no longer refuses paths outside /v1/ or sends credentials elsewhere")
	}
}

func TestNothingFromElsewhere(t *testing.T) {
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	files, _ := fs.Glob(os.DirFS("static"), "*")
	for _, name := range files {
		src := staticFile(t, name)
		for _, m := range url.FindAllString(src, -1) {
			if m != "http://www.w3.org" { // the SVG namespace, not a request
				t.Errorf("%s names %s", name, m)
			}
		}
		if strings.HasSuffix(name, ".css") && (strings.Contains(src, "@import") || strings.Contains(src, "@font-face")) {
			t.Errorf("%s loads something", name)
		}
	}
	idx := staticFile(t, "index.html")
	for _, bad := range []string{"<script>", " style=", "<style", " on"} {
		if strings.Contains(strings.ReplaceAll(idx, "<script type=\"module\" src=", ""), bad) {
			t.Errorf("index.html has inline %q", bad)
		}
	}
}

// TestMarkdownAndHelpers runs the JavaScript unit tests (node:test, no
// packages) when node is here.
func TestMarkdownAndHelpers(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatal("node is needed for the console's JavaScript tests")
		}
		t.Skip("skipping: no node")
	}
	tests, err := filepath.Glob(filepath.Join("testdata", "*.test.mjs"))
	if err != nil || len(tests) < 2 {
		t.Fatalf("testdata holds the tests %v (%v)", tests, err)
	}
	cmd := exec.Command(node, append([]string{"--test"}, tests...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("# fail 0")) {
		t.Fatalf("node --test:\n%s", out)
	}
}

// FuzzPath serves any path: the answer is one of the embedded files or a
// 404, never anything else.
func FuzzPath(f *testing.F) {
	h := console.Handler(nil)
	v := versioned(f, h)
	for _, s := range []string{"/", "/console/app.js", v + "app.css", "/console/../x", "/console/v-/a", "/console//", "/console/\x00", v} {
		f.Add(s)
	}
	files := map[string]bool{}
	names, _ := fs.Glob(os.DirFS("static"), "*")
	for _, n := range names {
		files[staticFile(f, n)] = true
	}
	index := body(f, get(f, h, "GET", "/"))
	f.Fuzz(func(t *testing.T, p string) {
		res := get(t, h, "GET", p)
		b := body(t, res)
		switch res.StatusCode {
		case 200:
			if !files[b] && b != index {
				t.Fatalf("%q: served something that is not an embedded file", p)
			}
		case 404:
		default:
			t.Fatalf("%q: status %d", p, res.StatusCode)
		}
		if res.Header.Get("Content-Security-Policy") != console.CSP {
			t.Fatalf("%q: no CSP", p)
		}
	})
}

// The sessions screen's state filter offers the states the store has.
func TestSessionStatesMatchTheStore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("static", "screens.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const STATES = \[([^\]]*)\];`).FindSubmatch(b)
	if m == nil {
		t.Fatal("screens.js has no STATES list")
	}
	var got []string
	for _, s := range strings.Split(string(m[1]), ",") {
		got = append(got, strings.Trim(strings.TrimSpace(s), `'"`))
	}
	if diff := cmp.Diff(store.States(), got); diff != "" {
		t.Errorf("screens.js STATES (-store +console):\n%s", diff)
	}
}
