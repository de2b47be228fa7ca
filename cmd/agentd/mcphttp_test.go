package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/gateway"
	"agentd/internal/mcpdemo"
)

// toolCall is a tools/call request as an MCP server received it.
type toolCall struct {
	Name      string
	Arguments json.RawMessage
	Meta      map[string]any
}

// httpMCP is the demo MCP server over streamable HTTP on addr ("127.0.0.1:0"),
// recording every tools/call it receives and every request's headers.
type httpMCP struct {
	URL     string
	mu      sync.Mutex
	calls   []toolCall
	headers []http.Header
}

func newHTTPMCP(t *testing.T, addr string) *httpMCP {
	t.Helper()
	h := &httpMCP{}
	srv := mcpdemo.New(nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				h.mu.Lock()
				h.calls = append(h.calls, toolCall{Name: p.Name, Arguments: p.Arguments, Meta: p.Meta})
				h.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	mh := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.headers = append(h.headers, r.Header.Clone())
		h.mu.Unlock()
		mh.ServeHTTP(w, r)
	})}}
	hs.Start()
	t.Cleanup(hs.Close)
	h.URL = hs.URL + "/mcp"
	return h
}

func (h *httpMCP) received() []toolCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]toolCall(nil), h.calls...)
}

// requestHeaders returns the headers of every request received so far.
func (h *httpMCP) requestHeaders() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]http.Header(nil), h.headers...)
}

// serverInfo is the entry of `agentd mcp list --json` for name.
func serverInfo(t *testing.T, dir, name string) gateway.ServerInfo {
	t.Helper()
	var list []gateway.ServerInfo
	decodeOut(t, okRun(t, dir, "mcp", "list", "--json"), &list)
	for _, s := range list {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no server %s in %+v", name, list)
	return gateway.ServerInfo{}
}

// An MCP server over HTTP on this machine is refused unless its entry
// allows loopback: the error, in the server's status and the daemon's log,
// names the address and the one line to add; with that line it connects.
func TestMCPHTTPDialGuard(t *testing.T) {
	t.Parallel()
	srv := newHTTPMCP(t, "127.0.0.1:0")
	cfg := "mcp_servers:\n  web:\n    url: " + srv.URL + "\n"
	dir := dataDir(t, map[string]string{"agentd.yaml": cfg})
	hint := `allow_networks: [127.0.0.1/32]`

	st := serverInfo(t, dir, "web") // in process
	if st.State == "connected" || !strings.Contains(st.LastError, "127.0.0.1 is a loopback address") || !strings.Contains(st.LastError, hint) {
		t.Fatalf("in process, a loopback server without allow_networks: %+v", st)
	}
	d := serve(t, dir)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(d.out.String(), hint) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's log does not say what to add:\n%s", d.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.stop(t)
	if len(srv.received()) != 0 {
		t.Error("the refused server was called")
	}

	if err := os.WriteFile(filepath.Join(dir, "agentd.yaml"), []byte(cfg+"    "+hint+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st := serverInfo(t, dir, "web"); st.State != "connected" || st.Tools == 0 {
		t.Fatalf("with %s: %+v", hint, st)
	}
}

// An MCP server's headers, secrets from headers_env included, go to its
// own origin only: a server that redirects elsewhere is not followed, so
// the other origin receives nothing, and the server's error says why. In
// process and through the daemon.
func TestMCPHTTPRedirectKeepsHeaders(t *testing.T) {
	t.Parallel()
	elsewhere := newHTTPMCP(t, "127.0.0.1:0")
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	cfg := "mcp_servers:\n  web:\n    url: " + redirect.URL + "/mcp\n    allow_networks: [127.0.0.1/32]\n" +
		"    headers: {X-Team: support}\n    headers_env: {Authorization: AGENTD_TEST_MCP_SECRET}\n"
	dir := dataDir(t, map[string]string{"agentd.yaml": cfg})
	secret := "AGENTD_TEST_MCP_SECRET=Bearer s3cret-token"
	check := func(how string, st gateway.ServerInfo) {
		t.Helper()
		if st.State == "connected" || !strings.Contains(st.LastError, "another origin") || !strings.Contains(st.LastError, redirect.URL) {
			t.Errorf("%s: the redirected server: %+v", how, st)
		}
		for _, h := range elsewhere.requestHeaders() {
			t.Errorf("%s: the other origin received a request, Authorization %q, X-Team %q", how, h.Get("Authorization"), h.Get("X-Team"))
		}
	}
	list := func() gateway.ServerInfo {
		r := runEnv(t, dir, []string{secret}, "mcp", "list", "--json")
		if r.code != 0 {
			t.Fatalf("mcp list: %+v", r)
		}
		var servers []gateway.ServerInfo
		decodeOut(t, r.stdout, &servers)
		for _, s := range servers {
			if s.Name == "web" {
				return s
			}
		}
		t.Fatalf("no server web in %s", r.stdout)
		return gateway.ServerInfo{}
	}
	check("in process", list())

	serve(t, dir, secret)
	deadline := time.Now().Add(20 * time.Second)
	st := list()
	for st.LastError == "" && st.State != "connected" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		st = list()
	}
	check("through the daemon", st)
}
