package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/tool"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHTTPTransports(t *testing.T) {
	for _, transport := range []string{agent.TransportHTTP, agent.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			t.Setenv("AGENTD_MCP_TOKEN", "Bearer s3cret-token")
			hs := newHTTPServer(t, newTestServer(false), transport == agent.TransportSSE)
			logs := &logBuffer{}
			reg := newRecorder()
			m := newTestManager(t, &Options{Tools: reg, Logger: logs.logger()})
			d := Def{Name: "web", Config: agent.MCPServer{
				Transport:     transport,
				URL:           hs.URL,
				AllowNetworks: local,
				Headers:       map[string]string{"X-Static": "static-value"},
				HeadersEnv:    map[string]string{"Authorization": "AGENTD_MCP_TOKEN"},
			}}
			if errs := m.Set(context.Background(), []Def{d}); errs != nil {
				t.Fatal(errs)
			}
			m.WaitReady(context.Background())
			st, _ := m.Status("web")
			if st.State != StateConnected || st.Transport != transport || st.PID != 0 {
				t.Fatalf("status %+v", st)
			}
			res := run(t, reg, &tool.Call{Name: "web__echo", Args: json.RawMessage(`{"text":"over http"}`)})
			if res.Output != "over http" {
				t.Errorf("echo: %+v", res)
			}
			res = run(t, reg, &tool.Call{Name: "web__meta", Session: "s1", Agent: "a1"})
			if !strings.Contains(res.Output, `"agentd/session":"s1"`) {
				t.Errorf("meta: %s", res.Output)
			}
			res = run(t, reg, &tool.Call{Name: "web__fail"})
			if !res.IsError || res.Output != "it failed" {
				t.Errorf("fail: %+v", res)
			}

			// list_changed reaches the client over HTTP too.
			run(t, reg, &tool.Call{Name: "web__add_extra"})
			waitFor(t, "web__extra", func() bool { return reg.has("web__extra") })
			run(t, reg, &tool.Call{Name: "web__remove_extra"})
			waitFor(t, "web__extra to go", func() bool { return !reg.has("web__extra") })

			seen := hs.seen()
			if len(seen) == 0 {
				t.Fatal("no requests")
			}
			for _, h := range seen {
				if h.Get("Authorization") != "Bearer s3cret-token" || h.Get("X-Static") != "static-value" {
					t.Errorf("request headers %v", h)
					break
				}
			}
			m.Close()
			if l := logs.String(); strings.Contains(l, "s3cret") || strings.Contains(l, "static-value") {
				t.Errorf("a header value was logged:\n%s", l)
			}
		})
	}
}

func TestHTTPHeaderEnvMissing(t *testing.T) {
	hs := newHTTPServer(t, newTestServer(false), false)
	m := newTestManager(t, &Options{Tools: newRecorder()})
	_, err := m.Add(context.Background(), Def{Name: "web", Config: agent.MCPServer{
		URL: hs.URL, HeadersEnv: map[string]string{"Authorization": "AGENTD_MCP_NOT_SET_ANYWHERE"},
	}})
	if err == nil || !strings.Contains(err.Error(), "environment variable AGENTD_MCP_NOT_SET_ANYWHERE is not set") {
		t.Errorf("Add: %v", err)
	}
}

func TestHTTPServerGoesAway(t *testing.T) {
	hs := newHTTPServer(t, newTestServer(false), false)
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg})
	if _, err := m.Add(context.Background(), Def{Name: "web", Config: agent.MCPServer{URL: hs.URL, AllowNetworks: local}}); err != nil {
		t.Fatal(err)
	}
	hs.CloseClientConnections()
	hs.Close()
	// The failed call makes the Manager check the connection.
	res := run(t, reg, &tool.Call{Name: "web__echo", Args: json.RawMessage(`{"text":"x"}`)})
	if !res.IsError {
		t.Errorf("call to a closed server: %+v", res)
	}
	waitFor(t, "the server to be down", func() bool {
		st, _ := m.Status("web")
		return st.State == StateDown && !reg.has("web__echo")
	})
}

func TestAddRemovePersist(t *testing.T) {
	hs := newHTTPServer(t, newTestServer(false), false)
	state := filepath.Join(t.TempDir(), "mcp-servers.json")
	ctx := context.Background()

	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, StatePath: state, dial: nil})
	d := Def{Name: "added", Config: agent.MCPServer{URL: hs.URL, AllowNetworks: local}, Agents: []string{"alice"}}
	st, err := m.Add(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateConnected || st.Source != "runtime" || st.Tools == 0 || !reg.has("added__echo") {
		t.Fatalf("Add: %+v", st)
	}
	fi, err := os.Stat(state)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", fi, err)
	}

	// Same configuration, another agent: merged. Different: refused.
	if st, err := m.Add(ctx, Def{Name: "added", Config: agent.MCPServer{URL: hs.URL, AllowNetworks: local}, Agents: []string{"bob"}}); err != nil ||
		strings.Join(st.Agents, ",") != "alice,bob" {
		t.Errorf("merging Add: %+v, %v", st, err)
	}
	if _, err := m.Add(ctx, Def{Name: "added", Config: agent.MCPServer{URL: hs.URL + "/other", AllowNetworks: local}}); !errors.Is(err, ErrConflict) {
		t.Errorf("conflicting Add: %v", err)
	}

	// Configured servers are not removed at run time.
	if errs := m.Set(ctx, []Def{{Name: "configured", Config: agent.MCPServer{URL: hs.URL, AllowNetworks: local}}}); errs != nil {
		t.Fatal(errs)
	}
	if err := m.Remove(ctx, "configured"); !errors.Is(err, ErrConfigured) || !strings.Contains(err.Error(), "edit") {
		t.Errorf("Remove of a configured server: %v", err)
	}
	if err := m.Remove(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove of an unknown server: %v", err)
	}
	// Set keeps run-time servers.
	if errs := m.Set(ctx, nil); errs != nil {
		t.Fatal(errs)
	}
	if _, ok := m.Status("added"); !ok {
		t.Fatal("Set removed a run-time server")
	}
	m.Close()

	// A new Manager brings it back.
	reg2 := newRecorder()
	m2 := newTestManager(t, &Options{Tools: reg2, StatePath: state})
	m2.WaitReady(ctx)
	st, ok := m2.Status("added")
	if !ok || st.State != StateConnected || st.Source != "runtime" || strings.Join(st.Agents, ",") != "alice,bob" {
		t.Fatalf("after restart: %+v", st)
	}
	echo, ok := reg2.Get("added__echo")
	if !ok || strings.Join(echo.Spec().Scope, ",") != "alice,bob" {
		t.Fatalf("echo after restart: %v", ok)
	}
	if err := m2.Remove(ctx, "added"); err != nil {
		t.Fatal(err)
	}
	if reg2.has("added__echo") || len(m2.List()) != 0 {
		t.Errorf("after Remove: %v %+v", reg2.names(), m2.List())
	}
	m2.Close()

	m3 := newTestManager(t, &Options{Tools: newRecorder(), StatePath: state})
	if len(m3.List()) != 0 {
		t.Errorf("removed server came back: %+v", m3.List())
	}
}

func TestAddFailureKeepsNothing(t *testing.T) {
	hs := newHTTPServer(t, newTestServer(false), false)
	url := hs.URL
	hs.Close()
	state := filepath.Join(t.TempDir(), "state.json")
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, StatePath: state})
	_, err := m.Add(context.Background(), Def{Name: "dead", Config: agent.MCPServer{URL: url, AllowNetworks: local, Timeout: agent.Duration(5e9)}})
	if err == nil || !strings.Contains(err.Error(), `mcp: add "dead"`) {
		t.Fatalf("Add: %v", err)
	}
	if len(m.List()) != 0 || len(reg.Specs()) != 0 {
		t.Errorf("kept: %+v", m.List())
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state written: %v", err)
	}
}

func TestBadStateFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(state, []byte(`{"version":1,"servers":[{"name":"x","config":{"url":"http://x"},"agents":null,"bogus":1}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(&Options{Tools: newRecorder(), StatePath: state})
	if err == nil || !strings.Contains(err.Error(), state) || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("New with a bad state file: %v", err)
	}
}

// An http or sse server dials through the SSRF guard: a server on this
// machine is refused unless its entry allows its range, and the refusal
// names the address and the line to add. A redirect to another address is
// not followed at all.
func TestHTTPDialGuard(t *testing.T) {
	for _, transport := range []string{agent.TransportHTTP, agent.TransportSSE} {
		t.Run(transport, func(t *testing.T) {
			hs := newHTTPServer(t, newTestServer(false), transport == agent.TransportSSE)
			target := newHTTPServer(t, newTestServer(false), transport == agent.TransportSSE)
			ln, err := net.Listen("tcp", "127.0.0.2:0")
			if err != nil {
				t.Skip("no 127.0.0.2 on this machine:", err)
			}
			elsewhere := &httptest.Server{Listener: ln, Config: &http.Server{Handler: target.Config.Handler}}
			elsewhere.Start()
			t.Cleanup(elsewhere.Close)
			redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			}))
			t.Cleanup(redirect.Close)
			m := newTestManager(t, &Options{Tools: newRecorder()})
			cfg := agent.MCPServer{Transport: transport, URL: hs.URL, Timeout: agent.Duration(5e9)}
			_, err = m.Add(context.Background(), Def{Name: "web", Config: cfg})
			if err == nil || !strings.Contains(err.Error(), "127.0.0.1 is a loopback address") ||
				!strings.Contains(err.Error(), `allow_networks: [127.0.0.1/32]`) || !strings.Contains(err.Error(), "MCP server web") {
				t.Fatalf("a loopback server without allow_networks: %v", err)
			}
			if n := len(hs.seen()); n != 0 {
				t.Errorf("the refused server got %d requests", n)
			}
			// Allowing another range does not open this one.
			cfg.AllowNetworks = []string{"10.0.0.0/8"}
			if _, err := m.Add(context.Background(), Def{Name: "web", Config: cfg}); err == nil {
				t.Fatal("allow_networks [10.0.0.0/8] reached 127.0.0.1")
			}
			cfg.AllowNetworks = local
			if _, err := m.Add(context.Background(), Def{Name: "web", Config: cfg}); err != nil {
				t.Fatalf("with allow_networks: %v", err)
			}

			// A server on an allowed address that redirects elsewhere on
			// this machine: the redirect is not followed, whether the
			// target's range is allowed or not (another origin, see
			// TestHTTPHeadersStayWithTheOrigin); the target hears nothing.
			cfg.URL = redirect.URL
			for _, allow := range [][]string{local, {"127.0.0.1/32", "127.0.0.2/32"}} {
				cfg.AllowNetworks = allow
				_, err = m.Add(context.Background(), Def{Name: "hop", Config: cfg})
				if err == nil || !strings.Contains(err.Error(), "another origin") || !strings.Contains(err.Error(), elsewhere.URL) {
					t.Fatalf("a redirect to 127.0.0.2 with %v allowed: %v", allow, err)
				}
			}
			if n := len(target.seen()); n != 0 {
				t.Errorf("the redirect's target got %d requests", n)
			}
		})
	}
}

// allow_networks must be CIDR ranges, on an http or sse server.
func TestAllowNetworksChecked(t *testing.T) {
	m := newTestManager(t, &Options{Tools: newRecorder()})
	for _, cfg := range []agent.MCPServer{
		{URL: "http://127.0.0.1:1/mcp", AllowNetworks: []string{"127.0.0.1"}},
		{Command: "true", AllowNetworks: []string{"127.0.0.1/32"}},
	} {
		if _, err := m.Add(context.Background(), Def{Name: "x", Config: cfg}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "allow_networks") {
			t.Errorf("Add(%+v): %v", cfg, err)
		}
	}
}

// A server's headers go to its own origin only. A redirect to another
// origin (another port here), or a legacy SSE server whose message
// endpoint is on another origin, is not followed: the other origin
// receives nothing, so neither the headers' secrets nor the calls'
// arguments and approvals; the server stays down with an error that says
// why. A redirect within the origin is followed, headers and all.
func TestHTTPHeadersStayWithTheOrigin(t *testing.T) {
	t.Setenv("AGENTD_MCP_TOKEN", "Bearer s3cret-token")
	cfg := func(transport, url string) agent.MCPServer {
		return agent.MCPServer{Transport: transport, URL: url, AllowNetworks: local,
			Headers: map[string]string{"X-Static": "static-value"}, HeadersEnv: map[string]string{"Authorization": "AGENTD_MCP_TOKEN"}}
	}
	other := newHTTPServer(t, newTestServer(false), false) // a working server, elsewhere
	otherSSE := newHTTPServer(t, newTestServer(false), true)
	redirect := func(to string) *httpServer {
		return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
		}))
	}
	for _, tc := range []struct {
		name      string
		transport string
		from      *httpServer
		to        *httpServer
	}{
		{"http redirect", agent.TransportHTTP, redirect(other.URL), other},
		{"sse redirect", agent.TransportSSE, redirect(otherSSE.URL), otherSSE},
		{"sse endpoint", agent.TransportSSE, serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: endpoint\ndata: %s/?sessionid=1\n\n", other.URL)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})), other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t, &Options{Tools: newRecorder()})
			before := len(tc.to.seen())
			_, err := m.Add(context.Background(), Def{Name: "web", Config: cfg(tc.transport, tc.from.URL)})
			if err == nil || !strings.Contains(err.Error(), "another origin") || !strings.Contains(err.Error(), tc.from.URL) {
				t.Errorf("Add: %v", err)
			}
			for _, h := range tc.to.seen()[before:] {
				t.Errorf("the other origin received a request with headers %v", h)
			}
			if len(tc.from.seen()) == 0 {
				t.Errorf("the configured server was not asked")
			}
		})
	}

	t.Run("same origin", func(t *testing.T) {
		srv := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return newTestServer(false) }, nil)
		hs := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/old" {
				http.Redirect(w, r, "/mcp", http.StatusPermanentRedirect)
				return
			}
			srv.ServeHTTP(w, r)
		}))
		reg := newRecorder()
		m := newTestManager(t, &Options{Tools: reg})
		if _, err := m.Add(context.Background(), Def{Name: "web", Config: cfg(agent.TransportHTTP, hs.URL+"/old")}); err != nil {
			t.Fatal(err)
		}
		if res := run(t, reg, &tool.Call{Name: "web__echo", Args: json.RawMessage(`{"text":"moved"}`)}); res.Output != "moved" {
			t.Errorf("echo: %+v", res)
		}
		for _, h := range hs.seen() {
			if h.Get("Authorization") != "Bearer s3cret-token" || h.Get("X-Static") != "static-value" {
				t.Errorf("request headers %v", h)
			}
		}
	})
}
