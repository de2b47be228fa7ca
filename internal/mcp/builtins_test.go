package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"agentd/internal/tool"

	"github.com/google/go-cmp/cmp"
)

func TestBuiltins(t *testing.T) {
	net := newMemNet()
	docs := newTestServer(false)
	net.add("docs", docs)
	net.add("plain", newToolsOnlyServer())
	net.add("private", newTestServer(false))
	reg := newRecorder()
	m := newTestManager(t, &Options{
		Tools: reg,
		dial:  net.dial,
		Uses:  func(agentID, server string) bool { return agentID != "nobody" },
	})
	private := memDef("private")
	private.Agents = []string{"alice"}
	if errs := m.Set(context.Background(), []Def{memDef("docs"), memDef("plain"), private}); errs != nil {
		t.Fatal(errs)
	}
	m.WaitReady(context.Background())

	builtins := map[string]tool.Tool{}
	for _, b := range m.Builtins() {
		if err := reg.Register(b); err != nil {
			t.Fatal(err)
		}
		s := b.Spec()
		if !s.ReadOnly || s.Server != "" || len(s.InputSchema) == 0 {
			t.Errorf("%s: spec %+v", s.Name, s)
		}
		builtins[s.Name] = b
	}
	if got := slices.Sorted(func(yield func(string) bool) {
		for k := range builtins {
			if !yield(k) {
				return
			}
		}
	}); !slices.Equal(got, []string{"mcp_get_prompt", "mcp_list_prompts", "mcp_list_resources", "mcp_read_resource"}) {
		t.Errorf("builtins %v", got)
	}

	call := func(name, args, agentID string) tool.Result {
		t.Helper()
		return run(t, reg, &tool.Call{Name: name, Args: json.RawMessage(args), Agent: agentID})
	}

	// Every connected server with resources the agent uses: docs (and
	// private for alice); plain has no resources.
	var items []resourceItem
	res := call("mcp_list_resources", `{}`, "bob")
	if err := json.Unmarshal([]byte(res.Output), &items); err != nil || res.IsError {
		t.Fatalf("%v: %+v", err, res)
	}
	want := []resourceItem{
		{Server: "docs", URI: "test://blob", Name: "blob", MIMEType: "application/octet-stream"},
		{Server: "docs", URI: "test://hello", Name: "hello", Description: "A greeting.", MIMEType: "text/plain"},
		{Server: "docs", URITemplate: "test://items/{id}", Name: "item"},
	}
	if diff := cmp.Diff(want, items); diff != "" {
		t.Errorf("resources for bob (-want +got):\n%s", diff)
	}
	res = call("mcp_list_resources", `{}`, "alice")
	if !strings.Contains(res.Output, `"server":"private"`) {
		t.Errorf("alice should see private: %s", res.Output)
	}
	res = call("mcp_list_resources", `{"server":"docs"}`, "nobody")
	if !res.IsError || !strings.Contains(res.Output, `no MCP server called "docs"`) {
		t.Errorf("an agent that does not use docs: %+v", res)
	}

	tests := []struct {
		tool, args, agent string
		want              tool.Result
	}{
		{"mcp_read_resource", `{"server":"docs","uri":"test://hello"}`, "", tool.Result{Output: "hello world"}},
		{"mcp_read_resource", `{"server":"docs","uri":"test://blob"}`, "", tool.Result{Output: "[resource test://blob, application/octet-stream, 5 bytes]"}},
		{"mcp_read_resource", `{"server":"docs","uri":"test://items/7"}`, "", tool.Result{Output: "item 7"}},
		{"mcp_read_resource", `{"server":"private","uri":"test://hello"}`, "bob", tool.Result{IsError: true,
			Output: `mcp: server not found: no MCP server called "private"; see mcp_list_resources or mcp_list_prompts for the servers available`}},
		{"mcp_read_resource", `{"server":"plain","uri":"test://hello"}`, "", tool.Result{IsError: true, Output: "mcp: capability not supported by the server: server plain offers no resources"}},
		{"mcp_list_prompts", `{"server":"docs"}`, "", tool.Result{Output: `[{"server":"docs","name":"greet","description":"Greets someone.","arguments":[{"name":"name","description":"Who.","required":true}]}]`}},
		{"mcp_list_prompts", `{"server":"plain"}`, "", tool.Result{IsError: true, Output: "mcp: capability not supported by the server: server plain offers no prompts"}},
		{"mcp_get_prompt", `{"server":"docs","name":"greet","arguments":{"name":"Ada"}}`, "", tool.Result{Output: "A greeting\n\n[user]\nHello, Ada!\n\n[assistant]\nHi!"}},
		{"mcp_get_prompt", `{"server":"nope","name":"greet"}`, "", tool.Result{IsError: true,
			Output: `mcp: server not found: no MCP server called "nope"; see mcp_list_resources or mcp_list_prompts for the servers available`}},
	}
	for _, tt := range tests {
		got := call(tt.tool, tt.args, tt.agent)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.tool, tt.args, diff)
		}
	}
	res = call("mcp_get_prompt", `{"server":"docs","name":"nope"}`, "")
	if !res.IsError || !strings.Contains(res.Output, "nope") {
		t.Errorf("unknown prompt: %+v", res)
	}

	res = call("mcp_read_resource", `{"server":"docs"}`, "")
	if !res.IsError || !strings.Contains(res.Output, "uri") {
		t.Errorf("missing uri: %+v", res)
	}

	// A server that is down says so.
	net.setDown("docs", true)
	for ss := range docs.Sessions() {
		ss.Close()
	}
	waitFor(t, "docs to be down", func() bool {
		st, _ := m.Status("docs")
		return st.State == StateDown
	})
	res = call("mcp_list_prompts", `{"server":"docs"}`, "")
	if !res.IsError || res.Output != "mcp: server docs is not connected; reconnecting" {
		t.Errorf("down server: %+v", res)
	}
	res = call("mcp_list_prompts", `{}`, "alice")
	if res.IsError || strings.Contains(res.Output, `"server":"docs"`) || !strings.Contains(res.Output, `"server":"private"`) {
		t.Errorf("all servers while docs is down: %+v", res)
	}
	if _, err := m.builtinTargets(nil, "docs", "prompts"); !errors.Is(err, ErrNotConnected) {
		t.Errorf("down server error: %v", err)
	}
}
