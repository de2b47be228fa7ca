package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"agentd/internal/gateway"
)

// pathParam is a parameter of a route's path, such as {agent} or {id}.
var pathParam = regexp.MustCompile(`\{[a-z]+\}`)

// routeRequest is a request for the route pattern ("METHOD /path"), its
// path parameters filled in.
func routeRequest(t *testing.T, base, pattern string) *http.Request {
	t.Helper()
	method, path, _ := strings.Cut(pattern, " ")
	req, err := http.NewRequest(method, base+pathParam.ReplaceAllString(path, "x"), strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// send sends req with c and returns the status and the error body.
func send(t *testing.T, c *http.Client, req *http.Request) (int, gateway.Error) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e gateway.Error
	json.Unmarshal(b, &e)
	return resp.StatusCode, e
}

// Every route the table marks admin is refused over TCP without
// gateway.remote_admin, with the token right, and is served with it and
// on the unix socket. The server has none of its parts, so the handler of
// each admin route answers 501 not_available: a route refused by the
// middleware answers 403, one not served 404 or 405.
func TestAdminRoutesRefusedOverTCP(t *testing.T) {
	srv := gateway.New(&gateway.Options{})
	var admin []string
	for _, rt := range srv.Routes() {
		if rt.Admin {
			admin = append(admin, rt.Pattern)
		}
	}
	if len(admin) == 0 {
		t.Fatal("no admin routes") // which they are, docs/api.md says (TestAPIDocNamesEveryRoute)
	}
	tk, tok := authTokens(t)
	off := httptest.NewServer(srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420"}))
	defer off.Close()
	on := httptest.NewServer(srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420", RemoteAdmin: true}))
	defer on.Close()
	sock := sockPath(t)
	serveUnix(t, srv, sock)
	local := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	for _, p := range admin {
		req := routeRequest(t, off.URL, p)
		req.Header.Set("Authorization", "Bearer "+tok)
		if status, e := send(t, off.Client(), req); status != http.StatusForbidden || e.Code != "forbidden" || !strings.Contains(e.Error, "remote_admin") {
			t.Errorf("%s over TCP without remote_admin: %d %+v, want 403 forbidden naming remote_admin", p, status, e)
		}
		req = routeRequest(t, on.URL, p)
		req.Header.Set("Authorization", "Bearer "+tok)
		if status, e := send(t, on.Client(), req); status != http.StatusNotImplemented || e.Code != "not_available" {
			t.Errorf("%s over TCP with remote_admin: %d %+v, want its handler's 501 not_available", p, status, e)
		}
		if status, e := send(t, local, routeRequest(t, "http://agentd", p)); status != http.StatusNotImplemented || e.Code != "not_available" {
			t.Errorf("%s on the unix socket: %d %+v, want its handler's 501 not_available", p, status, e)
		}
	}
}

// A public route's path is literal, as Protect matches it before the mux
// does: at most a subtree (a final slash), {$} or whole segments {name}.
func TestPublicRoutesAreLiteral(t *testing.T) {
	for _, rt := range fullServer(t).Routes() {
		if !rt.Public {
			continue
		}
		_, path, _ := strings.Cut(rt.Pattern, " ")
		if strings.Contains(strings.ReplaceAll(strings.TrimSuffix(path, "{$}"), "/{name}", "/x"), "{") {
			t.Errorf("public route %s has a wildcard", rt.Pattern)
		}
	}
}

// apiDoc is the API's description for people.
const apiDoc = "../../docs/api.md"

// routeInDoc matches a route as docs/api.md names it: `METHOD /path`,
// perhaps with a query after it.
var routeInDoc = regexp.MustCompile("`(GET|POST|PUT|PATCH|DELETE) (/[^`?]*)[^`]*`")

// docRoutes returns the routes named in text, as "METHOD /path".
func docRoutes(text string) []string {
	var out []string
	for _, m := range routeInDoc.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1]+" "+m[2])
	}
	return out
}

// docs/api.md names every route of the API (but the console's files and
// agentd as an MCP server, which have sections of their own), and its
// paragraph on what the token may do over TCP names exactly the admin
// routes.
func TestAPIDocNamesEveryRoute(t *testing.T) {
	b, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	named := docRoutes(doc)
	var admin []string
	for _, rt := range fullServer(t).Routes() {
		if rt.Part == "Console" || rt.Part == "MCPHandler" {
			continue
		}
		if !slices.Contains(named, rt.Pattern) {
			t.Errorf("%s names no route %s", apiDoc, rt.Pattern)
		}
		if rt.Admin {
			admin = append(admin, rt.Pattern)
		}
	}
	const heading = "**What the token may do over TCP.**"
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("%s has no paragraph %s", apiDoc, heading)
	}
	para, _, _ := strings.Cut(doc[i:], "\n\n")
	got := docRoutes(para)
	slices.Sort(got)
	slices.Sort(admin)
	if !slices.Equal(got, admin) {
		t.Errorf("%s: the routes that need remote_admin are\n  %q\nwant the admin routes\n  %q", apiDoc, got, admin)
	}
}
