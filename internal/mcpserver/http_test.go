package mcpserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/mcpserver"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends an initialize request over a real loopback connection with
// the given Host and Origin headers.
func post(t *testing.T, url, host string, origin []string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if origin != nil {
		req.Header["Origin"] = origin
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestHTTPRebinding tries to get around the Host and Origin checks over a
// real connection to the handler.
func TestHTTPRebinding(t *testing.T) {
	srv := newServer(t, newFake(alpha))
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler(nil))
	defer hs.Close()
	port := hs.URL[strings.LastIndexByte(hs.URL, ':')+1:]

	withOrigins := httptest.NewServer(srv.Handler(&mcpserver.HandlerOptions{
		AllowedHosts:   []string{"agentd.example.com"},
		AllowedOrigins: []string{"https://console.example.com"},
	}))
	defer withOrigins.Close()

	tests := []struct {
		name   string
		url    string
		host   string // "" keeps the URL's host
		origin []string
		want   int
	}{
		{"loopback", hs.URL, "", nil, 200},
		{"localhost", hs.URL, "localhost:" + port, nil, 200},
		{"evil host", hs.URL, "evil.example:" + port, nil, 403},
		{"localhost.evil.com", hs.URL, "localhost.evil.com:" + port, nil, 403},
		{"localhost.evil.com no port", hs.URL, "localhost.evil.com", nil, 403},
		{"127.0.0.1.nip.io", hs.URL, "127.0.0.1.nip.io:" + port, nil, 403},
		{"origin present", hs.URL, "", []string{"http://127.0.0.1:" + port}, 403},
		{"origin localhost.evil.com", hs.URL, "", []string{"http://localhost.evil.com"}, 403},
		{"origin evil", hs.URL, "", []string{"http://evil.example"}, 403},
		{"custom host", withOrigins.URL, "agentd.example.com", nil, 200},
		{"custom host refuses loopback", withOrigins.URL, "", nil, 403},
		{"custom origin", withOrigins.URL, "agentd.example.com", []string{"https://console.example.com"}, 200},
		{"custom origin suffix", withOrigins.URL, "agentd.example.com", []string{"https://console.example.com.evil.com"}, 403},
		{"custom origin evil", withOrigins.URL, "agentd.example.com", []string{"https://evil.example"}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, tt.url, tt.host, tt.origin)
			if code != tt.want {
				t.Fatalf("status %d, want %d: %s", code, tt.want, body)
			}
			if code == 200 && !strings.Contains(body, `"serverInfo"`) {
				t.Errorf("initialize answer = %s", body)
			}
		})
	}
}

// originTransport adds an Origin header, as a browser would.
type originTransport struct{ origin string }

func (o originTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Origin", o.origin)
	return http.DefaultTransport.RoundTrip(r)
}

// TestHTTPAllowedOrigin runs a whole client session that sends an allowed
// Origin on every request, including the event stream.
func TestHTTPAllowedOrigin(t *testing.T) {
	srv := newServer(t, newFake(alpha))
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler(&mcpserver.HandlerOptions{AllowedOrigins: []string{"http://localhost:3000"}}))
	defer hs.Close()

	connect := func(origin string) (*mcp.ClientSession, error) {
		tr := &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1, HTTPClient: &http.Client{Transport: originTransport{origin}}}
		return client(nil).Connect(t.Context(), tr, nil)
	}
	cs, err := connect("http://localhost:3000")
	if err != nil {
		t.Fatalf("connect with an allowed origin: %v", err)
	}
	defer cs.Close()
	if res := call(t, cs, "ask_alpha", map[string]any{"message": "from the console"}); res.IsError || text(res) != "alpha heard: from the console" {
		t.Errorf("ask_alpha = %q", text(res))
	}
	if cs, err := connect("http://localhost:3001"); err == nil {
		cs.Close()
		t.Error("connect with another origin: no error")
	}
}
