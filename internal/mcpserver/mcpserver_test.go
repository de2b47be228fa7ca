package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/mcpserver"
)

var (
	alpha = mcpserver.Agent{ID: "alpha", Name: "Alpha", Description: "Answers questions about the alphabet."}
	beta  = mcpserver.Agent{ID: "beta"}
	gamma = mcpserver.Agent{ID: "gamma", Name: "Gamma"}
)

// connectFunc connects a go-sdk client to srv over one transport; the
// session is closed when the test ends, and the server side is checked to
// have ended cleanly.
type connectFunc func(t *testing.T, srv *mcpserver.Server, opts *mcp.ClientOptions) *mcp.ClientSession

var transports = []struct {
	name    string
	connect connectFunc
}{
	{"inmemory", connectInMemory},
	{"stdio", connectStdio},
	{"http", connectHTTP},
}

func client(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "agentd-test", Version: "1"}, opts)
}

// connectInMemory uses the SDK's in-memory transports and the SDK's
// newest protocol version.
func connectInMemory(t *testing.T, srv *mcpserver.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), st) }()
	cs, err := client(opts).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return cs
}

// connectStdio runs ServeStdio on two pipes, with the 2025-11-25
// protocol (initialize handshake) that most stdio clients speak.
func connectStdio(t *testing.T, srv *mcpserver.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.ServeStdio(context.Background(), serverIn, serverOut) }()
	cs, err := client(opts).Connect(t.Context(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		cs.Close()
		if err := <-served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return cs
}

// connectHTTP serves Handler on a loopback httptest server.
func connectHTTP(t *testing.T, srv *mcpserver.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hs := httptest.NewServer(srv.Handler(nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { srv.Close() })
	cs, err := client(opts).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func newServer(t *testing.T, fb *fakeBackend) *mcpserver.Server {
	t.Helper()
	srv := mcpserver.New(fb, &mcpserver.Options{Name: "agentd-test", Version: "1.2.3"})
	if err := srv.Sync(t.Context()); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return srv
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// callJSON calls a tool that answers JSON, checks the structured content
// equals the text, and decodes it into out.
func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args, out any) {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text(res))
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var fromText, fromStructured any
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		t.Fatalf("%s: text is not JSON: %v\n%s", name, err, text(res))
	}
	if err := json.Unmarshal(sc, &fromStructured); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(fromText, fromStructured); d != "" {
		t.Errorf("%s: text and structured content differ (-text +structured):\n%s", name, d)
	}
	if err := json.Unmarshal([]byte(text(res)), out); err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("list tools: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// waitFor waits for a notification; the deadline only keeps a broken
// build from hanging.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
	}
}

type logPage struct {
	Session string `json:"session"`
	Events  []struct {
		Seq  int64           `json:"seq"`
		Turn int64           `json:"turn"`
		Kind string          `json:"kind"`
		Time time.Time       `json:"time"`
		Data json.RawMessage `json:"data"`
	} `json:"events"`
	Next int64 `json:"next"`
	More bool  `json:"more"`
}

func (p logPage) kinds() []string {
	var ks []string
	for _, e := range p.Events {
		ks = append(ks, e.Kind)
	}
	return ks
}

type sessionList struct {
	Sessions []struct {
		Address   string    `json:"address"`
		State     string    `json:"state"`
		UpdatedAt time.Time `json:"updated_at"`
		LastSeq   int64     `json:"last_seq"`
	} `json:"sessions"`
}

func (l sessionList) addresses() []string {
	var as []string
	for _, s := range l.Sessions {
		as = append(as, s.Address)
	}
	return as
}

// TestFacade drives the whole surface over every transport.
func TestFacade(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			fb := newFake(alpha, beta)
			srv := newServer(t, fb)
			changed := make(chan struct{}, 16)
			cs := tr.connect(t, srv, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			if got := cs.InitializeResult().ServerInfo; got == nil || got.Name != "agentd-test" || got.Version != "1.2.3" {
				t.Errorf("server info = %+v", got)
			}

			want := []string{"ask_alpha", "ask_beta", "list_agents", "list_sessions", "read_session_log"}
			if d := cmp.Diff(want, toolNames(t, cs)); d != "" {
				t.Errorf("tools (-want +got):\n%s", d)
			}

			res := call(t, cs, "ask_alpha", map[string]any{"message": "hello"})
			if res.IsError || text(res) != "alpha heard: hello" {
				t.Errorf("ask_alpha = %q (isError %v)", text(res), res.IsError)
			}
			res = call(t, cs, "ask_alpha", map[string]any{"message": "again", "session": "work"})
			if res.IsError || text(res) != "alpha heard: again" {
				t.Errorf("ask_alpha in work = %q (isError %v)", text(res), res.IsError)
			}
			call(t, cs, "ask_alpha", map[string]any{"message": "more"})

			var sl sessionList
			callJSON(t, cs, "list_sessions", map[string]any{}, &sl)
			if d := cmp.Diff([]string{"alpha/mcp", "alpha/work"}, sl.addresses()); d != "" {
				t.Errorf("sessions (-want +got):\n%s", d)
			}
			if sl.Sessions[0].LastSeq != 6 || sl.Sessions[0].State != "idle" || !sl.Sessions[0].UpdatedAt.Equal(base.Add(6*time.Second)) {
				t.Errorf("alpha/mcp = %+v", sl.Sessions[0])
			}

			// Six events in alpha/mcp, read four at a time.
			var p1, p2, p3 logPage
			callJSON(t, cs, "read_session_log", map[string]any{"session": "alpha/mcp", "limit": 4}, &p1)
			if d := cmp.Diff([]string{"input", "text", "turn_end", "input"}, p1.kinds()); d != "" || p1.Next != 4 || !p1.More {
				t.Errorf("page 1: next %d more %v kinds diff:\n%s", p1.Next, p1.More, d)
			}
			callJSON(t, cs, "read_session_log", map[string]any{"session": "alpha/mcp", "after": p1.Next, "limit": 4}, &p2)
			if d := cmp.Diff([]string{"text", "turn_end"}, p2.kinds()); d != "" || p2.Next != 6 || p2.More {
				t.Errorf("page 2: next %d more %v kinds diff:\n%s", p2.Next, p2.More, d)
			}
			if got := string(p2.Events[0].Data); got != `{"text":"alpha heard: more"}` || p2.Events[0].Seq != 5 || p2.Events[0].Turn != 2 {
				t.Errorf("event 5 = %+v", p2.Events[0])
			}
			callJSON(t, cs, "read_session_log", map[string]any{"session": "alpha/mcp", "after": p2.Next}, &p3)
			if len(p3.Events) != 0 || p3.Next != 6 || p3.More {
				t.Errorf("page 3 = %+v", p3)
			}

			// A new agent and a removed one reach the client.
			fb.setAgents(alpha, gamma)
			if err := srv.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, changed, "tools/list_changed after Sync")
			want = []string{"ask_alpha", "ask_gamma", "list_agents", "list_sessions", "read_session_log"}
			if d := cmp.Diff(want, toolNames(t, cs)); d != "" {
				t.Errorf("tools after Sync (-want +got):\n%s", d)
			}
			if res := call(t, cs, "ask_gamma", map[string]any{"message": "hi"}); res.IsError || text(res) != "gamma heard: hi" {
				t.Errorf("ask_gamma = %q", text(res))
			}
			if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_beta", Arguments: map[string]any{"message": "hi"}}); err == nil {
				t.Errorf("ask_beta after its agent went: no error")
			}
		})
	}
}

func TestToolDefinitions(t *testing.T) {
	srv := newServer(t, newFake(alpha, beta))
	cs := connectInMemory(t, srv, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}

	ask := tools["ask_alpha"]
	if ask == nil {
		t.Fatal("no ask_alpha")
	}
	if want := "Send a message to the agent Alpha (alpha) and get its reply. Answers questions about the alphabet."; ask.Description != want {
		t.Errorf("ask_alpha description = %q, want %q", ask.Description, want)
	}
	if want := "Send a message to the agent beta and get its reply."; tools["ask_beta"].Description != want {
		t.Errorf("ask_beta description = %q, want %q", tools["ask_beta"].Description, want)
	}
	if ask.Annotations == nil || ask.Annotations.ReadOnlyHint || ask.Annotations.IdempotentHint {
		t.Errorf("ask_alpha annotations = %+v, want not read-only, not idempotent", ask.Annotations)
	}
	schema, _ := json.Marshal(ask.InputSchema)
	var in struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type    string `json:"type"`
			Default any    `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &in); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"message"}, in.Required); d != "" {
		t.Errorf("ask required (-want +got):\n%s", d)
	}
	if p := in.Properties["session"]; p.Type != "string" || p.Default != "mcp" {
		t.Errorf("ask session property = %+v", p)
	}

	for _, name := range []string{"list_agents", "list_sessions", "read_session_log"} {
		tool := tools[name]
		if tool == nil {
			t.Errorf("no %s", name)
			continue
		}
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s annotations = %+v, want read-only", name, tool.Annotations)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", name)
		}
	}

	var agents struct {
		Agents []struct{ ID, Name, Description, Tool string } `json:"agents"`
	}
	callJSON(t, cs, "list_agents", nil, &agents)
	want := []struct{ ID, Name, Description, Tool string }{
		{"alpha", "Alpha", "Answers questions about the alphabet.", "ask_alpha"},
		{"beta", "", "", "ask_beta"},
	}
	if d := cmp.Diff(want, agents.Agents); d != "" {
		t.Errorf("list_agents (-want +got):\n%s", d)
	}
}

// TestToolErrors checks that bad arguments and failed turns reach the
// client as tool errors with a useful message.
func TestToolErrors(t *testing.T) {
	fb := newFake(alpha)
	srv := newServer(t, fb)
	cs := connectInMemory(t, srv, nil)
	call(t, cs, "ask_alpha", map[string]any{"message": "hello"}) // creates alpha/mcp

	tests := []struct {
		tool string
		args map[string]any
		want string // in the error text
	}{
		{"ask_alpha", map[string]any{}, "message"},
		{"ask_alpha", map[string]any{"message": ""}, "message"},
		{"ask_alpha", map[string]any{"message": "   "}, "message must not be empty"},
		{"ask_alpha", map[string]any{"message": 42}, "message"},
		{"ask_alpha", map[string]any{"message": "hi", "extra": true}, "extra"},
		{"ask_alpha", map[string]any{"message": "hi", "session": "a/b"}, `must not contain "/"`},
		{"ask_alpha", map[string]any{"message": "hi", "session": "a\nb"}, "control characters"},
		{"ask_alpha", map[string]any{"message": "hi", "session": strings.Repeat("k", 300)}, "session"},
		{"ask_alpha", map[string]any{"message": "fail"}, "asking agent alpha failed: inbox is full"},
		{"ask_alpha", map[string]any{"message": "budget please"}, "the turn ended with status budget: step budget of 3 exhausted\n\nreply so far:\npartial"},
		{"list_sessions", map[string]any{"limit": 0}, "limit"},
		{"list_sessions", map[string]any{"limit": 1001}, "limit"},
		{"list_sessions", map[string]any{"agent": 7}, "agent"},
		{"read_session_log", map[string]any{}, "session"},
		{"read_session_log", map[string]any{"session": "alpha"}, "must be an address <agent>/<key>"},
		{"read_session_log", map[string]any{"session": "alpha/a/b"}, "must be an address"},
		{"read_session_log", map[string]any{"session": "/mcp"}, "must be an address"},
		{"read_session_log", map[string]any{"session": "alpha/mcp", "limit": 1001}, "limit"},
		{"read_session_log", map[string]any{"session": "alpha/mcp", "after": -1}, "after"},
		{"read_session_log", map[string]any{"session": "alpha/mcp", "after": "x"}, "after"},
		{"read_session_log", map[string]any{"session": "alpha/nope"}, "reading session alpha/nope failed: session alpha/nope not found"},
	}
	for _, tt := range tests {
		res := call(t, cs, tt.tool, tt.args)
		if !res.IsError || !strings.Contains(text(res), tt.want) {
			t.Errorf("%s %v = %q (isError %v), want an error containing %q", tt.tool, tt.args, text(res), res.IsError, tt.want)
		}
	}

	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_nobody", Arguments: map[string]any{"message": "hi"}}); err == nil {
		t.Error("unknown tool: no error")
	}

	fb.mu.Lock()
	fb.agentsErr = errors.New("registry unavailable")
	fb.mu.Unlock()
	if res := call(t, cs, "list_agents", nil); !res.IsError || !strings.Contains(text(res), "listing agents failed: registry unavailable") {
		t.Errorf("list_agents with a failing backend = %q", text(res))
	}
}

func TestListSessionsFilter(t *testing.T) {
	fb := newFake(alpha, beta)
	srv := newServer(t, fb)
	cs := connectInMemory(t, srv, nil)
	for _, a := range []string{"ask_alpha", "ask_beta"} {
		for _, key := range []string{"a", "b", "c"} {
			call(t, cs, a, map[string]any{"message": "x", "session": key})
		}
	}
	tests := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{}, []string{"alpha/a", "alpha/b", "alpha/c", "beta/a", "beta/b", "beta/c"}},
		{map[string]any{"agent": "beta"}, []string{"beta/a", "beta/b", "beta/c"}},
		{map[string]any{"agent": "alpha", "limit": 2}, []string{"alpha/a", "alpha/b"}},
		{map[string]any{"agent": "nobody"}, nil},
	}
	for _, tt := range tests {
		var sl sessionList
		callJSON(t, cs, "list_sessions", tt.args, &sl)
		if d := cmp.Diff(tt.want, sl.addresses()); d != "" {
			t.Errorf("list_sessions %v (-want +got):\n%s", tt.args, d)
		}
	}
}

func TestSync(t *testing.T) {
	fb := newFake(alpha, mcpserver.Agent{ID: "bad id"}, mcpserver.Agent{ID: ""}, alpha)
	srv := newServer(t, fb)
	cs := connectInMemory(t, srv, nil)
	want := []string{"ask_alpha", "list_agents", "list_sessions", "read_session_log"}
	if d := cmp.Diff(want, toolNames(t, cs)); d != "" {
		t.Errorf("tools (-want +got):\n%s", d)
	}

	fb.mu.Lock()
	fb.agentsErr = errors.New("registry unavailable")
	fb.mu.Unlock()
	err := srv.Sync(t.Context())
	if err == nil || !strings.Contains(err.Error(), "registry unavailable") || !errors.Is(err, fb.agentsErr) {
		t.Errorf("Sync with a failing backend = %v", err)
	}
	if d := cmp.Diff(want, toolNames(t, cs)); d != "" {
		t.Errorf("tools after a failed Sync (-want +got):\n%s", d)
	}

	// A changed description replaces the tool.
	fb.mu.Lock()
	fb.agentsErr = nil
	fb.agents = []mcpserver.Agent{{ID: "alpha", Name: "Alpha", Description: "Now answers about numbers too."}}
	fb.mu.Unlock()
	if err := srv.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "ask_alpha" && !strings.HasSuffix(tool.Description, "Now answers about numbers too.") {
			t.Errorf("ask_alpha description after Sync = %q", tool.Description)
		}
	}
}

func TestServeEnds(t *testing.T) {
	t.Run("cancel", func(t *testing.T) {
		srv := newServer(t, newFake(alpha))
		ctx, cancel := context.WithCancel(context.Background())
		clientIn, serverOut := io.Pipe()
		serverIn, clientOut := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.ServeStdio(ctx, serverIn, serverOut) }()
		cs, err := client(nil).Connect(t.Context(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		cancel()
		if err := <-served; !errors.Is(err, context.Canceled) {
			t.Errorf("ServeStdio after cancel = %v, want context.Canceled", err)
		}
		// The server closed its side: the client sees the end.
		if _, err := cs.ListTools(t.Context(), nil); err == nil {
			t.Error("ListTools after the server ended: no error")
		}
	})

	t.Run("close", func(t *testing.T) {
		fb := newFake(alpha)
		fb.blocked = make(chan struct{})
		srv := newServer(t, fb)
		st, ct := mcp.NewInMemoryTransports()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(context.Background(), st) }()
		cs, err := client(nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		asked := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_alpha", Arguments: map[string]any{"message": "block"}})
			asked <- err
		}()
		<-fb.blocked
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-served; !errors.Is(err, mcpserver.ErrClosed) {
			t.Errorf("Serve after Close = %v, want ErrClosed", err)
		}
		<-asked // the blocked ask ended
		st2, _ := mcp.NewInMemoryTransports()
		if err := srv.Serve(context.Background(), st2); !errors.Is(err, mcpserver.ErrClosed) {
			t.Errorf("Serve on a closed server = %v, want ErrClosed", err)
		}
	})
}
