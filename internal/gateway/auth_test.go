package gateway_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"agentd/internal/gateway"
)

// authTokens makes a token file in a new data directory.
func authTokens(t testing.TB) (*gateway.Tokens, string) {
	t.Helper()
	dir := t.TempDir()
	tk, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tk.Token()
	if err != nil {
		t.Fatal(err)
	}
	return tk, tok
}

// cookieFor is a console cookie value made with token, issued now, as
// docs/api.md describes it: "<issued unix>.<nonce>.<hex HMAC-SHA256 keyed
// with the token over agentd-console-v1|issued|nonce>".
func cookieFor(token string) string { return cookieAt(token, time.Now()) }

func cookieAt(token string, issued time.Time) string {
	at := strconv.FormatInt(issued.Unix(), 10)
	nonce := "00112233445566778899aabbccddeeff"
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("agentd-console-v1|" + at + "|" + nonce))
	return at + "." + nonce + "." + hex.EncodeToString(m.Sum(nil))
}

// authServer is a bare API (no runtime: /v1/version and /healthz answer)
// behind Protect, served over TCP. seen gets the headers of each request
// that reaches the stream handler at GET /v1/stream.
type authServer struct {
	*httptest.Server
	handler http.Handler // the same, for requests no client would send
	tokens  *gateway.Tokens
	token   string
	mu      sync.Mutex
	seen    []http.Header
}

func newAuthServer(t *testing.T, o *gateway.AuthOptions) *authServer {
	t.Helper()
	tk, tok := authTokens(t)
	a := &authServer{tokens: tk, token: tok}
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.Header.Clone())
		a.mu.Unlock()
		if r.Header.Get("Upgrade") == "" {
			w.Write([]byte(`{"stream":true}`))
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		typ, msg, err := c.Read(r.Context())
		if err != nil {
			return
		}
		c.Write(r.Context(), typ, append([]byte("echo: "), msg...))
		c.Close(websocket.StatusNormalClosure, "")
	})
	srv := gateway.New(&gateway.Options{Version: "v9", Stream: stream})
	var opts gateway.AuthOptions
	if o != nil {
		opts = *o
	}
	opts.Tokens = tk
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:7420"
	}
	a.handler = srv.Protect(&opts)
	a.Server = httptest.NewServer(a.handler)
	t.Cleanup(a.Close)
	return a
}

type authResp struct {
	status int
	header http.Header
	body   string
}

// do sends a request with the given headers ("Host" sets the Host).
func (a *authServer) do(t *testing.T, method, path string, hdr map[string][]string, body string) authResp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, a.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		if k == "Host" {
			req.Host = vs[0]
			continue
		}
		req.Header[k] = vs
	}
	resp, err := a.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return authResp{resp.StatusCode, resp.Header, string(b)}
}

// refusal checks that r is a JSON error with status and code, and that it
// shows no secret.
func refusal(t *testing.T, what string, r authResp, status int, code string, secrets ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d (%s)", what, r.status, status, r.body)
		return
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: content type %q", what, ct)
	}
	var e gateway.Error
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" || e.Code != code {
		t.Errorf("%s: body %q (%v), want code %q", what, r.body, err, code)
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(r.body, s) {
			t.Errorf("%s: body shows a secret: %s", what, r.body)
		}
	}
}

func h(kv ...string) map[string][]string {
	m := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = append(m[kv[i]], kv[i+1])
	}
	return m
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// Every way around the token that we could think of is refused.
func TestProtectRefusesBypass(t *testing.T) {
	a := newAuthServer(t, nil)
	tok, cookie := a.token, cookieFor(a.token)
	other := gateway.NewToken()

	ok := []struct {
		name, method, path string
		hdr                map[string][]string
	}{
		{"bearer", "GET", "/v1/version", h("Authorization", "Bearer "+tok)},
		{"bearer scheme in lower case", "GET", "/v1/version", h("Authorization", "bearer "+tok)},
		{"cookie", "GET", "/v1/version", h("Cookie", "agentd_console="+cookie)},
		{"cookie among others", "GET", "/v1/version", h("Cookie", "a=b; agentd_console="+cookie+"; c=d")},
		{"same-origin page with cookie", "POST", "/v1/nothing", h("Cookie", "agentd_console="+cookie, "Origin", a.URL)},
	}
	for _, tt := range ok {
		r := a.do(t, tt.method, tt.path, tt.hdr, "")
		if r.status == http.StatusUnauthorized || r.status == http.StatusForbidden || r.status == http.StatusTooManyRequests {
			t.Errorf("%s: refused: %d %s", tt.name, r.status, r.body)
		}
	}

	refused := []struct {
		name, method, path string
		hdr                map[string][]string
	}{
		{"no token", "GET", "/v1/version", nil},
		{"wrong token", "GET", "/v1/version", h("Authorization", "Bearer "+other)},
		{"token with a character more", "GET", "/v1/version", h("Authorization", "Bearer "+tok+"x")},
		{"token with a character less", "GET", "/v1/version", h("Authorization", "Bearer "+tok[:len(tok)-1])},
		{"token prefix", "GET", "/v1/version", h("Authorization", "Bearer "+tok[:24])},
		{"empty bearer", "GET", "/v1/version", h("Authorization", "Bearer ")},
		{"two spaces", "GET", "/v1/version", h("Authorization", "Bearer  "+tok)},
		{"no scheme", "GET", "/v1/version", h("Authorization", tok)},
		{"other scheme", "GET", "/v1/version", h("Authorization", "Token "+tok)},
		{"basic with the token as password", "GET", "/v1/version", h("Authorization", basic("agentd", tok))},
		{"basic with the token as user", "GET", "/v1/version", h("Authorization", basic(tok, ""))},
		{"two authorization headers", "GET", "/v1/version", h("Authorization", "Bearer "+other, "Authorization", "Bearer "+tok)},
		{"two authorization headers, right first", "GET", "/v1/version", h("Authorization", "Bearer "+tok, "Authorization", "Bearer "+other)},
		{"token in the query", "GET", "/v1/version?token=" + tok, nil},
		{"access_token in the query", "GET", "/v1/version?access_token=" + tok, nil},
		{"token in another header", "GET", "/v1/version", h("X-Agentd-Token", tok, "X-Api-Key", tok)},
		{"token as the cookie", "GET", "/v1/version", h("Cookie", "agentd_console="+tok)},
		{"forged cookie", "GET", "/v1/version", h("Cookie", "agentd_console="+cookieFor(other))},
		{"cookie of another message", "GET", "/v1/version", h("Cookie", "agentd_console="+hex.EncodeToString(sha256.New().Sum([]byte(tok))))},
		{"cookie under another name", "GET", "/v1/version", h("Cookie", "agentd="+cookie)},
		{"wrong bearer beats a good cookie", "GET", "/v1/version", h("Authorization", "Bearer "+other, "Cookie", "agentd_console="+cookie)},
		{"stream", "GET", "/v1/stream", nil},
		{"websocket upgrade", "GET", "/v1/stream", h("Connection", "Upgrade", "Upgrade", "websocket", "Sec-Websocket-Version", "13", "Sec-Websocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")},
		{"metrics", "GET", "/metrics", nil},
		{"mcp", "POST", "/mcp", nil},
		{"unknown route", "GET", "/v1/nothing-here", nil},
		{"healthz by POST", "POST", "/healthz", nil},
		{"login by GET", "GET", "/v1/auth/login", nil},
		{"options without origin", "OPTIONS", "/v1/version", nil},
		{"dot segments through the console", "GET", "/console/../v1/version", nil},
		{"escaped dot segments", "GET", "/console/%2e%2e/v1/version", nil},
		{"escaped slash", "GET", "/console/..%2fv1%2fversion", nil},
		{"dot segments through healthz", "GET", "/healthz/../v1/version", nil},
		{"dot segment", "GET", "/./v1/version", nil},
		{"double slash", "GET", "//v1/version", nil},
		{"console prefix lookalike", "GET", "/consolex/../v1/version", nil},
		{"escaped healthz", "GET", "/%68ealthz", nil},
	}
	for _, tt := range refused {
		r := a.do(t, tt.method, tt.path, tt.hdr, "")
		refusal(t, tt.name, r, http.StatusUnauthorized, "unauthorized", tok, cookie)
		if r.status == http.StatusUnauthorized && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", tt.name, r.header.Get("WWW-Authenticate"))
		}
	}

	// Public without the token: health and the console's files (none are
	// served here: 404, not 401).
	for _, p := range []string{"/healthz", "/", "/console/app.js"} {
		if r := a.do(t, "GET", p, nil, ""); r.status == http.StatusUnauthorized {
			t.Errorf("GET %s: 401", p)
		}
	}
}

// The handler behind Protect never sees the token: not the header, not
// the cookie; other cookies pass.
func TestProtectStripsCredentials(t *testing.T) {
	a := newAuthServer(t, nil)
	a.do(t, "GET", "/v1/stream", h("Authorization", "Bearer "+a.token), "")
	a.do(t, "GET", "/v1/stream", h("Cookie", "theme=dark; agentd_console="+cookieFor(a.token)), "")
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) != 2 {
		t.Fatalf("stream handler saw %d requests, want 2", len(a.seen))
	}
	for i, hd := range a.seen {
		for k, vs := range hd {
			for _, v := range vs {
				if strings.Contains(v, a.token) || strings.Contains(v, cookieFor(a.token)) {
					t.Errorf("request %d: header %s carries the credential", i, k)
				}
			}
		}
	}
	if got := a.seen[1].Get("Cookie"); got != "theme=dark" {
		t.Errorf("other cookies: %q, want theme=dark", got)
	}
}

// DNS rebinding: a page on evil.example resolves its name to 127.0.0.1;
// the request then carries Host: evil.example and is refused.
func TestProtectHost(t *testing.T) {
	loopback := newAuthServer(t, nil)
	wildcard := newAuthServer(t, &gateway.AuthOptions{Listen: "0.0.0.0:7420"})
	named := newAuthServer(t, &gateway.AuthOptions{Listen: "agentd.lan:7420", AllowedHosts: []string{"Agentd.Example.com", "::1", "not a host"}})
	tests := []struct {
		a    *authServer
		host string
		ok   bool
	}{
		{loopback, "localhost", true},
		{loopback, "localhost:7420", true},
		{loopback, "LOCALHOST:1", true},
		{loopback, "127.0.0.1:7420", true},
		{loopback, "[::1]:7420", true},
		{loopback, "[::1]", true},
		{loopback, "evil.example", false},
		{loopback, "evil.example:7420", false},
		{loopback, "localhost.evil.com", false},
		{loopback, "localhost.evil.com:7420", false},
		{loopback, "127.0.0.1.nip.io", false},
		{loopback, "127.0.0.1.nip.io:7420", false},
		{loopback, "evil.localhost", false},
		{loopback, "evillocalhost", false},
		{loopback, "localhost.", false},
		{loopback, "127.1", false},
		{loopback, "2130706433", false},
		{loopback, "0x7f000001", false},
		{loopback, "127.0.0.2", false},
		{loopback, "0.0.0.0", false},
		{loopback, "10.0.0.1", false},
		{loopback, "localhost@evil.com", false},
		{loopback, "localhost:7420@evil.com", false},
		{loopback, "localhost:http", false},
		{loopback, "localhost:", false},
		{loopback, ":7420", false},
		{loopback, "localhost:80:81", false},
		{loopback, "localhost:99999", false},
		{loopback, "[::1]evil", false},
		{loopback, "[::2]", false},
		{loopback, "[::1", false},
		{loopback, "[::ffff:127.0.0.1]", false},
		{loopback, "", false},
		{loopback, "agentd.example.com", false},

		{wildcard, "192.168.1.20:7420", true},
		{wildcard, "10.0.0.1", true},
		{wildcard, "[fe80::1]:7420", true},
		{wildcard, "[2001:db8::1]", true},
		{wildcard, "localhost", true},
		{wildcard, "evil.example", false},
		{wildcard, "127.0.0.1.nip.io", false},
		{wildcard, "10.0.0.1.nip.io", false},
		{wildcard, "1.2.3", false},
		{wildcard, "0300.0250.0001.0024", false},
		{wildcard, "[fe80::1%25eth0]", false},

		{named, "agentd.lan:7420", true},
		{named, "agentd.example.com", true},
		{named, "AGENTD.EXAMPLE.COM:443", true},
		{named, "[::1]:9", true},
		{named, "agentd.example.com.evil.com", false},
		{named, "evil-agentd.example.com", false},
		{named, "192.168.1.20", false},
		{named, "not a host", false},
	}
	for _, tt := range tests {
		for _, hdr := range []map[string][]string{
			h("Host", tt.host, "Authorization", "Bearer "+tt.a.token),
			h("Host", tt.host, "Cookie", "agentd_console="+cookieFor(tt.a.token)),
		} {
			r := tt.a.direct("GET", "/v1/version", hdr)
			if tt.ok {
				if r.status != 200 {
					t.Errorf("Host %q: %d %s, want 200", tt.host, r.status, r.body)
				}
				continue
			}
			refusal(t, fmt.Sprintf("Host %q", tt.host), r, http.StatusForbidden, "forbidden", tt.a.token)
		}
		// Public paths are no exception.
		if !tt.ok {
			refusal(t, fmt.Sprintf("healthz with Host %q", tt.host), tt.a.direct("GET", "/healthz", h("Host", tt.host)), http.StatusForbidden, "forbidden")
		}
	}
	// And over the wire.
	for _, host := range []string{"evil.example", "localhost.evil.com:7420", "127.0.0.1.nip.io"} {
		r := loopback.do(t, "GET", "/v1/version", h("Host", host, "Authorization", "Bearer "+loopback.token), "")
		refusal(t, "over TCP, Host "+host, r, http.StatusForbidden, "forbidden", loopback.token)
	}
}

// direct serves a request without a connection, so that any Host (even
// one no client would send, or none) can be tried.
func (a *authServer) direct(method, path string, hdr map[string][]string) authResp {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = "127.0.0.1:1"
	for k, vs := range hdr {
		if k == "Host" {
			r.Host = vs[0]
			continue
		}
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	a.handler.ServeHTTP(w, r)
	return authResp{w.Code, w.Result().Header, w.Body.String()}
}

// A page on another origin cannot use the API, with the token or the
// console's cookie; the page's own origin can.
func TestProtectOrigin(t *testing.T) {
	a := newAuthServer(t, nil)
	port := a.URL[strings.LastIndexByte(a.URL, ':')+1:]
	bearer, cookie := "Bearer "+a.token, "agentd_console="+cookieFor(a.token)
	tests := []struct {
		origin string
		host   string
		ok     bool
	}{
		{a.URL, "", true},
		{"http://localhost:" + port, "localhost:" + port, true},
		{"HTTP://LOCALHOST:" + port, "localhost:" + port, true},
		{"https://localhost", "localhost", true}, // a TLS proxy in front
		{"http://localhost:80", "localhost", true},
		{"http://localhost", "localhost:" + port, false},
		{"http://localhost:1" + port, "localhost:" + port, false},
		{"http://127.0.0.1:" + port, "localhost:" + port, false},
		{"http://evil.example", "", false},
		{"http://localhost.evil.com:" + port, "", false},
		{"http://127.0.0.1." + port + ".nip.io", "", false},
		{"null", "", false},
		{"", "", false},
		{"file://", "", false},
		{a.URL + "/path", "", false},
		{"http://user@127.0.0.1:" + port, "", false},
	}
	for _, tt := range tests {
		for _, cred := range []map[string][]string{h("Authorization", bearer), h("Cookie", cookie)} {
			cred["Origin"] = []string{tt.origin}
			if tt.host != "" {
				cred["Host"] = []string{tt.host}
			}
			for _, m := range []string{"GET", "POST"} {
				r := a.do(t, m, "/v1/version", cred, "")
				if tt.ok {
					if r.status == http.StatusForbidden || r.status == http.StatusUnauthorized {
						t.Errorf("%s Origin %q Host %q: %d %s", m, tt.origin, tt.host, r.status, r.body)
					}
					continue
				}
				refusal(t, fmt.Sprintf("%s Origin %q", m, tt.origin), r, http.StatusForbidden, "forbidden", a.token)
			}
		}
	}
	// Two Origin headers, one good.
	refusal(t, "two origins", a.do(t, "GET", "/v1/version", h("Origin", a.URL, "Origin", "http://evil.example", "Authorization", bearer), ""), http.StatusForbidden, "forbidden")
	// A cross-site request with the cookie, as browsers mark it.
	refusal(t, "cross-site cookie", a.do(t, "POST", "/v1/version", h("Cookie", cookie, "Sec-Fetch-Site", "cross-site"), ""), http.StatusForbidden, "forbidden")
	if r := a.do(t, "GET", "/v1/version", h("Cookie", cookie, "Sec-Fetch-Site", "same-origin"), ""); r.status != 200 {
		t.Errorf("same-origin cookie: %d", r.status)
	}
}

func TestProtectCORS(t *testing.T) {
	preflight := func(origin string) map[string][]string {
		return h("Origin", origin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization, content-type")
	}
	t.Run("off by default", func(t *testing.T) {
		a := newAuthServer(t, nil)
		for _, o := range []string{"http://localhost:3000", "https://console.example.com", a.URL} {
			refusal(t, "preflight from "+o, a.do(t, "OPTIONS", "/v1/version", preflight(o), ""), http.StatusForbidden, "forbidden")
		}
		for _, r := range []authResp{
			a.do(t, "GET", "/v1/version", h("Authorization", "Bearer "+a.token), ""),
			a.do(t, "GET", "/v1/version", h("Authorization", "Bearer "+a.token, "Origin", a.URL), ""),
			a.do(t, "GET", "/v1/version", h("Origin", "http://localhost:3000"), ""),
		} {
			for k := range r.header {
				if strings.HasPrefix(k, "Access-Control-") {
					t.Errorf("CORS header %s without configured origins", k)
				}
			}
		}
	})
	t.Run("configured", func(t *testing.T) {
		a := newAuthServer(t, &gateway.AuthOptions{CORSOrigins: []string{"https://Console.Example.com/", "http://localhost:3000", "*"}})
		r := a.do(t, "OPTIONS", "/v1/version", preflight("https://console.example.com"), "")
		if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "https://console.example.com" ||
			!strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Authorization") || r.header.Get("Vary") != "Origin" {
			t.Errorf("preflight from a configured origin: %d %v", r.status, r.header)
		}
		for _, o := range []string{"https://evil.example", "http://localhost:3001", "https://console.example.com.evil.com", "null", "*"} {
			r := a.do(t, "OPTIONS", "/v1/version", preflight(o), "")
			refusal(t, "preflight from "+o, r, http.StatusForbidden, "forbidden")
			if v := r.header.Get("Access-Control-Allow-Origin"); v != "" {
				t.Errorf("preflight from %s: Access-Control-Allow-Origin %q", o, v)
			}
		}
		// The real request still needs the token; its answer is readable
		// by the page either way.
		r = a.do(t, "GET", "/v1/version", h("Origin", "http://localhost:3000"), "")
		refusal(t, "configured origin without a token", r, http.StatusUnauthorized, "unauthorized")
		if r.header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
			t.Errorf("401 to a configured origin lacks Access-Control-Allow-Origin: %v", r.header)
		}
		r = a.do(t, "GET", "/v1/version", h("Origin", "http://localhost:3000", "Authorization", "Bearer "+a.token), "")
		if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
			t.Errorf("configured origin with the token: %d %v", r.status, r.header)
		}
	})
}

func TestProtectBodyLimit(t *testing.T) {
	a := newAuthServer(t, &gateway.AuthOptions{MaxBody: 2048})
	big := `{"text":"` + strings.Repeat("x", 3000) + `"}`
	auth := h("Authorization", "Bearer "+a.token)
	for _, p := range []string{"/v1/sessions/a/k/reset", "/v1/auth/login", "/v1/nothing"} {
		r := a.do(t, "POST", p, auth, big)
		refusal(t, "POST "+p, r, http.StatusRequestEntityTooLarge, "too_large", a.token)
		if !strings.Contains(r.body, "2048") {
			t.Errorf("POST %s: 413 body %q does not say the limit", p, r.body)
		}
	}
	// Without the token the size is checked first too: nothing is read.
	refusal(t, "unauthenticated", a.do(t, "POST", "/v1/sessions/a/k/reset", nil, big), http.StatusRequestEntityTooLarge, "too_large")

	// A body of unknown length is cut at the limit while it is read (a
	// message's: the one route here that reads its body).
	enormous := `{"text":"` + strings.Repeat("x", gateway.MaxMessageBody) + `"}`
	req, _ := http.NewRequestWithContext(t.Context(), "POST", a.URL+"/v1/sessions/a/k/messages", io.MultiReader(strings.NewReader(enormous)))
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.ContentLength = -1
	resp, err := a.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	refusal(t, "chunked", authResp{resp.StatusCode, resp.Header, string(b)}, http.StatusRequestEntityTooLarge, "too_large")

	// The default is the API's own limit.
	d := newAuthServer(t, nil)
	huge := `{"text":"` + strings.Repeat("x", gateway.MaxBody) + `"}`
	refusal(t, "default limit", d.do(t, "POST", "/v1/sessions/a/k/reset", h("Authorization", "Bearer "+d.token), huge), http.StatusRequestEntityTooLarge, "too_large")

	// A message, which may carry images, has a limit of its own (the
	// gateway's tests send one larger than max_body).
	refusal(t, "message over its limit", a.do(t, "POST", "/v1/sessions/a/k/messages", auth, enormous), http.StatusRequestEntityTooLarge, "too_large")
}

func TestLoginCookie(t *testing.T) {
	a := newAuthServer(t, nil)
	refusal(t, "wrong token", a.do(t, "POST", "/v1/auth/login", nil, `{"token":"`+gateway.NewToken()+`"}`), http.StatusUnauthorized, "unauthorized")
	refusal(t, "junk body", a.do(t, "POST", "/v1/auth/login", nil, `{"token":`), http.StatusBadRequest, "bad_request")
	refusal(t, "unknown field", a.do(t, "POST", "/v1/auth/login", nil, `{"token":"x","user":"root"}`), http.StatusBadRequest, "bad_request")
	refusal(t, "cross-origin login", a.do(t, "POST", "/v1/auth/login", h("Origin", "http://evil.example"), `{"token":"`+a.token+`"}`), http.StatusForbidden, "forbidden")

	r := a.do(t, "POST", "/v1/auth/login", h("Origin", a.URL), `{"token":"`+a.token+`"}`)
	if r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	if strings.Contains(r.body, a.token) {
		t.Errorf("login answer shows the token: %s", r.body)
	}
	cs := (&http.Response{Header: r.header}).Cookies()
	if len(cs) != 1 {
		t.Fatalf("login set %d cookies", len(cs))
	}
	c := cs[0]
	want := http.Cookie{Name: "agentd_console", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: int(gateway.CookieMaxAge / time.Second)}
	got := http.Cookie{Name: c.Name, Path: c.Path, HttpOnly: c.HttpOnly, SameSite: c.SameSite, Secure: c.Secure, MaxAge: c.MaxAge}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cookie (-want +got):\n%s", diff)
	}
	if c.Value == a.token || strings.Contains(c.Value, a.token) {
		t.Error("the cookie is the token")
	}
	cookie := "agentd_console=" + c.Value
	if r := a.do(t, "GET", "/v1/version", h("Cookie", cookie), ""); r.status != 200 {
		t.Errorf("with the cookie: %d", r.status)
	}
	// Two logins, two cookies: logging one out leaves the other.
	other := "agentd_console=" + (&http.Response{Header: a.do(t, "POST", "/v1/auth/login", nil, `{"token":"`+a.token+`"}`).header}).Cookies()[0].Value
	if other == cookie {
		t.Error("two logins gave the same cookie")
	}

	r = a.do(t, "POST", "/v1/auth/logout", h("Cookie", cookie), "")
	if cs := (&http.Response{Header: r.header}).Cookies(); r.status != 200 || len(cs) != 1 || cs[0].MaxAge >= 0 || cs[0].Value != "" {
		t.Errorf("logout: %d %v", r.status, r.header)
	}
	// A copy of the logged-out cookie (another port's page kept it) no
	// longer works.
	refusal(t, "cookie after logout", a.do(t, "GET", "/v1/version", h("Cookie", cookie), ""), http.StatusUnauthorized, "unauthorized")
	if r := a.do(t, "GET", "/v1/version", h("Cookie", other), ""); r.status != 200 {
		t.Errorf("the other login after a logout: %d", r.status)
	}

	// A cookie lasts CookieMaxAge from its issue, and is not issued ahead.
	refusal(t, "expired cookie", a.do(t, "GET", "/v1/version", h("Cookie", "agentd_console="+cookieAt(a.token, time.Now().Add(-gateway.CookieMaxAge-time.Minute))), ""), http.StatusUnauthorized, "unauthorized")
	refusal(t, "future cookie", a.do(t, "GET", "/v1/version", h("Cookie", "agentd_console="+cookieAt(a.token, time.Now().Add(time.Hour))), ""), http.StatusUnauthorized, "unauthorized")
	if r := a.do(t, "GET", "/v1/version", h("Cookie", "agentd_console="+cookieAt(a.token, time.Now().Add(-gateway.CookieMaxAge+time.Minute))), ""); r.status != 200 {
		t.Errorf("a cookie near the end of its life: %d", r.status)
	}

	// Rotating the token logs every browser out.
	if _, err := a.tokens.Rotate(); err != nil {
		t.Fatal(err)
	}
	refusal(t, "cookie after rotate", a.do(t, "GET", "/v1/version", h("Cookie", other), ""), http.StatusUnauthorized, "unauthorized")
}

// A rotated or replaced token file is used from the next request on.
func TestRotateTakesEffectAtOnce(t *testing.T) {
	a := newAuthServer(t, nil)
	old := a.token
	if r := a.do(t, "GET", "/v1/version", h("Authorization", "Bearer "+old), ""); r.status != 200 {
		t.Fatalf("before rotate: %d", r.status)
	}
	// Another process (agentd token rotate) replaces the file.
	other, err := gateway.OpenTokens(filepath.Dir(a.tokens.Path()), nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := other.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	refusal(t, "old token after rotate", a.do(t, "GET", "/v1/version", h("Authorization", "Bearer "+old), ""), http.StatusUnauthorized, "unauthorized", old, fresh)
	if r := a.do(t, "GET", "/v1/version", h("Authorization", "Bearer "+fresh), ""); r.status != 200 {
		t.Errorf("new token: %d %s", r.status, r.body)
	}

	// Written in place by an editor, same length.
	edited := gateway.NewToken()
	for len(edited) != len(fresh) {
		edited = gateway.NewToken()
	}
	if err := os.WriteFile(a.tokens.Path(), []byte(edited+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour) // a different mtime, however coarse the clock
	os.Chtimes(a.tokens.Path(), future, future)
	refusal(t, "token before the edit", a.do(t, "GET", "/v1/version", h("Authorization", "Bearer "+fresh), ""), http.StatusUnauthorized, "unauthorized")
	if r := a.do(t, "GET", "/v1/version", h("Authorization", "Bearer "+edited), ""); r.status != 200 {
		t.Errorf("edited token: %d %s", r.status, r.body)
	}

	// A file others can read, a weak token and a missing file all fail
	// closed: no token works.
	for _, tc := range []struct {
		name  string
		setup func(path string)
	}{
		{"readable by others", func(p string) { os.Chmod(p, 0o644) }},
		{"weak token", func(p string) { os.WriteFile(p, []byte("password123\n"), 0o600); os.Chmod(p, 0o600) }},
		{"missing", func(p string) { os.Remove(p) }},
	} {
		tc.setup(a.tokens.Path())
		for _, tok := range []string{edited, "password123", ""} {
			refusal(t, tc.name, a.do(t, "GET", "/v1/version", h("Authorization", "Bearer "+tok), ""), http.StatusUnauthorized, "unauthorized")
		}
		if _, err := a.tokens.Token(); err == nil {
			t.Errorf("%s: Token() has no error", tc.name)
		}
		if err := os.WriteFile(a.tokens.Path(), []byte(edited+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(a.tokens.Path(), 0o600)
		os.Chtimes(a.tokens.Path(), future.Add(time.Minute), future.Add(time.Minute))
		future = future.Add(time.Minute)
	}
}

// Failed attempts are limited per client: after the burst every attempt
// is refused, the right token too, until the bucket refills.
func TestBruteForceIsLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk, tok := authTokens(t)
		srv := gateway.New(&gateway.Options{Version: "v9"})
		p := srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420"})
		try := func(remote, tok string) *httptest.ResponseRecorder {
			r := httptest.NewRequest("GET", "/v1/version", nil)
			r.Host = "127.0.0.1:7420"
			r.RemoteAddr = remote
			if tok != "" {
				r.Header.Set("Authorization", "Bearer "+tok)
			}
			w := httptest.NewRecorder()
			p.ServeHTTP(w, r)
			return w
		}
		attacker, neighbour := "203.0.113.7:5555", "203.0.113.8:5555"
		// No credential at all is not an attempt.
		for range 100 {
			if w := try(attacker, ""); w.Code != 401 {
				t.Fatalf("no token: %d", w.Code)
			}
		}
		for i := range 20 {
			if w := try(attacker, fmt.Sprintf("guess-%d-abcdefghijklmnopqrstuvwxyz", i)); w.Code != 401 {
				t.Fatalf("guess %d: %d", i, w.Code)
			}
		}
		w := try(attacker, "guess-21-abcdefghijklmnopqrstuvwxyz")
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
			t.Fatalf("guess 21: %d %v", w.Code, w.Header())
		}
		// The right token is never refused: everyone behind one proxy (or
		// every local user on 127.0.0.1) shares the address, and a flood of
		// wrong guesses must not lock the owner out. Guessing stays hopeless:
		// a token has at least 24 characters, 10 of them different.
		if w := try(attacker, tok); w.Code != 200 {
			t.Errorf("the right token while limited: %d, want 200", w.Code)
		}
		// The same from the same IPv6 /64: wrong guesses are limited together.
		for i := range 21 {
			try(fmt.Sprintf("[2001:db8::%x]:1", i+1), "wrong-abcdefghijklmnopqrstuvwxyz")
		}
		if w := try("[2001:db8::ffff]:2", "wrong-again-abcdefghijklmnopqrstuvwxyz"); w.Code != http.StatusTooManyRequests {
			t.Errorf("another address of the same /64: %d, want 429", w.Code)
		}
		if w := try(neighbour, tok); w.Code != 200 {
			t.Errorf("another client: %d", w.Code)
		}
		// One guess from each address of an IPv4 /24 are limited together,
		// and so are all loopback addresses (127.0.0.0/8 and ::1), which any
		// local user can use; another /24 is not limited.
		for _, net := range []struct{ each, then string }{
			{"198.51.100.%d:1", "198.51.100.250:1"},
			{"127.0.%d.1:1", "[::1]:1"},
		} {
			for i := range 21 {
				try(fmt.Sprintf(net.each, i+1), "wrong-abcdefghijklmnopqrstuvwxyz")
			}
			if w := try(net.then, "wrong-again-abcdefghijklmnopqrstuvwxyz"); w.Code != http.StatusTooManyRequests {
				t.Errorf("after one guess from each of 21 addresses like %s, %s: %d, want 429", net.each, net.then, w.Code)
			}
		}
		if w := try("198.51.101.1:1", "wrong-abcdefghijklmnopqrstuvwxyz"); w.Code != 401 {
			t.Errorf("another /24: %d, want 401", w.Code)
		}
		// Logins count too.
		login := func(tok string) int {
			r := httptest.NewRequest("POST", "/v1/auth/login", strings.NewReader(`{"token":"`+tok+`"}`))
			r.Host, r.RemoteAddr = "localhost", attacker
			w := httptest.NewRecorder()
			p.ServeHTTP(w, r)
			return w.Code
		}
		if c := login("wrong-abcdefghijklmnopqrstuvwxyz"); c != http.StatusTooManyRequests {
			t.Errorf("a wrong login while limited: %d", c)
		}
		if c := login(tok); c != 200 {
			t.Errorf("the right login while limited: %d", c)
		}

		time.Sleep(time.Second) // refills 10
		for i := range 9 {
			if w := try(attacker, "wrong-abcdefghijklmnopqrstuvwxyz"); w.Code != 401 {
				t.Fatalf("after a second, guess %d: %d", i, w.Code)
			}
		}
		if w := try(attacker, tok); w.Code != 200 {
			t.Errorf("after a second, the right token: %d", w.Code)
		}
		if c := login(tok); c != 200 {
			t.Errorf("after a second, login: %d", c)
		}
	})
}

// The WebSocket upgrade passes through Protect unchanged, with the token
// or the cookie, and is refused without.
func TestWebSocketThroughProtect(t *testing.T) {
	a := newAuthServer(t, nil)
	ws := "ws" + strings.TrimPrefix(a.URL, "http") + "/v1/stream"
	dial := func(hdr http.Header) (string, int, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: hdr})
		if err != nil {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			return "", code, err
		}
		defer c.CloseNow()
		if err := c.Write(ctx, websocket.MessageText, []byte("hi")); err != nil {
			return "", 0, err
		}
		_, msg, err := c.Read(ctx)
		return string(msg), 101, err
	}
	for _, hdr := range []http.Header{
		{"Authorization": {"Bearer " + a.token}},
		{"Cookie": {"agentd_console=" + cookieFor(a.token)}, "Origin": {a.URL}},
	} {
		if msg, _, err := dial(hdr); err != nil || msg != "echo: hi" {
			t.Errorf("dial with %v: %q, %v", hdr, msg, err)
		}
	}
	for _, tc := range []struct {
		hdr  http.Header
		code int
	}{
		{http.Header{}, 401},
		{http.Header{"Authorization": {"Bearer " + gateway.NewToken()}}, 401},
		{http.Header{"Cookie": {"agentd_console=" + cookieFor(a.token)}, "Origin": {"http://evil.example"}}, 403},
	} {
		if _, code, err := dial(tc.hdr); err == nil || code != tc.code {
			t.Errorf("dial with %v: status %d, err %v; want %d", tc.hdr, code, err, tc.code)
		}
	}
	ws += "?token=" + a.token + "&access_token=" + a.token
	if _, code, err := dial(http.Header{}); err == nil || code != 401 {
		t.Errorf("dial with the token in the query: status %d, err %v; want 401", code, err)
	}
}

// Internal errors say only "internal error" through TCP as well.
func TestInternalErrorsOverTCP(t *testing.T) {
	e := newEnv(t, setup{sessions: failingSessions{}})
	tk, tok := authTokens(t)
	srv := httptest.NewServer(e.srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:0"}))
	t.Cleanup(srv.Close)
	a := &authServer{Server: srv, tokens: tk, token: tok}
	r := a.do(t, "GET", "/v1/sessions", h("Authorization", "Bearer "+tok), "")
	refusal(t, "failing store", r, http.StatusInternalServerError, "internal", tok)
	if showsInternals(r.body) || !strings.Contains(r.body, `"internal error"`) {
		t.Errorf("body %s", r.body)
	}
}

func TestTokens(t *testing.T) {
	dir := t.TempDir()
	if _, err := gateway.OpenTokens(dir, nil); !errors.Is(err, gateway.ErrNoToken) {
		t.Errorf("no file, no Create: %v, want ErrNoToken", err)
	}
	tk, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tk.Token()
	if err != nil || gateway.CheckToken(tok) != nil || len(tok) < 40 {
		t.Fatalf("new token %q: %v", tok, err)
	}
	fi, err := os.Stat(filepath.Join(dir, gateway.TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	again, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if tok2, _ := again.Token(); tok2 != tok {
		t.Error("a second open made a new token")
	}
	rot, err := tk.Rotate()
	if err != nil || rot == tok {
		t.Fatalf("rotate: %q %v", rot, err)
	}
	if got, _ := again.Token(); got != rot {
		t.Error("another Tokens of the same file does not see the rotated token")
	}
	if fi, _ := os.Stat(tk.Path()); fi.Mode().Perm() != 0o600 {
		t.Errorf("rotated file mode %v", fi.Mode())
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".gateway.token.*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// From the environment.
	if _, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Fixed: "short"}); !errors.Is(err, gateway.ErrWeakToken) || !strings.Contains(err.Error(), "AGENTD_TOKEN") {
		t.Errorf("weak fixed token: %v", err)
	}
	fixed := strings.Repeat("0123456789abcdef", 2)
	ft, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Fixed: fixed})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := ft.Token(); got != fixed || !ft.Fixed() {
		t.Errorf("fixed token %q", got)
	}
	if _, err := ft.Rotate(); !errors.Is(err, gateway.ErrFixedToken) {
		t.Errorf("rotate a fixed token: %v", err)
	}
	if got, _ := tk.Token(); got != rot {
		t.Error("a fixed token changed the file")
	}
}

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		tok string
		ok  bool
	}{
		{gateway.NewToken(), true},
		{"abcdefghijklmnopqrstuvwx", true},
		{"abcdefghijklmnopqrstuvw", false},
		{"", false},
		{strings.Repeat("a", 64), false},
		{strings.Repeat("abcdefghi", 4), false},
		{"abcdefghijklmnopqrstuvwx yz", false},
		{"abcdefghijklmnopqrstuvwx\n", false},
		{"abcdefghijklmnopqrstuvwxé", false},
		{strings.Repeat("abcdefghijk", 60), false},
	} {
		if err := gateway.CheckToken(tc.tok); (err == nil) != tc.ok {
			t.Errorf("CheckToken(%q) = %v, want ok %v", tc.tok, err, tc.ok)
		}
	}
	seen := map[string]bool{}
	for range 100 {
		tok := gateway.NewToken()
		if seen[tok] || gateway.CheckToken(tok) != nil || strings.ContainsAny(tok, "-_+/=") {
			t.Fatalf("NewToken() = %q", tok)
		}
		seen[tok] = true
	}
}

// FuzzProtectHostOrigin sends arbitrary Host and Origin values with the
// right token: whatever passes has a loopback Host, and an Origin (if any)
// on that same host.
func FuzzProtectHostOrigin(f *testing.F) {
	for _, s := range [][2]string{
		{"localhost", ""}, {"localhost:7420", "http://localhost:7420"}, {"[::1]:1", "http://[::1]:1"},
		{"127.0.0.1", "https://127.0.0.1"}, {"localhost.evil.com", ""}, {"127.0.0.1.nip.io", "http://127.0.0.1.nip.io"},
		{"[::1", ""}, {"a:b:c", "null"}, {"[]:", "http://"}, {"LOCALHOST:80", "http://localhost"}, {"localhost", "http://localhost:0080"},
	} {
		f.Add(s[0], s[1])
	}
	tk, tok := authTokens(f)
	p := gateway.New(&gateway.Options{Version: "v9"}).Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420"})
	f.Fuzz(func(t *testing.T, host, origin string) {
		r := httptest.NewRequest("GET", "/v1/version", nil)
		r.Host = host
		r.RemoteAddr = "127.0.0.1:1"
		r.Header.Set("Authorization", "Bearer "+tok)
		if origin != "" {
			r.Header["Origin"] = []string{origin}
		}
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if w.Code == http.StatusForbidden {
			return
		}
		if w.Code != 200 {
			t.Fatalf("Host %q Origin %q: %d %s", host, origin, w.Code, w.Body)
		}
		hu, err := url.Parse("http://" + host)
		if err != nil {
			t.Fatalf("allowed Host %q, which does not parse: %v", host, err)
		}
		name := strings.ToLower(hu.Hostname())
		switch name {
		case "localhost", "127.0.0.1", "::1":
		default:
			t.Fatalf("allowed Host %q", host)
		}
		if origin != "" {
			ou, err := url.Parse(origin)
			if err != nil || strings.ToLower(ou.Hostname()) != name {
				t.Fatalf("allowed Origin %q with Host %q", origin, host)
			}
		}
	})
}

func BenchmarkProtect(b *testing.B) {
	tk, tok := authTokens(b)
	p := gateway.New(&gateway.Options{Version: "v9"}).Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420"})
	r := httptest.NewRequest("GET", "/v1/version", nil)
	r.Host = "127.0.0.1:7420"
	r.Header.Set("Authorization", "Bearer "+tok)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		p.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// ExampleServer_Protect serves the API behind its token, as agentd serve
// does on TCP.
func ExampleServer_Protect() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tokens, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true}) // dir/gateway.token, mode 0600
	if err != nil {
		log.Fatal(err)
	}
	api := gateway.New(&gateway.Options{Version: "v1"})
	srv := httptest.NewServer(api.Protect(&gateway.AuthOptions{Tokens: tokens, Listen: "127.0.0.1:7420"}))
	defer srv.Close()

	get := func(token string) {
		req, _ := http.NewRequest("GET", srv.URL+"/v1/version", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(bytes.TrimSpace(b)))
	}
	get("")
	token, _ := tokens.Token()
	get(token)
	// Output:
	// 401 {"error":"missing or invalid token: send the header Authorization: Bearer followed by the token (agentd token prints it)","code":"unauthorized"}
	// 200 {"version":"v1"}
}

// Without the token, a request that arrives slowly is cut off: nobody can
// hold connections open by trickling a body (or a login) in.
func TestSlowUnauthenticatedRequest(t *testing.T) {
	a := newAuthServer(t, &gateway.AuthOptions{PreAuthTimeout: 300 * time.Millisecond})
	for _, path := range []string{"/v1/auth/login", "/v1/agents/x/reload"} {
		conn, err := net.Dial("tcp", a.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1:7420\r\nContent-Length: 100000\r\n\r\n{", path)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		// The server answers or hangs up well before our own deadline.
		if _, err := io.ReadAll(conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("%s: the connection was held open", path)
			}
		}
		conn.Close()
	}
	// With the token, a body may take longer than that.
	pr, pw := io.Pipe()
	go func() {
		time.Sleep(600 * time.Millisecond)
		pw.Write([]byte(`{"text":"late"}`))
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", a.URL+"/v1/nothing", pr)
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.Client().Do(req)
	if err != nil {
		t.Fatalf("a slow authenticated body was cut: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("slow authenticated body: %d, want the route's own 404", resp.StatusCode)
	}
}

// A configured origin's preflight gets the headers the API and the OpenAI
// client libraries send, and pages can read the session header.
func TestCORSHeaders(t *testing.T) {
	a := newAuthServer(t, &gateway.AuthOptions{CORSOrigins: []string{"http://localhost:3000"}})
	r := a.do(t, "OPTIONS", "/v1/chat/completions", h("Origin", "http://localhost:3000", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization, content-type, x-stainless-os, x-stainless-retry-count, idempotency-key, x-evil"), "")
	got := strings.ToLower(r.header.Get("Access-Control-Allow-Headers"))
	for _, want := range []string{"authorization", "content-type", "idempotency-key", "x-agentd-session", "x-stainless-os", "x-stainless-retry-count"} {
		if !strings.Contains(got, want) {
			t.Errorf("Access-Control-Allow-Headers %q lacks %s", got, want)
		}
	}
	if strings.Contains(got, "x-evil") {
		t.Errorf("Access-Control-Allow-Headers %q allows x-evil", got)
	}
	r = a.do(t, "GET", "/v1/version", h("Origin", "http://localhost:3000", "Authorization", "Bearer "+a.token), "")
	if !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "X-Agentd-Session") {
		t.Errorf("Access-Control-Expose-Headers %q", r.header.Get("Access-Control-Expose-Headers"))
	}
}
