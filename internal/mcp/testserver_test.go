package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/tool"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverModeEnv, when set, makes the test binary an MCP server on
// stdin/stdout: "stdio" a well-behaved one, "stubborn" one that ignores
// SIGTERM and stays after stdin closes, "fail" one that exits at once with
// a message on stderr.
const serverModeEnv = "AGENTD_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(serverModeEnv) {
	case "":
		os.Exit(m.Run())
	case "fail":
		fmt.Fprintln(os.Stderr, "fatal: bad configuration file")
		os.Exit(2)
	case "minimal":
		_ = newMinimalServer().Run(context.Background(), &sdk.StdioTransport{})
		os.Exit(0)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		_ = newTestServer(true).Run(context.Background(), &sdk.StdioTransport{})
		time.Sleep(time.Hour)
	default:
		fmt.Fprintln(os.Stderr, "warning: test server starting")
		fmt.Fprintln(os.Stderr, "an ordinary line")
		if err := newTestServer(true).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "server:", err)
		}
		os.Exit(0)
	}
}

// testHooks let in-process tests observe the test server.
type testHooks struct {
	slowStarted   chan struct{} // the slow tool is running
	slowCancelled chan struct{} // the slow tool's context ended
}

// newTestServer returns the MCP server the tests talk to. stdio adds the
// tools that only make sense in a process of its own.
func newTestServer(stdio bool) *sdk.Server {
	srv, _ := newTestServerHooks(stdio)
	return srv
}

func newTestServerHooks(stdio bool) (*sdk.Server, *testHooks) {
	hooks := &testHooks{slowStarted: make(chan struct{}, 1), slowCancelled: make(chan struct{}, 1)}
	srv := sdk.NewServer(&sdk.Implementation{Name: "testserver", Version: "1.2.3"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	add := func(t *sdk.Tool, h sdk.ToolHandler) {
		if t.InputSchema == nil {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		srv.AddTool(t, h)
	}
	var args = func(req *sdk.CallToolRequest) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return m
	}

	add(&sdk.Tool{
		Name:        "echo",
		Description: "Echoes text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true},
	}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text(fmt.Sprint(args(req)["text"])), nil
	})
	add(&sdk.Tool{Name: "meta", Description: "Returns the request's _meta and arguments."},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			b, _ := json.Marshal(map[string]any{"meta": req.Params.Meta, "args": json.RawMessage(req.Params.Arguments)})
			return text(string(b)), nil
		})
	add(&sdk.Tool{
		Name:        "ctx_tool",
		Meta:        sdk.Meta{MetaKind: "context"},
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true},
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("ctx"), nil })
	add(&sdk.Tool{
		Name:        "wipe",
		Meta:        sdk.Meta{MetaKind: "nonsense"},
		Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true)},
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("wiped"), nil })
	add(&sdk.Tool{
		Name:        "look",
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: new(true)},
	}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("looked"), nil })
	add(&sdk.Tool{Name: "fail"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		r := text("it failed")
		r.IsError = true
		return r, nil
	})
	add(&sdk.Tool{Name: "mixed"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{
			&sdk.TextContent{Text: "first"},
			&sdk.ImageContent{MIMEType: "image/png", Data: []byte(pngSignature)},
			&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte{1, 2}},
			&sdk.ResourceLink{URI: "test://linked", Name: "linked"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://t", Text: "embedded text"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://b", MIMEType: "application/zip", Blob: []byte{9, 9, 9}}},
		}}, nil
	})
	add(&sdk.Tool{Name: "structured"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"answer": 42}}, nil
	})
	add(&sdk.Tool{Name: "slow"}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		select {
		case hooks.slowStarted <- struct{}{}:
		default:
		}
		<-ctx.Done()
		select {
		case hooks.slowCancelled <- struct{}{}:
		default:
		}
		return nil, ctx.Err()
	})
	add(&sdk.Tool{Name: "dotted.name"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("dotted"), nil
	})
	add(&sdk.Tool{Name: strings.Repeat("long", 18)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text("long"), nil
	})
	add(&sdk.Tool{Name: "bad_schema", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"strng"}}}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("bad"), nil })
	add(&sdk.Tool{Name: "env", InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			v, ok := os.LookupEnv(fmt.Sprint(args(req)["name"]))
			if !ok {
				return text("<unset>"), nil
			}
			return text(v), nil
		})
	add(&sdk.Tool{Name: "big", Description: "Returns that many bytes of text.", InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			n, _ := args(req)["bytes"].(float64)
			return text(strings.Repeat("x", int(n))), nil
		})
	add(&sdk.Tool{Name: "pid"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return text(fmt.Sprint(os.Getpid())), nil
	})
	add(&sdk.Tool{Name: "add_extra"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		srv.AddTool(&sdk.Tool{Name: "extra", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("extra"), nil })
		return text("added"), nil
	})
	add(&sdk.Tool{Name: "remove_extra"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		srv.RemoveTools("extra")
		return text("removed"), nil
	})
	if stdio {
		add(&sdk.Tool{Name: "crash"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "fatal: crashing on purpose")
			os.Exit(3)
			return nil, nil
		})
	}

	srv.AddResource(&sdk.Resource{URI: "test://hello", Name: "hello", Description: "A greeting.", MIMEType: "text/plain"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "hello world"}}}, nil
		})
	srv.AddResource(&sdk.Resource{URI: "test://blob", Name: "blob", MIMEType: "application/octet-stream"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3, 4, 5}}}}, nil
		})
	srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "test://items/{id}", Name: "item"},
		func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "item " + strings.TrimPrefix(req.Params.URI, "test://items/")}}}, nil
		})
	srv.AddPrompt(&sdk.Prompt{Name: "greet", Description: "Greets someone.", Arguments: []*sdk.PromptArgument{{Name: "name", Description: "Who.", Required: true}}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			return &sdk.GetPromptResult{Description: "A greeting", Messages: []*sdk.PromptMessage{
				{Role: "user", Content: &sdk.TextContent{Text: "Hello, " + req.Params.Arguments["name"] + "!"}},
				{Role: "assistant", Content: &sdk.TextContent{Text: "Hi!"}},
			}}, nil
		})
	return srv, hooks
}

// newMinimalServer has one tool, echo, for benchmarks.
func newMinimalServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "minimal", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: args.Text}}}, nil
		})
	return srv
}

// newToolsOnlyServer is a server with one tool and no resources or prompts.
func newToolsOnlyServer() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "toolsonly", Version: "0.1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil
		})
	return srv
}

// memNet connects servers in memory, by server name, and counts dials.
type memNet struct {
	mu      sync.Mutex
	servers map[string]*sdk.Server
	dials   map[string]int
	down    map[string]bool // refuse connections
}

func newMemNet() *memNet {
	return &memNet{servers: map[string]*sdk.Server{}, dials: map[string]int{}, down: map[string]bool{}}
}

func (n *memNet) add(name string, srv *sdk.Server) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.servers[name] = srv
}

func (n *memNet) setDown(name string, down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down[name] = down
}

func (n *memNet) dialCount(name string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dials[name]
}

func (n *memNet) dial(ctx context.Context, name string, _ agent.MCPServer) (sdk.Transport, error) {
	n.mu.Lock()
	srv, down := n.servers[name], n.down[name]
	n.dials[name]++
	n.mu.Unlock()
	if srv == nil || down {
		return nil, fmt.Errorf("connection refused")
	}
	ct, st := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// memDef is a definition for a server reached through memNet.
func memDef(name string) Def {
	return Def{Name: name, Config: agent.MCPServer{URL: "http://mem.invalid/" + name}}
}

// recorder is a Registrar that records what happens, over a real registry.
type recorder struct {
	*tool.Registry
	mu  sync.Mutex
	ops []string
}

func newRecorder() *recorder { return &recorder{Registry: tool.NewRegistry(nil)} }

func (r *recorder) Register(t tool.Tool) error {
	err := r.Registry.Register(t)
	if err == nil {
		r.mu.Lock()
		r.ops = append(r.ops, "+"+t.Spec().Name)
		r.mu.Unlock()
	}
	return err
}

func (r *recorder) Unregister(name string) bool {
	ok := r.Registry.Unregister(name)
	if ok {
		r.mu.Lock()
		r.ops = append(r.ops, "-"+name)
		r.mu.Unlock()
	}
	return ok
}

func (r *recorder) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

func (r *recorder) names() []string {
	var out []string
	for _, s := range r.Specs() {
		out = append(out, s.Name)
	}
	return out
}

func (r *recorder) has(name string) bool {
	_, ok := r.Get(name)
	return ok
}

// logBuffer collects log output; safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newTestManager returns a Manager closed when the test ends.
func newTestManager(t testing.TB, o *Options) *Manager {
	t.Helper()
	if o.MinBackoff == 0 {
		o.MinBackoff = 10 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 100 * time.Millisecond
	}
	if o.StopGrace == 0 {
		o.StopGrace = 500 * time.Millisecond
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// stdioDef is a definition that runs this test binary as a server.
func stdioDef(t testing.TB, name, mode string) Def {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Def{Name: name, Config: agent.MCPServer{Command: exe, Env: map[string]string{serverModeEnv: mode}}}
}

// httpServer serves srv over streamable HTTP (or legacy SSE) and records
// the requests' headers.
type httpServer struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

// local is the allow_networks of a test server on this machine (the SSRF
// guard blocks loopback unless a server's entry allows it).
var local = []string{"127.0.0.1/32"}

func newHTTPServer(t testing.TB, srv *sdk.Server, sse bool) *httpServer {
	t.Helper()
	if sse {
		return serveHTTP(t, sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	}
	return serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
}

// serveHTTP serves h and records the requests' headers.
func serveHTTP(t testing.TB, h http.Handler) *httpServer {
	t.Helper()
	hs := &httpServer{}
	hs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.mu.Lock()
		hs.headers = append(hs.headers, r.Header.Clone())
		hs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func (h *httpServer) seen() []http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.headers)
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pngSignature starts every PNG file: enough for an image's content to be
// taken for a PNG.
const pngSignature = "\x89PNG\r\n\x1a\n"

// run calls a registered tool through the registry.
func run(t testing.TB, r *recorder, c *tool.Call) tool.Result {
	t.Helper()
	return r.Run(context.Background(), c, nil).Result
}
