package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// cmdAgents is the agent system behind the API of TestAgentsCommands: the
// dynamic agents of testAgents, and what it was asked.
type cmdAgents struct{ asked []string }

func (f *cmdAgents) infos() []agentsys.Info {
	var out []agentsys.Info
	for _, a := range testAgents()[2:] {
		out = append(out, agentsys.Info{ID: a.ID, Name: a.Name, Type: a.Type, Parent: a.Parent, State: a.State, Model: a.Model,
			Dynamic: true, CostUSD: a.CostUSD, LiveChildren: a.Children})
	}
	return out
}

func (f *cmdAgents) List(_ context.Context, fl store.AgentFilter) ([]agentsys.Info, string, error) {
	f.asked = append(f.asked, fmt.Sprintf("list %+v", fl))
	if fl.Before == "" && fl.Parent != "" {
		return f.infos()[:1], "i1.more", nil // pages of one, then the rest
	}
	if fl.Parent != "" {
		return f.infos()[1:2], "", nil
	}
	return f.infos(), "", nil
}

func (f *cmdAgents) Tree(_ context.Context, root string) ([]agentsys.Node, error) {
	f.asked = append(f.asked, "tree "+root)
	in := f.infos()
	return []agentsys.Node{{Info: in[2], CostTreeUSD: 0.875, Children: []agentsys.Node{
		{Info: in[1], CostTreeUSD: 0.25}, {Info: in[0], CostTreeUSD: 0.125}}}}, nil
}

func (f *cmdAgents) Status(_ context.Context, id string) (agentsys.Status, error) {
	for _, in := range f.infos() {
		if in.ID == id {
			return agentsys.Status{Info: in, Result: "done it"}, nil
		}
	}
	return agentsys.Status{}, fmt.Errorf("agent %s: %w", id, agentsys.ErrNotFound)
}

func (f *cmdAgents) Start(_ context.Context, req agentsys.StartRequest) (store.Instance, error) {
	f.asked = append(f.asked, fmt.Sprintf("start %s %q %q %q", req.Template, req.Prompt, req.Name, req.Key))
	if req.Template == "full" {
		return store.Instance{}, fmt.Errorf("start: %w: max_live 2", store.ErrLimit)
	}
	return store.Instance{ID: "n0000000000000000000000ab", Agent: "n0000000000000000000000ab"}, nil
}

func (f *cmdAgents) Contact(context.Context, agentsys.Contact) (store.Instance, runtime.Receipt, error) {
	return store.Instance{}, runtime.Receipt{}, nil
}

func (f *cmdAgents) Stop(_ context.Context, id, reason, by string) ([]string, error) {
	f.asked = append(f.asked, fmt.Sprintf("stop %s %q %s", id, reason, by))
	return []string{"c2kq3v0000000000000000ab", id}, nil
}

// TestAgentsCommands runs agentd agents and its subcommands against an
// API with dynamic agents, over HTTP as against a remote gateway.
func TestAgentsCommands(t *testing.T) {
	f := &cmdAgents{}
	defs := testkit.Agents{"assistant": {ID: "assistant", Name: "Assistant", Type: agent.TypeUser, Model: agent.Model{Provider: "openai", Name: "gpt-4o"}}}
	ts := httptest.NewServer(gateway.New(&gateway.Options{Agents: defs, DynamicAgents: f}))
	defer ts.Close()
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		e := &env{ctx: t.Context(), stdout: &out, stderr: &out, remote: ts.URL, remoteToken: "token"}
		cmd := e.agentsCmd()
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.ExecuteContext(t.Context())
		return out.String(), err
	}
	for _, tt := range []struct {
		args  []string
		says  []string
		asked string
	}{
		{nil, []string{"assistant  Assistant  user  openai gpt-4o  ready", "PARENT", "p7x0000000000000000000ab  research  background  -  running  $0.5000  gpt-4o"}, "list {Type: Parent: Root: State: Live:true Limit:0 Before:}"},
		{[]string{"--parent", "p7x0000000000000000000ab", "--type", "subagent", "--all"}, []string{"c2kq3v0000000000000000ab", "c1kq3v0000000000000000ab"},
			"list {Type:subagent Parent:p7x0000000000000000000ab Root: State: Live:false Limit:0 Before:} list {Type:subagent Parent:p7x0000000000000000000ab Root: State: Live:false Limit:0 Before:i1.more}"},
		{[]string{"--state", "done"}, []string{"c1kq3v0000000000000000ab"}, "list {Type: Parent: Root: State:done Live:false Limit:0 Before:}"},
		{[]string{"--tree"}, []string{"p7x0000000000000000000ab  research  background  running  $0.8750 (own $0.5000)\n├─ c1kq3v0000000000000000ab", "└─ c2kq3v0000000000000000ab  second^[]0;pwned^G"}, "tree "},
		{[]string{"--tree", "--json"}, []string{`{"nodes":[{"id":"p7x0000000000000000000ab"`, `"cost_tree_usd":0.875,"children":[{`}, "tree "},
		{[]string{"--json", "--type", "background"}, []string{`"dynamic":true`, `"cost_usd":0.5`}, "list {Type:background Parent: Root: State: Live:true Limit:0 Before:}"},
		{[]string{"start", "researcher", "compare", "the offers", "--name", "offers", "--key", "k1"}, []string{"started n0000000000000000000000ab: its log is agentd log n0000000000000000000000ab/main"},
			`start researcher "compare the offers" "offers" "k1"`},
		{[]string{"stop", "p7x0000000000000000000ab", "--reason", "enough"}, []string{"stopped c2kq3v0000000000000000ab\nstopped p7x0000000000000000000ab\n"},
			`stop p7x0000000000000000000ab "enough" api`},
		{[]string{"show", "c1kq3v0000000000000000ab"}, []string{"state     done", "result:\n  done it"}, ""},
	} {
		f.asked = nil
		out, err := run(tt.args...)
		if err != nil {
			t.Errorf("agentd agents %q: %v\n%s", tt.args, err, out)
			continue
		}
		for _, s := range tt.says {
			if !strings.Contains(squeeze(out), squeeze(s)) {
				t.Errorf("agentd agents %q printed\n%s\nwant it to say %q", tt.args, out, s)
			}
		}
		if got := strings.Join(f.asked, " "); got != tt.asked {
			t.Errorf("agentd agents %q asked %q, want %q", tt.args, got, tt.asked)
		}
	}
	if out, err := run("start", "full", "x"); err == nil || !strings.Contains(err.Error(), "max_live 2") {
		t.Errorf("start past a limit: %v\n%s", err, out)
	}
	if out, err := run("show", "assistant"); err == nil || !strings.Contains(err.Error(), "not a dynamic agent") {
		t.Errorf("show of a definition: %v\n%s", err, out)
	}
}

// squeeze is s with each run of spaces made one, so that a test reads a
// table's row whatever its column widths.
func squeeze(s string) string {
	for strings.Contains(s, "  ") {
		s = strings.ReplaceAll(s, "  ", " ")
	}
	return s
}
