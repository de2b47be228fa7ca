package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/model"
	"agentd/internal/tool"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// memManager connects a Manager to the test server in memory as "mem".
func memManager(t *testing.T, d Def) (*Manager, *recorder, *memNet, *testHooks, *sdk.Server) {
	t.Helper()
	net := newMemNet()
	srv, hooks := newTestServerHooks(false)
	net.add(d.Name, srv)
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, dial: net.dial})
	if errs := m.Set(context.Background(), []Def{d}); errs != nil {
		t.Fatal(errs)
	}
	m.WaitReady(context.Background())
	if st, _ := m.Status(d.Name); st.State != StateConnected {
		t.Fatalf("state %q, last error %q", st.State, st.LastError)
	}
	return m, reg, net, hooks, srv
}

func TestToolRegistration(t *testing.T) {
	d := memDef("mem")
	d.Config.Kind = tool.KindAction
	d.Config.Kinds = map[string]string{"echo": tool.KindPostprocess, "ctx_tool": tool.KindServer}
	d.Agents = []string{"bob", "alice"}
	m, reg, _, _, _ := memManager(t, d)

	type row struct {
		Name                              string
		Kind                              string
		ReadOnly, Idempotent, Destructive bool
	}
	var got []row
	for _, s := range reg.Specs() {
		if s.Server != "mem" {
			t.Errorf("%s: Server %q", s.Name, s.Server)
		}
		if diff := cmp.Diff([]string{"alice", "bob"}, s.Scope); diff != "" {
			t.Errorf("%s: Scope (-want +got):\n%s", s.Name, diff)
		}
		if s.Risky {
			t.Errorf("%s: Risky", s.Name)
		}
		got = append(got, row{s.Name, s.Kind, s.ReadOnly, s.Idempotent, s.Destructive})
	}
	longName := "mem__" + strings.Repeat("long", 18)
	hashed := regexp.MustCompile(`^mem__(longlong)+lo_[0-9a-f]{8}$`)
	var longRow row
	for i, r := range got {
		if strings.HasPrefix(r.Name, "mem__longlong") {
			longRow = r
			got = append(got[:i], got[i+1:]...)
			break
		}
	}
	if !hashed.MatchString(longRow.Name) || len(longRow.Name) != 64 {
		t.Errorf("long name %q became %q; want 64 characters ending in a hash", longName, longRow.Name)
	}
	want := []row{
		{Name: "mem__add_extra", Kind: "action"},
		{Name: "mem__big", Kind: "action"},
		{Name: "mem__ctx_tool", Kind: "server", Idempotent: true}, // Kinds wins over _meta
		{Name: "mem__dotted_name", Kind: "action"},
		{Name: "mem__echo", Kind: "postprocess", ReadOnly: true, Idempotent: true},
		{Name: "mem__env", Kind: "action"},
		{Name: "mem__fail", Kind: "action"},
		{Name: "mem__look", Kind: "action", ReadOnly: true, Idempotent: true}, // read-only is never destructive
		{Name: "mem__meta", Kind: "action"},
		{Name: "mem__mixed", Kind: "action"},
		{Name: "mem__pid", Kind: "action"},
		{Name: "mem__remove_extra", Kind: "action"},
		{Name: "mem__slow", Kind: "action"},
		{Name: "mem__structured", Kind: "action"},
		{Name: "mem__wipe", Kind: "action", Destructive: true}, // an invalid _meta kind is ignored
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registered tools (-want +got):\n%s", diff)
	}
	// bad_schema is skipped: the registry refuses its schema.
	if reg.has("mem__bad_schema") {
		t.Error("a tool with an invalid schema was registered")
	}

	echo, _ := reg.Get("mem__echo")
	var schema map[string]any
	if err := json.Unmarshal(echo.Spec().InputSchema, &schema); err != nil || schema["required"] == nil {
		t.Errorf("echo schema %s: %v", echo.Spec().InputSchema, err)
	}
	if echo.Spec().Description != "Echoes text." {
		t.Errorf("description %q", echo.Spec().Description)
	}

	st, _ := m.Status("mem")
	want2 := Status{Name: "mem", Transport: "http", Source: "config", State: StateConnected, Agents: []string{"alice", "bob"},
		Tools: 16, ServerName: "testserver", ServerVersion: "1.2.3"}
	if diff := cmp.Diff(want2, st, cmpStatus); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	specs, err := m.Tools("mem")
	if err != nil || len(specs) != 16 {
		t.Errorf("Tools: %d specs, %v", len(specs), err)
	}
	if _, err := m.Tools("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Tools(nope): %v", err)
	}
}

var cmpStatus = cmp.FilterPath(func(p cmp.Path) bool {
	f := p.Last().String()
	return f == ".Since" || f == ".LastError"
}, cmp.Ignore())

func TestCallArgsAndMeta(t *testing.T) {
	_, reg, _, _, _ := memManager(t, memDef("mem"))
	var signed []string
	res := run(t, reg, &tool.Call{
		ID:      "call_7",
		Name:    "mem__meta",
		Args:    json.RawMessage(`{"x":1,"y":"two"}`),
		Agent:   "alice",
		Session: "alice/chat:1",
		Approval: approverFunc(func(audience, tool string, args json.RawMessage) (json.RawMessage, error) {
			signed = append(signed, audience, tool, string(args))
			return json.RawMessage(`{"pubkey":"abc","messageId":"m1"}`), nil
		}),
	})
	if res.IsError {
		t.Fatal(res.Output)
	}
	var got struct {
		Meta map[string]any `json:"meta"`
		Args map[string]any `json:"args"`
	}
	if err := json.Unmarshal([]byte(res.Output), &got); err != nil {
		t.Fatalf("%v: %s", err, res.Output)
	}
	want := map[string]any{
		"agentd/approval": map[string]any{"pubkey": "abc", "messageId": "m1"},
		"agentd/agent":    "alice",
		"agentd/session":  "alice/chat:1",
		"agentd/call_id":  "call_7",
	}
	for k := range got.Meta {
		if !strings.HasPrefix(k, "agentd/") {
			delete(got.Meta, k) // the protocol's own keys
		}
	}
	if diff := cmp.Diff(want, got.Meta); diff != "" {
		t.Errorf("_meta (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"x": 1.0, "y": "two"}, got.Args); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
	// The approval was signed for this call: the server's URL, its own
	// name for the tool, the arguments sent.
	if want := []string{"http://mem.invalid/mem", "meta", `{"x":1,"y":"two"}`}; !slices.Equal(signed, want) {
		t.Errorf("approval signed for %q, want %q", signed, want)
	}

	// An approval that arrives as a JSON string holding the object.
	res = run(t, reg, &tool.Call{Name: "mem__meta", Approval: returns(`"{\"pubkey\":\"k\"}"`)})
	if !strings.Contains(res.Output, `"agentd/approval":{"pubkey":"k"}`) {
		t.Errorf("string approval: %s", res.Output)
	}
	// An approval that is not an object is refused, not sent.
	res = run(t, reg, &tool.Call{Name: "mem__meta", Approval: returns(`[1]`)})
	if !res.IsError || !strings.Contains(res.Output, "approval is not a JSON object") {
		t.Errorf("bad approval: %+v", res)
	}
}

func TestCallResults(t *testing.T) {
	m, reg, _, _, _ := memManager(t, memDef("mem"))
	tests := []struct {
		tool string
		args string
		want tool.Result
	}{
		{"mem__echo", `{"text":"hi there"}`, tool.Result{Output: "hi there"}},
		{"mem__fail", `{}`, tool.Result{Output: "it failed", IsError: true}},
		{"mem__structured", ``, tool.Result{Output: `{"answer":42}`}},
		{"mem__mixed", `{}`, tool.Result{Output: "first\n[image image/png, 8 bytes]\n[audio audio/wav, 2 bytes]\n[resource test://linked]\nembedded text\n[resource test://b, application/zip, 3 bytes]",
			Images: []model.Image{{MIMEType: "image/png", Data: []byte(pngSignature)}}}},
		{"mem__dotted_name", `{}`, tool.Result{Output: "dotted"}},
		{"mem__echo", `{"text":5}`, tool.Result{Output: `invalid arguments for mem__echo: property "text": type: 5 has type "integer", want "string"`, IsError: true}},
	}
	for _, tt := range tests {
		got := run(t, reg, &tool.Call{Name: tt.tool, Args: json.RawMessage(tt.args)})
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.tool, tt.args, diff)
		}
	}

	// CallTool uses the server's own names; c may be nil.
	res, err := m.CallTool(context.Background(), "mem", "dotted.name", nil, nil)
	if err != nil || res.Output != "dotted" {
		t.Errorf("CallTool: %+v, %v", res, err)
	}
	if _, err := m.CallTool(context.Background(), "mem", "no_such_tool", nil, nil); err == nil {
		t.Error("CallTool of an unknown tool: no error")
	}
	if _, err := m.CallTool(context.Background(), "nope", "echo", nil, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("CallTool on an unknown server: %v", err)
	}
}

func TestCallCancel(t *testing.T) {
	m, _, _, hooks, _ := memManager(t, memDef("mem"))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "mem", "slow", nil, nil)
		errc <- err
	}()
	<-hooks.slowStarted
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
	select {
	case <-hooks.slowCancelled:
	case <-time.After(20 * time.Second):
		t.Error("the server never saw the cancellation")
	}
	// The connection survives a cancelled call.
	if res, err := m.CallTool(context.Background(), "mem", "echo", json.RawMessage(`{"text":"ok"}`), nil); err != nil || res.Output != "ok" {
		t.Errorf("after cancel: %+v, %v", res, err)
	}
}

func TestListChanged(t *testing.T) {
	_, reg, _, _, srv := memManager(t, memDef("mem"))
	srv.AddTool(&sdk.Tool{Name: "fresh", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "new"}}}, nil
		})
	waitFor(t, "mem__fresh to be registered", func() bool { return reg.has("mem__fresh") })
	if res := run(t, reg, &tool.Call{Name: "mem__fresh"}); res.Output != "new" {
		t.Errorf("fresh: %+v", res)
	}

	// A changed tool is registered again with its new spec.
	srv.AddTool(&sdk.Tool{Name: "fresh", Description: "now described", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
	waitFor(t, "mem__fresh to change", func() bool {
		tl, ok := reg.Get("mem__fresh")
		return ok && tl.Spec().Description == "now described"
	})

	srv.RemoveTools("fresh", "echo")
	waitFor(t, "mem__fresh and mem__echo to go", func() bool { return !reg.has("mem__fresh") && !reg.has("mem__echo") })
	if !reg.has("mem__meta") {
		t.Error("an unchanged tool went away")
	}
}

func TestDownServer(t *testing.T) {
	m, reg, net, _, srv := memManager(t, memDef("mem"))
	net.setDown("mem", true)
	for ss := range srv.Sessions() {
		ss.Close()
	}
	waitFor(t, "the server to be down", func() bool {
		st, _ := m.Status("mem")
		return st.State == StateDown && !reg.has("mem__echo")
	})
	res, err := m.CallTool(context.Background(), "mem", "echo", json.RawMessage(`{"text":"x"}`), nil)
	if err != nil || !res.IsError || res.Output != "server mem is not connected; reconnecting" {
		t.Errorf("call to a down server: %+v, %v", res, err)
	}
	st, _ := m.Status("mem")
	if st.LastError == "" || st.Tools != 0 {
		t.Errorf("down status: %+v", st)
	}
	dials := net.dialCount("mem")
	waitFor(t, "reconnection attempts", func() bool { return net.dialCount("mem") > dials+1 })

	net.setDown("mem", false)
	waitFor(t, "the server to be back", func() bool {
		st, _ := m.Status("mem")
		return st.State == StateConnected && st.Restarts == 1 && reg.has("mem__echo")
	})
	if res := run(t, reg, &tool.Call{Name: "mem__echo", Args: json.RawMessage(`{"text":"back"}`)}); res.Output != "back" {
		t.Errorf("after reconnect: %+v", res)
	}
}

func TestDisabled(t *testing.T) {
	net := newMemNet()
	net.add("mem", newTestServer(false))
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, dial: net.dial})
	d := memDef("mem")
	d.Config.Disabled = true
	if errs := m.Set(context.Background(), []Def{d}); errs != nil {
		t.Fatal(errs)
	}
	m.WaitReady(context.Background())
	st, _ := m.Status("mem")
	if st.State != StateDisabled || len(reg.Specs()) != 0 || net.dialCount("mem") != 0 {
		t.Errorf("disabled server: %+v, %d tools, %d dials", st, len(reg.Specs()), net.dialCount("mem"))
	}
	res, err := m.CallTool(context.Background(), "mem", "echo", nil, nil)
	if err != nil || res.Output != "server mem is disabled" || !res.IsError {
		t.Errorf("call: %+v, %v", res, err)
	}
}

func TestWaitReadyFailure(t *testing.T) {
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, dial: newMemNet().dial})
	if errs := m.Set(context.Background(), []Def{memDef("gone")}); errs != nil {
		t.Fatal(errs)
	}
	m.WaitReady(context.Background())
	st, _ := m.Status("gone")
	if st.State != StateDown || !strings.Contains(st.LastError, "connection refused") {
		t.Errorf("status: %+v", st)
	}
}

func TestSharedAndConflicting(t *testing.T) {
	net := newMemNet()
	net.add("shared", newTestServer(false))
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, dial: net.dial})
	ctx := context.Background()

	a := memDef("shared")
	a.Agents, a.Source = []string{"a"}, "agent:a"
	b := a
	b.Agents, b.Source = []string{"b"}, "agent:b"
	c := a
	c.Config.Kind = tool.KindContext
	c.Agents, c.Source = []string{"c"}, "agent:c"

	errs := m.Set(ctx, []Def{a, b, c})
	if len(errs) != 1 || !errors.Is(errs[0], ErrConflict) ||
		!strings.Contains(errs[0].Error(), `server "shared" is already defined by agent:a with a different configuration`) {
		t.Fatalf("Set errors: %v", errs)
	}
	m.WaitReady(ctx)
	st, _ := m.Status("shared")
	if diff := cmp.Diff([]string{"a", "b"}, st.Agents); diff != "" || st.Source != "agent:a,agent:b" || st.State != StateConnected {
		t.Errorf("merged status %+v %s", st, diff)
	}
	echo, _ := reg.Get("shared__echo")
	if diff := cmp.Diff([]string{"a", "b"}, echo.Spec().Scope); diff != "" {
		t.Errorf("scope (-want +got):\n%s", diff)
	}
	if net.dialCount("shared") != 1 {
		t.Errorf("%d connections for one shared server", net.dialCount("shared"))
	}

	// b's file goes away: same connection, narrower scope.
	if errs := m.Set(ctx, []Def{a}); errs != nil {
		t.Fatal(errs)
	}
	echo, _ = reg.Get("shared__echo")
	if diff := cmp.Diff([]string{"a"}, echo.Spec().Scope); diff != "" || net.dialCount("shared") != 1 {
		t.Errorf("scope after removing b (-want +got):\n%s (dials %d)", diff, net.dialCount("shared"))
	}

	// A node-wide definition makes it visible to everyone.
	n := memDef("shared")
	if errs := m.Set(ctx, []Def{a, n}); errs != nil {
		t.Fatal(errs)
	}
	echo, _ = reg.Get("shared__echo")
	if echo.Spec().Scope != nil {
		t.Errorf("node-wide scope %v", echo.Spec().Scope)
	}

	// A changed configuration restarts the connection.
	if errs := m.Set(ctx, []Def{c}); errs != nil {
		t.Fatal(errs)
	}
	waitFor(t, "the restart", func() bool {
		tl, ok := reg.Get("shared__echo")
		return ok && tl.Spec().Kind == tool.KindContext
	})
	if net.dialCount("shared") != 2 {
		t.Errorf("dials after a change: %d", net.dialCount("shared"))
	}

	// Removed from the files: stopped, tools gone.
	if errs := m.Set(ctx, nil); errs != nil {
		t.Fatal(errs)
	}
	waitFor(t, "tools to go", func() bool { return len(reg.Specs()) == 0 })
	if len(m.List()) != 0 {
		t.Errorf("List after removal: %+v", m.List())
	}

	// Removed and defined again at once: the new connection's tools are
	// registered after the old one's are gone.
	if errs := m.Set(ctx, []Def{a}); errs != nil {
		t.Fatal(errs)
	}
	m.Set(ctx, nil)
	m.Set(ctx, []Def{a})
	m.WaitReady(ctx)
	waitFor(t, "the tools to be back", func() bool {
		st, _ := m.Status("shared")
		return st.State == StateConnected && st.Tools == 16 && reg.has("shared__echo")
	})
}

func TestSetInvalid(t *testing.T) {
	m := newTestManager(t, &Options{Tools: newRecorder(), dial: newMemNet().dial})
	tests := []Def{
		{Name: "bad name", Config: agent.MCPServer{Command: "x"}},
		{Name: "a__b", Config: agent.MCPServer{Command: "x"}},
		{Name: "x", Config: agent.MCPServer{}},
		{Name: "x", Config: agent.MCPServer{Transport: "carrier-pigeon", URL: "http://x"}},
		{Name: "x", Config: agent.MCPServer{Transport: "stdio", URL: "http://x"}},
		{Name: "x", Config: agent.MCPServer{Transport: "http", Command: "x"}},
		{Name: "x", Config: agent.MCPServer{URL: "ftp://x"}},
		{Name: "x", Config: agent.MCPServer{URL: "http://x", Kind: "sometimes"}},
		{Name: "x", Config: agent.MCPServer{URL: "http://x", Kinds: map[string]string{"t": "often"}}},
		{Name: "x", Config: agent.MCPServer{URL: "http://x"}, Agents: []string{""}},
	}
	errs := m.Set(context.Background(), tests)
	if len(errs) != len(tests) {
		t.Fatalf("%d errors for %d invalid definitions: %v", len(errs), len(tests), errs)
	}
	for i, err := range errs {
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "mcp: server ") {
			t.Errorf("%d: %v", i, err)
		}
	}
	if _, err := m.Add(context.Background(), tests[0]); !errors.Is(err, ErrInvalid) {
		t.Errorf("Add: %v", err)
	}
	if len(m.List()) != 0 {
		t.Errorf("List: %+v", m.List())
	}
}

func TestNewNeedsTools(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil): no error")
	}
	if _, err := New(&Options{}); err == nil {
		t.Error("New without Tools: no error")
	}
}

func TestClosed(t *testing.T) {
	m := newTestManager(t, &Options{Tools: newRecorder(), dial: newMemNet().dial})
	m.Close()
	if errs := m.Set(context.Background(), []Def{memDef("x")}); len(errs) != 1 || !errors.Is(errs[0], ErrClosed) {
		t.Errorf("Set after Close: %v", errs)
	}
	if _, err := m.Add(context.Background(), memDef("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestProtocolVersions(t *testing.T) {
	for _, version := range []string{"2025-06-18", DefaultProtocolVersion, "2026-07-28"} {
		for _, transport := range []string{"memory", agent.TransportHTTP} {
			t.Run(version+"/"+transport, func(t *testing.T) {
				srv := newTestServer(false)
				reg := newRecorder()
				o := &Options{Tools: reg, ProtocolVersion: version}
				d := memDef("p")
				if transport == "memory" {
					net := newMemNet()
					net.add("p", srv)
					o.dial = net.dial
				} else {
					d.Config.URL, d.Config.AllowNetworks = newHTTPServer(t, srv, false).URL, local
				}
				m := newTestManager(t, o)
				if _, err := m.Add(context.Background(), d); err != nil {
					t.Fatal(err)
				}
				got := m.lookup("p").conn.Load().cs.InitializeResult().ProtocolVersion
				// A server may answer with an older version (the stateful
				// streamable HTTP handler does not serve the stateless one).
				if got == "" || got > version || transport == "memory" && got != version {
					t.Errorf("asked for %s, negotiated %s", version, got)
				}
				res := run(t, reg, &tool.Call{Name: "p__meta", Agent: "a"})
				if !strings.Contains(res.Output, `"agentd/agent":"a"`) {
					t.Errorf("meta: %+v", res)
				}
				srv.AddTool(&sdk.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
				waitFor(t, "p__later", func() bool { return reg.has("p__later") })
				srv.RemoveTools("later")
				waitFor(t, "p__later to go", func() bool { return !reg.has("p__later") })
			})
		}
	}
}

func TestPagination(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "paged", Version: "1"}, &sdk.ServerOptions{PageSize: 2})
	for i := range 7 {
		srv.AddTool(&sdk.Tool{Name: fmt.Sprintf("t%d", i), InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
	}
	for i := range 5 {
		srv.AddResource(&sdk.Resource{URI: fmt.Sprintf("test://r%d", i), Name: fmt.Sprintf("r%d", i)},
			func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) { return nil, nil })
	}
	net := newMemNet()
	net.add("paged", srv)
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, dial: net.dial})
	if _, err := m.Add(context.Background(), memDef("paged")); err != nil {
		t.Fatal(err)
	}
	want := []string{"paged__t0", "paged__t1", "paged__t2", "paged__t3", "paged__t4", "paged__t5", "paged__t6"}
	if diff := cmp.Diff(want, reg.names()); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	res, err := m.CallTool(context.Background(), "paged", "t0", nil, nil)
	if err != nil || res.IsError {
		t.Errorf("call: %+v %v", res, err)
	}
	list := m.Builtins()[0]
	res, err = list.Call(context.Background(), &tool.Call{Args: json.RawMessage(`{"server":"paged"}`)})
	if err != nil || strings.Count(res.Output, `"uri":`) != 5 {
		t.Errorf("resources: %s %v", res.Output, err)
	}
}
