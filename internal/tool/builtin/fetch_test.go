package builtin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/tool"
	"agentd/internal/tool/builtin"
)

// server is a test HTTP server that counts its requests.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

// newServer starts a server on addr ("" for 127.0.0.1 on any port).
func newServer(t *testing.T, addr string, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", addr, err)
		}
		s.Listener.Close()
		s.Listener = l
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *server) port() int { return s.Listener.Addr().(*net.TCPAddr).Port }

func fetchArgs(t *testing.T, args map[string]any) string {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFetch(t *testing.T) {
	blocked := newServer(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "internal secret")
	})
	srv := newServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/text":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "hello, world")
		case "/json":
			w.Header().Set("Content-Type", "application/problem+json")
			io.WriteString(w, `{"title":"ok"}`)
		case "/echo":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "%s %s ua=%q x=%q ct=%q body=%q", r.Method, r.URL.RequestURI(), r.UserAgent(),
				r.Header.Get("X-Test"), r.Header.Get("Content-Type"), body)
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 100)))
		case "/unlabelled-binary":
			w.Header()["Content-Type"] = nil // no sniffing by the server
			w.Write([]byte{0, 1, 2, 3, 0xff, 0xfe, 0})
		case "/unlabelled-text":
			w.Header()["Content-Type"] = nil
			io.WriteString(w, "just some words")
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/big":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, strings.Repeat("é", 20)) // 40 bytes
		case "/huge":
			// 300000 bytes of unknown length (chunked).
			w.Header().Set("Content-Type", "text/plain")
			for range 3 {
				io.WriteString(w, strings.Repeat("z", 100000))
				w.(http.Flusher).Flush()
			}
		case "/invalid-utf8":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("ok\xff\xfeok"))
		case "/missing":
			http.Error(w, "no such page", http.StatusNotFound)
		case "/redirect":
			http.Redirect(w, r, "/text", http.StatusMovedPermanently)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/to-blocked":
			http.Redirect(w, r, blocked.URL+"/", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/to-ftp":
			http.Redirect(w, r, "ftp://"+r.Host+"/", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	})
	r := newRegistry(t, &builtin.Options{AllowPrefixes: loopbackOnly()})
	small := newRegistry(t, &builtin.Options{AllowPrefixes: loopbackOnly(), FetchMaxBytes: 25})
	get := func(path string) string { return fetchArgs(t, map[string]any{"url": srv.URL + path}) }
	hostPort := strings.TrimPrefix(srv.URL, "http://")

	tests := []struct {
		name string
		args string
		want tool.Outcome
	}{
		{"text", get("/text"), ok("HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\nContent-Length: 12\n\nhello, world")},
		{"json", get("/json"), ok("HTTP 200 OK\nContent-Type: application/problem+json\nContent-Length: 14\n\n{\"title\":\"ok\"}")},
		{"explicit GET with headers", fetchArgs(t, map[string]any{"url": srv.URL + "/echo?q=1", "method": "GET", "headers": map[string]string{"X-Test": "yes", "User-Agent": "custom/1"}}),
			ok("HTTP 200 OK\nContent-Type: text/plain\nContent-Length: 49\n\nGET /echo?q=1 ua=\"custom/1\" x=\"yes\" ct=\"\" body=\"\"")},
		{"POST", fetchArgs(t, map[string]any{"url": srv.URL + "/echo", "method": "POST", "headers": map[string]string{"Content-Type": "application/json"}, "body": `{"a":1}`}),
			ok("HTTP 200 OK\nContent-Type: text/plain\nContent-Length: 77\n\nPOST /echo ua=\"agentd-http-fetch\" x=\"\" ct=\"application/json\" body=\"{\\\"a\\\":1}\"")},
		{"HEAD", fetchArgs(t, map[string]any{"url": srv.URL + "/text", "method": "HEAD"}),
			ok("HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\nContent-Length: 12\n")},
		{"binary", get("/png"), ok("HTTP 200 OK\nContent-Type: image/png\nContent-Length: 108\n\n[image/png content (108 bytes) not shown]")},
		{"sniffed binary", get("/unlabelled-binary"), ok("HTTP 200 OK\nContent-Length: 7\n\n[application/octet-stream content (7 bytes) not shown]")},
		{"sniffed text", get("/unlabelled-text"), ok("HTTP 200 OK\nContent-Length: 15\n\njust some words")},
		{"empty", get("/empty"), ok("HTTP 204 No Content\nContent-Length: 0\n\n(empty body)")},
		// The cap of 25 bytes falls inside the 13th "é".
		{"invalid UTF-8", get("/invalid-utf8"), ok("HTTP 200 OK\nContent-Type: text/plain\nContent-Length: 6\n\nok\uFFFDok")},
		{"not found", get("/missing"), ok("HTTP 404 Not Found\nContent-Type: text/plain; charset=utf-8\nContent-Length: 13\n\nno such page\n")},
		{"redirect", get("/redirect"), ok("HTTP 200 OK\nURL: " + srv.URL + "/text\nContent-Type: text/plain; charset=utf-8\nContent-Length: 12\n\nhello, world")},
		{"redirect loop", get("/loop"), fail(`Get "/loop": too many redirects: stopped after 5`)},
		{"redirect to a blocked address", get("/to-blocked"),
			fail(fmt.Sprintf(`Get "%s/": dial tcp %s: destination not allowed: 127.0.0.2 is a loopback address`, blocked.URL, blocked.Listener.Addr()))},
		{"redirect to metadata", get("/to-metadata"),
			fail(`Get "http://169.254.169.254/latest/meta-data/": dial tcp 169.254.169.254:80: destination not allowed: 169.254.169.254 is the cloud metadata address`)},
		{"redirect to file", get("/to-file"), fail(`Get "file:///etc/passwd": redirect: url not allowed: scheme "file" is not supported; use http or https`)},
		{"redirect to ftp", get("/to-ftp"), fail(fmt.Sprintf(`Get "ftp://%s/": redirect: url not allowed: scheme "ftp" is not supported; use http or https`, hostPort))},

		{"file URL", fetchArgs(t, map[string]any{"url": "file:///etc/passwd"}), fail(`url not allowed: scheme "file" is not supported; use http or https`)},
		{"credentials", fetchArgs(t, map[string]any{"url": "http://admin:pw@" + hostPort + "/text"}), fail(`url not allowed: user names and passwords in URLs are not allowed`)},
		{"no scheme", fetchArgs(t, map[string]any{"url": "example.com"}), fail(`url not allowed: "example.com" has no scheme; use http:// or https://`)},
		{"not a URL", fetchArgs(t, map[string]any{"url": "http://exa mple.com/"}), fail(`invalid url: invalid character " " in host name`)},
		{"body with GET", fetchArgs(t, map[string]any{"url": srv.URL + "/echo", "body": "x"}), fail(`a body can only be sent with POST, not GET`)},
		{"bad header name", fetchArgs(t, map[string]any{"url": srv.URL + "/echo", "headers": map[string]string{"Bad Header": "x"}}),
			fail(fmt.Sprintf(`Get "%s/echo": net/http: invalid header field name "Bad Header"`, srv.URL))},

		{"missing url", `{}`, fail(`invalid arguments for http_fetch: required: missing properties: ["url"]`)},
		{"unknown method", fetchArgs(t, map[string]any{"url": srv.URL, "method": "DELETE"}),
			fail(`invalid arguments for http_fetch: property "method": enum: DELETE does not equal any of: [GET POST HEAD]`)},
		{"header of the wrong type", fetchArgs(t, map[string]any{"url": srv.URL, "headers": map[string]any{"X-N": 1}}),
			fail(`invalid arguments for http_fetch: property "headers.*": type: 1 has type "integer", want "string"`)},
		{"unknown argument", fetchArgs(t, map[string]any{"url": srv.URL, "timeout": 5}),
			fail(`invalid arguments for http_fetch: unexpected additional properties ["timeout"]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, run(t, r, "http_fetch", tt.args), ignoreDuration); diff != "" {
				t.Errorf("http_fetch %s (-want +got):\n%s", tt.args, diff)
			}
		})
	}

	// With a 25-byte cap, which falls inside the 13th "é" of /big: the
	// note counts the 16 bytes left unread.
	bigHead := "HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\nContent-Length: 40\n\n"
	if diff := cmp.Diff(tool.Outcome{Result: tool.Result{Output: bigHead + strings.Repeat("é", 12) + fmt.Sprintf("\n[output truncated: 16 of %d bytes cut]", len(bigHead)+40)}, Truncated: true},
		run(t, small, "http_fetch", get("/big")), ignoreDuration); diff != "" {
		t.Errorf("http_fetch /big with a 25-byte cap (-want +got):\n%s", diff)
	}
	want := "HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\nContent-Length: 12\n\nhello, world"
	if diff := cmp.Diff(ok(want), run(t, small, "http_fetch", get("/text")), ignoreDuration); diff != "" {
		t.Errorf("http_fetch /text with a 25-byte cap (-want +got):\n%s", diff)
	}
	// A body longer than the call's output cap is read no further than
	// the cap; one of unknown length is counted for the note.
	hugeHead := "HTTP 200 OK\nContent-Type: text/plain\n\n"
	got := r.Run(t.Context(), &tool.Call{Name: "http_fetch", Args: json.RawMessage(get("/huge"))}, &tool.RunOptions{MaxOutputBytes: 1000})
	want = hugeHead + strings.Repeat("z", 1000-len(hugeHead)) + fmt.Sprintf("\n[output truncated: %d of %d bytes cut]", 300000-(1000-len(hugeHead)), len(hugeHead)+300000)
	if diff := cmp.Diff(tool.Outcome{Result: tool.Result{Output: want}, Truncated: true}, got, ignoreDuration); diff != "" {
		t.Errorf("http_fetch /huge with a 1000-byte output cap (-want +got):\n%s", diff)
	}
	if n := blocked.hits.Load(); n != 0 {
		t.Errorf("the server on 127.0.0.2 was reached %d times", n)
	}
}

// TestFetchGuard tries to reach a server on loopback in every way the URL
// parser and the resolver might accept, with no address range allowed.
// None may reach it.
func TestFetchGuard(t *testing.T) {
	srv := newServer(t, "", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") })
	r := newRegistry(t, nil)
	p := srv.port()
	tests := []struct {
		url string
		// blocked: the dialer must refuse it; otherwise the resolver may
		// also reject the name (and does, with Go's resolver).
		blocked bool
	}{
		{fmt.Sprintf("http://127.0.0.1:%d/", p), true},
		{fmt.Sprintf("http://localhost:%d/", p), true},
		{fmt.Sprintf("http://LocalHost:%d/", p), true},
		{fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", p), true},
		{fmt.Sprintf("http://[::ffff:7f00:1]:%d/", p), true},
		{fmt.Sprintf("http://[::1]:%d/", p), true},
		{fmt.Sprintf("http://0.0.0.0:%d/", p), true},
		{fmt.Sprintf("http://[::]:%d/", p), true},
		{fmt.Sprintf("http://2130706433:%d/", p), false},
		{fmt.Sprintf("http://0x7f.1:%d/", p), false},
		{fmt.Sprintf("http://0x7f000001:%d/", p), false},
		{fmt.Sprintf("http://0177.0.0.1:%d/", p), false},
		{fmt.Sprintf("http://127.1:%d/", p), false},
		{fmt.Sprintf("https://127.0.0.1:%d/", p), true},
		{"http://169.254.169.254/latest/meta-data/", true},
		{"http://[fd00:ec2::254]/latest/meta-data/", true},
		{"http://10.0.0.1/", true},
		{"http://192.168.1.1/", true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			out := run(t, r, "http_fetch", fetchArgs(t, map[string]any{"url": tt.url}))
			if !out.Result.IsError {
				t.Fatalf("fetching %s succeeded: %q", tt.url, out.Result.Output)
			}
			isBlocked := strings.Contains(out.Result.Output, "destination not allowed")
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			unresolved := strings.Contains(out.Result.Output, "lookup "+u.Hostname())
			if !isBlocked && (tt.blocked || !unresolved) {
				t.Errorf("fetching %s: %q; want it refused by the guard", tt.url, out.Result.Output)
			}
		})
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}

func TestFetchIgnoresProxyEnvironment(t *testing.T) {
	proxy := newServer(t, "", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "via proxy") })
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	// The proxy on 127.0.0.1 is reachable; the private target is not. Had
	// the proxy been used, the fetch would have succeeded through it.
	r := newRegistry(t, &builtin.Options{AllowPrefixes: loopbackOnly()})
	out := run(t, r, "http_fetch", `{"url":"http://10.255.255.1/"}`)
	want := fail(`Get "http://10.255.255.1/": dial tcp 10.255.255.1:80: destination not allowed: 10.255.255.1 is a private address`)
	if diff := cmp.Diff(want, out, ignoreDuration); diff != "" {
		t.Errorf("http_fetch (-want +got):\n%s", diff)
	}
	if n := proxy.hits.Load(); n != 0 {
		t.Errorf("the proxy was used %d times", n)
	}
}

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	r := newRegistry(t, &builtin.Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, FetchTimeout: 50 * time.Millisecond})
	out := run(t, r, "http_fetch", fetchArgs(t, map[string]any{"url": srv.URL}))
	want := fail(fmt.Sprintf(`Get "%s": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, srv.URL))
	if diff := cmp.Diff(want, out, ignoreDuration); diff != "" {
		t.Errorf("http_fetch (-want +got):\n%s", diff)
	}
}
