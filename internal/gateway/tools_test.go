package gateway_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/approval"
	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/gateway"
	"agentd/internal/identity"
	"agentd/internal/mcp"
	"agentd/internal/permit"
	"agentd/internal/runtime"
	"agentd/internal/skill"
	"agentd/internal/tool"
)

// Fakes of the tool layer's parts. Their errors wrap the same sentinels,
// with the same kind of text, as the real parts'.

// fakeLifecycle answers every message with an object built from its input.
type fakeLifecycle struct {
	mu  sync.Mutex
	got []runtime.Input
	err error // returned by every call when set
}

func (f *fakeLifecycle) Message(_ context.Context, in runtime.Input) (runtime.Receipt, *engine.Object, error) {
	f.mu.Lock()
	f.got = append(f.got, in)
	f.mu.Unlock()
	if f.err != nil {
		return runtime.Receipt{}, nil, f.err
	}
	agentID, _, err := runtime.ParseAddress(in.Session)
	if err != nil {
		return runtime.Receipt{}, nil, err
	}
	if _, ok := testAgents()[agentID]; !ok {
		return runtime.Receipt{}, nil, fmt.Errorf("%w %q", runtime.ErrUnknownAgent, agentID)
	}
	opts, err := engine.ParseLifecycleOptions(in.Options)
	if err != nil {
		return runtime.Receipt{}, nil, fmt.Errorf("%w: %w", runtime.ErrBadOptions, err)
	}
	ch := opts.ChannelID
	if ch == "" {
		ch = in.Session
	}
	obj := &engine.Object{DaemonName: agentID, MessageID: "42", Message: in.Text, ChannelID: ch, Output: "re: " + in.Text,
		Context: []string{"ctx"}, Tools: []json.RawMessage{}, Hooks: []json.RawMessage{}, HooksLog: []engine.LogEntry{},
		ActionsLog: []engine.LogEntry{}, PostProcessLog: []engine.LogEntry{}, Status: "done"}
	return runtime.Receipt{Session: in.Session, SessionID: 7, Turn: 42}, obj, nil
}

func (f *fakeLifecycle) last() runtime.Input {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.got) == 0 {
		return runtime.Input{}
	}
	return f.got[len(f.got)-1]
}

// fakeMCP is a set of MCP servers that connect at once.
type fakeMCP struct {
	mu      sync.Mutex
	servers map[string]mcp.Status
	configs map[string]agent.MCPServer
	tools   map[string][]tool.Spec
	added   []mcp.Def
	err     error // returned by every call when set
}

func newFakeMCP() *fakeMCP {
	return &fakeMCP{
		servers: map[string]mcp.Status{"files": {Name: "files", Transport: "stdio", Source: "config", State: "connected", Tools: 2, PID: 99,
			ServerName: "fs", ServerVersion: "1.0", Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
		configs: map[string]agent.MCPServer{"files": {Command: "fs-server"}},
		tools: map[string][]tool.Spec{"files": {
			{Name: "files__read", Description: "Read a file.", ReadOnly: true, Idempotent: true, InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "files__rm", Description: "Remove a file.", Kind: tool.KindAction, Destructive: true},
		}},
	}
}

func (f *fakeMCP) List() []mcp.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []mcp.Status
	for _, name := range slices.Sorted(mapKeys(f.servers)) {
		out = append(out, f.servers[name])
	}
	return out
}

func (f *fakeMCP) Add(_ context.Context, d mcp.Def) (mcp.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.added = append(f.added, d)
	switch {
	case f.err != nil:
		return mcp.Status{}, f.err
	case d.Name == "" || d.Config.EffectiveTransport() == "":
		return mcp.Status{}, fmt.Errorf("mcp: server %q: %w: give a command or a url", d.Name, mcp.ErrInvalid)
	}
	if cfg, ok := f.configs[d.Name]; ok {
		if !cmp.Equal(cfg, d.Config) {
			return mcp.Status{}, fmt.Errorf("mcp: %w: server %q is already defined by config with a different configuration", mcp.ErrConflict, d.Name)
		}
		return f.servers[d.Name], nil
	}
	st := mcp.Status{Name: d.Name, Transport: d.Config.EffectiveTransport(), Source: d.Source, State: "connected", Agents: d.Agents, Tools: 1}
	f.servers[d.Name], f.configs[d.Name] = st, d.Config
	f.tools[d.Name] = []tool.Spec{{Name: d.Name + "__ping", Kind: tool.KindModel}}
	return st, nil
}

func (f *fakeMCP) Remove(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.servers[name]
	switch {
	case f.err != nil:
		return f.err
	case !ok:
		return fmt.Errorf("mcp: remove %q: %w", name, mcp.ErrNotFound)
	case st.Source != "runtime":
		return fmt.Errorf("mcp: remove %q: %w (%s): edit the file to remove it", name, mcp.ErrConfigured, st.Source)
	}
	delete(f.servers, name)
	delete(f.configs, name)
	delete(f.tools, name)
	return nil
}

func (f *fakeMCP) Tools(name string) ([]tool.Spec, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	if _, ok := f.servers[name]; !ok {
		return nil, fmt.Errorf("mcp: tools %q: %w", name, mcp.ErrNotFound)
	}
	return f.tools[name], nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// fakeKeys keeps keys in memory.
type fakeKeys struct {
	mu   sync.Mutex
	keys map[string]ed25519.PrivateKey
	err  error // returned by every call when set
}

func newFakeKeys() *fakeKeys { return &fakeKeys{keys: map[string]ed25519.PrivateKey{}} }

func pub(k ed25519.PrivateKey) string {
	return approval.EncodePublicKey(k.Public().(ed25519.PublicKey))
}

func (f *fakeKeys) check(id string) error {
	if f.err != nil {
		return f.err
	}
	if !agent.ValidID(id) {
		return fmt.Errorf("identity: %q: %w", id, agent.ErrInvalidID)
	}
	return nil
}

func (f *fakeKeys) Public(id string) (string, bool, error) {
	if err := f.check(id); err != nil {
		return "", false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[id]
	if !ok {
		return "", false, nil
	}
	return pub(k), true, nil
}

func (f *fakeKeys) store(id string, k ed25519.PrivateKey, force bool) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.keys[id]; ok && !force {
		return "", fmt.Errorf("identity: agent %q: %w", id, identity.ErrExists)
	}
	f.keys[id] = k
	return pub(k), nil
}

func (f *fakeKeys) Generate(id string, force bool) (string, error) {
	if err := f.check(id); err != nil {
		return "", err
	}
	_, k, err := ed25519.GenerateKey(nil)
	if err != nil {
		return "", err
	}
	return f.store(id, k, force)
}

func (f *fakeKeys) Import(id string, r io.Reader, force bool) (string, error) {
	if err := f.check(id); err != nil {
		return "", err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	k, err := identity.ParseKeypair(data)
	if err != nil {
		return "", fmt.Errorf("identity: import %q: %w", id, err)
	}
	return f.store(id, k, force)
}

// skillSet gives a fixed set of skills.
type skillSet struct{ s *skill.Set }

func (s skillSet) Skills() *skill.Set { return s.s }

// testSkills loads three skills: one available, one that needs a program
// nobody has, and one with a broken SKILL.md.
func testSkills(t *testing.T) *skill.Set {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"notes/SKILL.md":   "---\nname: notes\ndescription: Keep notes. Use when asked to remember.\n---\n# Notes\nWrite them down.\n",
		"ffmpeg/SKILL.md":  "---\nname: ffmpeg\ndescription: Cut videos.\nrequires:\n  bins: [agentd-no-such-program]\n---\nUse ffmpeg.\n",
		"broken/SKILL.md":  "---\nname: broken\ndescription: [unclosed\n---\nbody\n",
		"bundled/SKILL.md": "---\nname: bundled\ndescription: Has servers.\nmcp_servers:\n  zeta: {command: ./z}\n  alpha: {command: ./a}\n---\nBundled.\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	set, err := skill.Load([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// newToolEnv serves the API with the tool layer's parts of o (the
// session routes are not used).
func newToolEnv(t *testing.T, o gateway.Options) *env {
	t.Helper()
	o.Agents = testAgents()
	srv := gateway.New(&o)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return &env{t: t, srv: srv, http: hs}
}

// waitListed waits until the broker lists the approval id.
func waitListed(t *testing.T, b *permit.Broker, id string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if _, ok := b.Get(id); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("approval %s never waited", id)
		}
		time.Sleep(time.Millisecond)
	}
}

// ask makes a call wait for approval at b and returns a channel with its
// decision.
func ask(t *testing.T, b *permit.Broker, id string) (permit.Request, <-chan permit.Decision) {
	t.Helper()
	now := time.Now().UTC().Round(time.Millisecond)
	req := permit.Request{ID: id, Agent: "a", Session: "a/chat:bob", Turn: 3, CallID: "call-1", Tool: "demo__counter",
		Args: json.RawMessage(`{"n":1}`), Reason: `tool demo__counter needs approval (pattern "demo__*")`, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	return req, askReq(t, b, req)
}

// askReq makes req wait in b; the channel gets its decision.
func askReq(t *testing.T, b *permit.Broker, req permit.Request) <-chan permit.Decision {
	t.Helper()
	ch := make(chan permit.Decision, 1)
	go func() {
		d, err := b.Wait(context.Background(), req)
		if err != nil {
			d.Reason = "error: " + err.Error()
		}
		ch <- d
	}()
	waitListed(t, b, req.ID)
	return ch
}

func TestLifecycleRoute(t *testing.T) {
	lc := &fakeLifecycle{}
	e := newToolEnv(t, gateway.Options{Lifecycle: lc})
	f := false
	tests := []struct {
		name, body  string
		wantSession string
		wantOpts    *engine.LifecycleOptions
		wantIdem    string
	}{
		{"defaults", `{"message":"hello"}`, "a/lifecycle", nil, ""},
		{"channel names the session", `{"message":"hello","opts":{"channelId":"room-1"}}`, "a/room-1", &engine.LifecycleOptions{ChannelID: "room-1"}, ""},
		{"a channel that is no key", `{"message":"hello","opts":{"channelId":"#general / ops"}}`, "a/lifecycle", &engine.LifecycleOptions{ChannelID: "#general / ops"}, ""},
		{"session wins", `{"message":"hello","session":"chat:bob","opts":{"channelId":"room-1"}}`, "a/chat:bob", &engine.LifecycleOptions{ChannelID: "room-1"}, ""},
		{"every option", `{"message":"hello","idempotency_key":"m-1","opts":{"context":false,"actions":false,"postProcess":false,"toolArgs":{"demo-quote":{"price":3}}}}`,
			"a/lifecycle", &engine.LifecycleOptions{Context: &f, Actions: &f, PostProcess: &f, ToolArgs: map[string]json.RawMessage{"demo-quote": json.RawMessage(`{"price":3}`)}}, "m-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, ctype, body := e.do("POST", "/v1/agents/a/message", tt.body)
			if status != 200 || ctype != "application/json" {
				t.Fatalf("%d %s %s", status, ctype, body)
			}
			var resp gateway.LifecycleResponse
			decodeStrict(t, body, &resp)
			if resp.Session != tt.wantSession || resp.Turn != 42 || resp.SessionID != 7 || resp.Lifecycle == nil ||
				resp.Lifecycle.Message != "hello" || resp.Lifecycle.Output != "re: hello" || resp.Lifecycle.Status != "done" {
				t.Errorf("response %s", body)
			}
			in := lc.last()
			if in.Session != tt.wantSession || in.Text != "hello" || in.Source != "api" || in.IdempotencyKey != tt.wantIdem {
				t.Errorf("input %+v", in)
			}
			var opts *engine.LifecycleOptions
			if in.Options != nil {
				opts = new(engine.LifecycleOptions)
				decodeStrict(t, in.Options, opts)
			}
			if diff := cmp.Diff(tt.wantOpts, opts); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLifecycleRouteErrors(t *testing.T) {
	e := newToolEnv(t, gateway.Options{Lifecycle: &fakeLifecycle{}})
	tests := []struct {
		name, path, body string
		status           int
		code, reason     string
	}{
		{"not JSON", "/v1/agents/a/message", `{"message":`, 400, "bad_request", "body"},
		{"not an object", "/v1/agents/a/message", `["hello"]`, 400, "bad_request", "body"},
		{"wrong type", "/v1/agents/a/message", `{"message":5}`, 400, "bad_request", "message"},
		{"unknown field", "/v1/agents/a/message", `{"message":"x","text":"y"}`, 400, "bad_request", `"text"`},
		{"unknown option", "/v1/agents/a/message", `{"message":"x","opts":{"channel":"c"}}`, 400, "bad_request", `"channel"`},
		{"two objects", "/v1/agents/a/message", `{"message":"x"}{}`, 400, "bad_request", "one JSON object"},
		{"tool args not an object", "/v1/agents/a/message", `{"message":"x","opts":{"toolArgs":{"demo-quote":[1]}}}`, 400, "bad_request", "demo-quote"},
		{"unknown agent", "/v1/agents/ghost/message", `{"message":"x"}`, 404, "not_found", "ghost"},
		{"session with a slash", "/v1/agents/a/message", `{"message":"x","session":"b/c"}`, 400, "bad_request", "a/b/c"},
		{"wrong method", "/v1/agents/a/message", ``, 405, "method_not_allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := "POST"
			if tt.status == 405 {
				method = "GET"
			}
			er := checkError(t, e, method, tt.path, tt.body, tt.status, tt.code)
			if !strings.Contains(er.Error, tt.reason) {
				t.Errorf("error %q does not say %q", er.Error, tt.reason)
			}
			if showsInternals(er.Error) {
				t.Errorf("error %q shows internals", er.Error)
			}
		})
	}
	huge := `{"message":"` + strings.Repeat("x", gateway.MaxBody) + `"}`
	checkError(t, e, "POST", "/v1/agents/a/message", huge, 413, "too_large")

	// Not configured; failing.
	none := newToolEnv(t, gateway.Options{})
	checkError(t, none, "POST", "/v1/agents/a/message", `{"message":"x"}`, 501, "not_available")
	broken := newToolEnv(t, gateway.Options{Lifecycle: &fakeLifecycle{err: errDisk}})
	if got := checkError(t, broken, "POST", "/v1/agents/a/message", `{"message":"x"}`, 500, "internal"); got.Error != "internal error" {
		t.Errorf("internal error shown as %q", got.Error)
	}
}

func TestApprovalRoutes(t *testing.T) {
	b := permit.New()
	e := newToolEnv(t, gateway.Options{Permits: b})

	status, _, body := e.do("GET", "/v1/approvals", "")
	if status != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("no approvals: %d %s", status, body)
	}

	req, decided := ask(t, b, "ap1")
	status, _, body = e.do("GET", "/v1/approvals", "")
	var list []permit.Request
	decodeStrict(t, body, &list)
	if diff := cmp.Diff([]permit.Request{req}, list); status != 200 || diff != "" {
		t.Fatalf("approvals: %d (-want +got):\n%s", status, diff)
	}

	// Granted, by whoever says so; the waiting call gets the decision.
	status, _, body = e.do("POST", "/v1/approvals/ap1/grant", `{"by":"alice"}`)
	var d permit.Decision
	decodeStrict(t, body, &d)
	want := permit.Decision{Granted: true, By: "alice"}
	if status != 200 || d != want {
		t.Errorf("grant: %d %s", status, body)
	}
	if got := recv(t, "the decision", decided); got != want {
		t.Errorf("the call got %+v, want %+v", got, want)
	}
	// Answered: it waits no more.
	checkError(t, e, "POST", "/v1/approvals/ap1/grant", "", 404, "not_found")
	checkError(t, e, "POST", "/v1/approvals/ap1/deny", "", 404, "not_found")

	// Denied with a reason; without a body the answer is the API's.
	_, decided = ask(t, b, "ap2")
	status, _, body = e.do("POST", "/v1/approvals/ap2/deny", `{"reason":"not on Sundays"}`)
	want = permit.Decision{Reason: "not on Sundays", By: "api"}
	d = permit.Decision{}
	decodeStrict(t, body, &d)
	if status != 200 || d != want {
		t.Errorf("deny: %d %s", status, body)
	}
	if got := recv(t, "the decision", decided); got != want {
		t.Errorf("the call got %+v, want %+v", got, want)
	}
	_, decided = ask(t, b, "ap3")
	status, _, body = e.do("POST", "/v1/approvals/ap3/grant", "")
	if status != 200 || strings.TrimSpace(string(body)) != `{"granted":true,"by":"api"}` {
		t.Errorf("grant without a body: %d %s", status, body)
	}
	recv(t, "the decision", decided)

	// Bad requests leave the call waiting.
	_, decided = ask(t, b, "ap4")
	for _, bad := range []string{`{"reason":`, `{"reason":"x","colour":"red"}`, `{"by":7}`, `"yes"`} {
		if er := checkError(t, e, "POST", "/v1/approvals/ap4/deny", bad, 400, "bad_request"); !strings.Contains(er.Error, "body") {
			t.Errorf("deny %s: error %q gives no reason", bad, er.Error)
		}
	}
	huge := `{"reason":"` + strings.Repeat("x", gateway.MaxBody) + `"}`
	checkError(t, e, "POST", "/v1/approvals/ap4/deny", huge, 413, "too_large")
	if _, ok := b.Get("ap4"); !ok {
		t.Fatal("a refused answer resolved the call")
	}
	checkError(t, e, "POST", "/v1/approvals/nope/grant", `{}`, 404, "not_found")
	checkError(t, e, "GET", "/v1/approvals/ap4/grant", "", 405, "")
	b.Resolve("ap4", permit.Decision{})
	recv(t, "the decision", decided)

	// Without a broker nothing waits.
	none := newToolEnv(t, gateway.Options{})
	status, _, body = none.do("GET", "/v1/approvals", "")
	if status != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("approvals without a broker: %d %s", status, body)
	}
	checkError(t, none, "POST", "/v1/approvals/ap1/grant", "", 404, "not_found")
}

func TestMCPRoutes(t *testing.T) {
	m := newFakeMCP()
	e := newToolEnv(t, gateway.Options{MCP: m})

	status, _, body := e.do("GET", "/v1/mcp/servers", "")
	var list []gateway.ServerInfo
	decodeStrict(t, body, &list)
	want := []gateway.ServerInfo{{Name: "files", Transport: "stdio", Source: "config", State: "connected", Tools: 2, PID: 99,
		ServerName: "fs", ServerVersion: "1.0", Since: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	if diff := cmp.Diff(want, list); status != 200 || diff != "" {
		t.Errorf("servers: %d (-want +got):\n%s", status, diff)
	}

	status, _, body = e.do("GET", "/v1/mcp/servers/files/tools", "")
	var tools []gateway.ToolInfo
	decodeStrict(t, body, &tools)
	wantTools := []gateway.ToolInfo{
		{Name: "files__read", Description: "Read a file.", Kind: "model", ReadOnly: true, Idempotent: true, InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "files__rm", Description: "Remove a file.", Kind: "action", Destructive: true},
	}
	if diff := cmp.Diff(wantTools, tools); status != 200 || diff != "" {
		t.Errorf("tools: %d (-want +got):\n%s", status, diff)
	}

	// Added at run time, for one agent.
	status, _, body = e.do("POST", "/v1/mcp/servers", `{"name":"web","server":{"url":"http://127.0.0.1:9/mcp","headers":{"X-A":"1"}},"agent":"a"}`)
	var si gateway.ServerInfo
	decodeStrict(t, body, &si)
	wantSI := gateway.ServerInfo{Name: "web", Transport: "http", Source: "runtime", State: "connected", Agents: []string{"a"}, Tools: 1}
	if diff := cmp.Diff(wantSI, si); status != http.StatusCreated || diff != "" {
		t.Errorf("add: %d (-want +got):\n%s", status, diff)
	}
	wantDef := mcp.Def{Name: "web", Config: agent.MCPServer{URL: "http://127.0.0.1:9/mcp", Headers: map[string]string{"X-A": "1"}}, Agents: []string{"a"}, Source: "runtime"}
	if diff := cmp.Diff(wantDef, m.added[len(m.added)-1]); diff != "" {
		t.Errorf("definition (-want +got):\n%s", diff)
	}
	status, _, body = e.do("POST", "/v1/mcp/servers", `{"name":"node-wide","server":{"command":"x"}}`)
	if status != http.StatusCreated || m.added[len(m.added)-1].Agents != nil {
		t.Errorf("add for every agent: %d %s, agents %v", status, body, m.added[len(m.added)-1].Agents)
	}
	status, _, body = e.do("DELETE", "/v1/mcp/servers/web", "")
	if status != 200 || strings.TrimSpace(string(body)) != `{"removed":true}` {
		t.Errorf("remove: %d %s", status, body)
	}

	errs := []struct {
		name, method, path, body string
		status                   int
		code, reason             string
	}{
		{"unknown server's tools", "GET", "/v1/mcp/servers/web/tools", "", 404, "not_found", "web"},
		{"remove unknown", "DELETE", "/v1/mcp/servers/web", "", 404, "not_found", "web"},
		{"remove configured", "DELETE", "/v1/mcp/servers/files", "", 409, "conflict", "edit the file"},
		{"conflicting definition", "POST", "/v1/mcp/servers", `{"name":"files","server":{"command":"other"}}`, 409, "conflict", "different configuration"},
		{"invalid definition", "POST", "/v1/mcp/servers", `{"name":"x","server":{}}`, 400, "bad_request", "command or a url"},
		{"not JSON", "POST", "/v1/mcp/servers", `{"name":`, 400, "bad_request", "body"},
		{"unknown field", "POST", "/v1/mcp/servers", `{"name":"x","server":{"cmd":"x"}}`, 400, "bad_request", `"cmd"`},
		{"wrong type", "POST", "/v1/mcp/servers", `{"name":"x","server":{"args":"a b"}}`, 400, "bad_request", "args"},
		{"wrong method", "PUT", "/v1/mcp/servers/files", "", 405, "method_not_allowed", ""},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			er := checkError(t, e, tt.method, tt.path, tt.body, tt.status, tt.code)
			if !strings.Contains(er.Error, tt.reason) || showsInternals(er.Error) {
				t.Errorf("error %q: want one that says %q and shows no internals", er.Error, tt.reason)
			}
		})
	}
	huge := `{"name":"x","server":{"command":"` + strings.Repeat("x", gateway.MaxBody) + `"}}`
	checkError(t, e, "POST", "/v1/mcp/servers", huge, 413, "too_large")
	if _, ok := m.servers["x"]; ok {
		t.Error("a refused definition was added")
	}

	// Not configured: an empty list, and 501 for the rest.
	none := newToolEnv(t, gateway.Options{})
	status, _, body = none.do("GET", "/v1/mcp/servers", "")
	if status != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("servers without MCP: %d %s", status, body)
	}
	checkError(t, none, "POST", "/v1/mcp/servers", `{"name":"x","server":{"command":"x"}}`, 501, "not_available")
	checkError(t, none, "DELETE", "/v1/mcp/servers/x", "", 501, "not_available")
	checkError(t, none, "GET", "/v1/mcp/servers/x/tools", "", 501, "not_available")

	// A server that is not connected; a part that fails.
	m.err = fmt.Errorf("mcp: %w", mcp.ErrNotConnected)
	checkError(t, e, "GET", "/v1/mcp/servers/files/tools", "", 503, "unavailable")
	m.err = errDisk
	for _, r := range [][2]string{{"GET", "/v1/mcp/servers/files/tools"}, {"DELETE", "/v1/mcp/servers/files"}} {
		if got := checkError(t, e, r[0], r[1], "", 500, "internal"); got.Error != "internal error" {
			t.Errorf("%s %s: internal error shown as %q", r[0], r[1], got.Error)
		}
	}
}

func TestKeyRoutes(t *testing.T) {
	k := newFakeKeys()
	e := newToolEnv(t, gateway.Options{Keys: k})
	key := func(method, body string) (int, gateway.KeyInfo) {
		t.Helper()
		status, _, b := e.do(method, "/v1/agents/a/key", body)
		var ki gateway.KeyInfo
		if status == 200 {
			decodeStrict(t, b, &ki)
		}
		return status, ki
	}

	if status, ki := key("GET", ""); status != 200 || ki != (gateway.KeyInfo{Agent: "a"}) {
		t.Errorf("no key yet: %d %+v", status, ki)
	}
	status, first := key("POST", `{}`)
	if status != 200 || !first.Exists || first.Agent != "a" || first.Pubkey == "" {
		t.Fatalf("generate: %d %+v", status, first)
	}
	if status, ki := key("GET", ""); status != 200 || ki != first {
		t.Errorf("show: %d %+v, want %+v", status, ki, first)
	}
	checkError(t, e, "POST", "/v1/agents/a/key", `{}`, 409, "conflict")
	status, second := key("POST", `{"force":true}`)
	if status != 200 || second.Pubkey == first.Pubkey {
		t.Errorf("generate --force: %d %+v", status, second)
	}

	// Import a Solana keypair file's content.
	seed := bytes.Repeat([]byte{7}, ed25519.SeedSize)
	priv := ed25519.NewKeyFromSeed(seed)
	file := identity.EncodeKeypair(priv)
	checkError(t, e, "PUT", "/v1/agents/a/key", `{"keypair":`+string(file)+`}`, 409, "conflict")
	status, imported := key("PUT", `{"force":true,"keypair":`+string(file)+`}`)
	if want := (gateway.KeyInfo{Agent: "a", Pubkey: pub(priv), Exists: true}); status != 200 || imported != want {
		t.Errorf("import: %d %+v, want %+v", status, imported, want)
	}
	if status, ki := key("GET", ""); status != 200 || ki != imported {
		t.Errorf("show after import: %d %+v", status, ki)
	}

	var short bytes.Buffer
	json.NewEncoder(&short).Encode(make([]int, 63))
	errs := []struct {
		name, method, path, body string
		status                   int
		code, reason             string
	}{
		{"import without a keypair", "PUT", "/v1/agents/a/key", `{"force":true}`, 400, "bad_request", "keypair"},
		{"import 63 numbers", "PUT", "/v1/agents/a/key", `{"force":true,"keypair":` + short.String() + `}`, 400, "bad_request", "63 numbers"},
		{"import a key of another seed", "PUT", "/v1/agents/a/key", `{"force":true,"keypair":` + strings.Replace(string(file), "[7,", "[8,", 1) + `}`, 400, "bad_request", "does not belong"},
		{"import not JSON", "PUT", "/v1/agents/a/key", `{"keypair":[1,2`, 400, "bad_request", "body"},
		{"unknown field", "POST", "/v1/agents/a/key", `{"force":true,"overwrite":true}`, 400, "bad_request", `"overwrite"`},
		{"wrong type", "POST", "/v1/agents/a/key", `{"force":"yes"}`, 400, "bad_request", "force"},
		{"invalid agent id", "GET", "/v1/agents/no%20spaces/key", "", 400, "bad_request", "no spaces"},
		{"invalid agent id, generate", "POST", "/v1/agents/..%2Fetc/key", `{}`, 400, "bad_request", "../etc"},
		{"wrong method", "DELETE", "/v1/agents/a/key", "", 405, "method_not_allowed", ""},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			er := checkError(t, e, tt.method, tt.path, tt.body, tt.status, tt.code)
			if !strings.Contains(er.Error, tt.reason) || showsInternals(er.Error) {
				t.Errorf("error %q: want one that says %q and shows no internals", er.Error, tt.reason)
			}
		})
	}
	huge := `{"keypair":[` + strings.Repeat("1,", gateway.MaxBody/2) + `1]}`
	checkError(t, e, "PUT", "/v1/agents/a/key", huge, 413, "too_large")
	if status, ki := key("GET", ""); status != 200 || ki != imported {
		t.Errorf("a refused request changed the key: %+v", ki)
	}

	none := newToolEnv(t, gateway.Options{})
	for _, m := range []string{"GET", "POST", "PUT"} {
		checkError(t, none, m, "/v1/agents/a/key", `{}`, 501, "not_available")
	}
	k.err = errDisk
	for _, m := range []string{"GET", "POST", "PUT"} {
		if got := checkError(t, e, m, "/v1/agents/a/key", `{"keypair":`+string(file)+`}`, 500, "internal"); got.Error != "internal error" {
			t.Errorf("%s: internal error shown as %q", m, got.Error)
		}
	}
}

func TestSkillRoutes(t *testing.T) {
	e := newToolEnv(t, gateway.Options{Skills: skillSet{testSkills(t)}})
	status, _, body := e.do("GET", "/v1/skills", "")
	var list []gateway.SkillInfo
	decodeStrict(t, body, &list)
	if status != 200 || len(list) != 4 {
		t.Fatalf("skills: %d %s", status, body)
	}
	byName := map[string]gateway.SkillInfo{}
	for _, s := range list {
		byName[s.Name] = s
		if !filepath.IsAbs(s.Dir) || filepath.Base(s.Dir) != s.Name {
			t.Errorf("skill %s: dir %q", s.Name, s.Dir)
		}
	}
	ignoreDir := cmpopts.IgnoreFields(gateway.SkillInfo{}, "Dir")
	for _, want := range []gateway.SkillInfo{
		{Name: "notes", Description: "Keep notes. Use when asked to remember.", Available: true},
		{Name: "bundled", Description: "Has servers.", Available: true, Servers: []string{"alpha", "zeta"}},
	} {
		if diff := cmp.Diff(want, byName[want.Name], ignoreDir); diff != "" {
			t.Errorf("skill %s (-want +got):\n%s", want.Name, diff)
		}
	}
	if s := byName["ffmpeg"]; s.Available || len(s.Missing) != 1 || !strings.Contains(s.Missing[0], "agentd-no-such-program") || s.Error != "" {
		t.Errorf("skill missing a program: %+v", s)
	}
	if s := byName["broken"]; s.Available || !strings.Contains(s.Error, "SKILL.md") {
		t.Errorf("broken skill: %+v", s)
	}

	status, _, body = e.do("GET", "/v1/skills/notes", "")
	var d gateway.SkillDetail
	decodeStrict(t, body, &d)
	if status != 200 || d.Name != "notes" || !d.Available || !strings.HasPrefix(d.Body, "# Notes\nWrite them down.\n") {
		t.Errorf("skill notes: %d %s", status, body)
	}
	// An unavailable skill still shows its instructions; a broken one its error.
	status, _, body = e.do("GET", "/v1/skills/ffmpeg", "")
	d = gateway.SkillDetail{}
	decodeStrict(t, body, &d)
	if status != 200 || d.Available || !strings.HasPrefix(d.Body, "Use ffmpeg.\n") {
		t.Errorf("skill ffmpeg: %d %s", status, body)
	}
	status, _, body = e.do("GET", "/v1/skills/broken", "")
	d = gateway.SkillDetail{}
	decodeStrict(t, body, &d)
	if status != 200 || d.Error == "" || d.Body != "" {
		t.Errorf("skill broken: %d %s", status, body)
	}
	if er := checkError(t, e, "GET", "/v1/skills/nope", "", 404, "not_found"); !strings.Contains(er.Error, "nope") || showsInternals(er.Error) {
		t.Errorf("unknown skill: %q", er.Error)
	}
	checkError(t, e, "POST", "/v1/skills/notes", "{}", 405, "")

	none := newToolEnv(t, gateway.Options{})
	status, _, body = none.do("GET", "/v1/skills", "")
	if status != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("skills without a set: %d %s", status, body)
	}
	checkError(t, none, "GET", "/v1/skills/notes", "", 404, "not_found")
}

// The Client's tool-layer methods, over an in-process pipe.
func TestToolClient(t *testing.T) {
	lc, m, k, b := &fakeLifecycle{}, newFakeMCP(), newFakeKeys(), permit.New()
	e := newToolEnv(t, gateway.Options{Lifecycle: lc, Permits: b, MCP: m, Keys: k, Skills: skillSet{testSkills(t)}})
	c, stop := gateway.Pipe(e.srv)
	defer stop()
	ctx := t.Context()
	var ae *gateway.APIError

	// Lifecycle.
	resp, err := c.Lifecycle(ctx, "a", gateway.LifecycleRequest{Message: "hi", Opts: &engine.LifecycleOptions{ChannelID: "room"}})
	if err != nil || resp.Session != "a/room" || resp.Lifecycle == nil || resp.Lifecycle.Output != "re: hi" || resp.Lifecycle.ChannelID != "room" {
		t.Errorf("Lifecycle: %+v, %v", resp, err)
	}
	if _, err := c.Lifecycle(ctx, "ghost", gateway.LifecycleRequest{Message: "hi"}); !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("Lifecycle of an unknown agent: %v", err)
	}
	if _, err := c.Lifecycle(ctx, "a/b", gateway.LifecycleRequest{Message: "hi"}); !errors.As(err, &ae) || ae.Status != 400 {
		t.Errorf("Lifecycle of a/b: %v (the id is one path segment, and no agent id)", err)
	}

	// Approvals.
	if list, err := c.Approvals(ctx); err != nil || len(list) != 0 {
		t.Errorf("Approvals: %v, %v", list, err)
	}
	req, decided := ask(t, b, "x/1") // an id that needs escaping
	if list, err := c.Approvals(ctx); err != nil || !cmp.Equal(list, []permit.Request{req}) {
		t.Errorf("Approvals: %+v, %v", list, err)
	}
	d, err := c.Resolve(ctx, "x/1", false, "too many")
	want := permit.Decision{Reason: "too many", By: "cli"}
	if err != nil || d != want {
		t.Errorf("Resolve: %+v, %v", d, err)
	}
	if got := recv(t, "the decision", decided); got != want {
		t.Errorf("decision %+v", got)
	}
	_, decided = ask(t, b, "x2")
	if d, err := c.Resolve(ctx, "x2", true, ""); err != nil || d != (permit.Decision{Granted: true, By: "cli"}) {
		t.Errorf("Resolve grant: %+v, %v", d, err)
	}
	recv(t, "the decision", decided)
	if _, err := c.Resolve(ctx, "x2", true, ""); !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "not_found" {
		t.Errorf("Resolve twice: %v", err)
	}

	// MCP servers.
	st, err := c.AddMCPServer(ctx, gateway.AddServerRequest{Name: "w b", Server: agent.MCPServer{Command: "srv", Args: []string{"-v"}}, Agent: "b"})
	if err != nil || st.Name != "w b" || st.State != "connected" || !slices.Equal(st.Agents, []string{"b"}) {
		t.Errorf("AddMCPServer: %+v, %v", st, err)
	}
	if list, err := c.MCPServers(ctx); err != nil || len(list) != 2 || list[1].Name != "w b" {
		t.Errorf("MCPServers: %+v, %v", list, err)
	}
	if tools, err := c.MCPTools(ctx, "w b"); err != nil || len(tools) != 1 || tools[0].Name != "w b__ping" {
		t.Errorf("MCPTools: %+v, %v", tools, err)
	}
	if err := c.RemoveMCPServer(ctx, "w b"); err != nil {
		t.Errorf("RemoveMCPServer: %v", err)
	}
	if err := c.RemoveMCPServer(ctx, "w b"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("RemoveMCPServer twice: %v", err)
	}
	if _, err := c.MCPTools(ctx, "w b"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("MCPTools of a removed server: %v", err)
	}
	if _, err := c.AddMCPServer(ctx, gateway.AddServerRequest{Name: "files", Server: agent.MCPServer{Command: "other"}}); !errors.As(err, &ae) || ae.Status != 409 {
		t.Errorf("AddMCPServer conflict: %v", err)
	}

	// Keys.
	if ki, err := c.Key(ctx, "a"); err != nil || ki.Exists {
		t.Errorf("Key: %+v, %v", ki, err)
	}
	gen, err := c.GenerateKey(ctx, "a", false)
	if err != nil || !gen.Exists || gen.Pubkey == "" {
		t.Errorf("GenerateKey: %+v, %v", gen, err)
	}
	if ki, err := c.Key(ctx, "a"); err != nil || ki != gen {
		t.Errorf("Key after GenerateKey: %+v, %v", ki, err)
	}
	if _, err := c.GenerateKey(ctx, "a", false); !errors.As(err, &ae) || ae.Status != 409 {
		t.Errorf("GenerateKey twice: %v", err)
	}
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	if ki, err := c.ImportKey(ctx, "a", identity.EncodeKeypair(priv), true); err != nil || ki.Pubkey != pub(priv) {
		t.Errorf("ImportKey: %+v, %v", ki, err)
	}
	if _, err := c.ImportKey(ctx, "a", []byte("[1,2"), true); !errors.Is(err, identity.ErrKeyFile) {
		t.Errorf("ImportKey of a file that is not JSON: %v", err)
	}
	if _, err := c.ImportKey(ctx, "a", []byte("[1,2]"), true); !errors.As(err, &ae) || ae.Status != 400 {
		t.Errorf("ImportKey of 2 numbers: %v", err)
	}

	// Skills.
	if list, err := c.Skills(ctx); err != nil || len(list) != 4 {
		t.Errorf("Skills: %+v, %v", list, err)
	}
	if sk, err := c.Skill(ctx, "notes"); err != nil || !strings.HasPrefix(sk.Body, "# Notes\nWrite them down.\n") {
		t.Errorf("Skill: %+v, %v", sk, err)
	}
	if _, err := c.Skill(ctx, "nope"); !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("Skill nope: %v", err)
	}

	// An empty name is refused before any request.
	for name, err := range map[string]error{
		"Lifecycle":       second(c.Lifecycle(ctx, "", gateway.LifecycleRequest{Message: "x"})),
		"Resolve":         second(c.Resolve(ctx, "", true, "")),
		"RemoveMCPServer": c.RemoveMCPServer(ctx, ""),
		"MCPTools":        second(c.MCPTools(ctx, "")),
		"Key":             second(c.Key(ctx, "")),
		"GenerateKey":     second(c.GenerateKey(ctx, "", false)),
		"ImportKey":       second(c.ImportKey(ctx, "", identity.EncodeKeypair(priv), false)),
		"Skill":           second(c.Skill(ctx, "")),
	} {
		if !errors.Is(err, gateway.ErrEmptyName) {
			t.Errorf("%s with an empty name: %v", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// FuzzLifecycleBody posts arbitrary bodies to the lifecycle route: each is
// answered or refused with a 4xx and the {error, code} body, never a
// server error.
func FuzzLifecycleBody(f *testing.F) {
	for _, s := range []string{
		`{"message":"hello"}`,
		`{"message":"x","session":"chat:bob","idempotency_key":"k","opts":{"channelId":"room","context":false,"actions":true,"postProcess":false,"toolArgs":{"s-t":{"a":1}}}}`,
		`{"message":"x","opts":{"toolArgs":{"s-t":1}}}`,
		`{"message":"x","opts":null}`,
		`{"message":"x","session":"a/b"}`,
		`{"opts":{"channelId":"../../etc"}}`,
		`{"message":"x","extra":1}`,
		`[]`,
		``,
		`{`,
	} {
		f.Add(s)
	}
	lc := &fakeLifecycle{}
	srv := gateway.New(&gateway.Options{Agents: testAgents(), Lifecycle: lc})
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequestWithContext(t.Context(), "POST", "/v1/agents/a/message", strings.NewReader(body))
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		switch {
		case w.Code == 200:
			var resp gateway.LifecycleResponse
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.Lifecycle == nil {
				t.Fatalf("200 %s: %v", w.Body, err)
			}
		case w.Code >= 400 && w.Code < 500:
			var er gateway.Error
			dec := json.NewDecoder(w.Body)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&er); err != nil || er.Error == "" || er.Code == "" {
				t.Fatalf("%d: %v", w.Code, err)
			}
		default:
			t.Fatalf("body %q: status %d %s", body, w.Code, w.Body)
		}
	})
}

// ExampleClient_Resolve answers a tool call that waits for approval, as
// `agentd approvals` and `agentd approve` do.
func ExampleClient_Resolve() {
	broker := permit.New()
	c, stop := gateway.Pipe(gateway.New(&gateway.Options{Agents: agents{}, Permits: broker}))
	defer stop()

	// A turn's call to demo__counter waits for a person.
	now := time.Now()
	decided := make(chan permit.Decision)
	go func() {
		d, _ := broker.Wait(context.Background(), permit.Request{ID: "ap1", Session: "assistant/chat:alice", Tool: "demo__counter",
			Args: json.RawMessage(`{}`), CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)})
		decided <- d
	}()
	ctx := context.Background()
	var waiting []permit.Request
	for len(waiting) == 0 {
		time.Sleep(time.Millisecond)
		var err error
		if waiting, err = c.Approvals(ctx); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(waiting[0].ID, waiting[0].Session, waiting[0].Tool)

	if _, err := c.Resolve(ctx, "ap1", false, "not today"); err != nil {
		log.Fatal(err)
	}
	d := <-decided
	fmt.Printf("granted=%v reason=%q by=%s\n", d.Granted, d.Reason, d.By)
	// Output:
	// ap1 assistant/chat:alice demo__counter
	// granted=false reason="not today" by=cli
}
