package agentsys

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/tool"
)

// toolFlags are what the policy and the crash recovery read of a spec.
type toolFlags struct {
	Risky, Idempotent, ReadOnly, AskFirst bool
}

// TestTools holds the tools the wiring registers to the list:
// their names, in order, their flags, and that a registry takes them.
func TestTools(t *testing.T) {
	want := []string{"start_background_agent", "create_permanent_agent", "send_agent_message", "list_agents",
		"agent_status", "stop_agent", "ask_agent"}
	wantFlags := map[string]toolFlags{
		"start_background_agent": {Risky: true, Idempotent: true},
		"create_permanent_agent": {Risky: true, AskFirst: true},
		"send_agent_message":     {Risky: true, Idempotent: true},
		"list_agents":            {Risky: true, ReadOnly: true},
		"agent_status":           {Risky: true, ReadOnly: true},
		"stop_agent":             {Risky: true, Idempotent: true},
		"ask_agent":              {Risky: true, Idempotent: true},
	}
	tools := Tools(New(nil, nil, nil), nil)
	reg := tool.NewRegistry(nil)
	var names []string
	gotFlags := map[string]toolFlags{}
	for _, tl := range tools {
		s := tl.Spec()
		names = append(names, s.Name)
		gotFlags[s.Name] = toolFlags{s.Risky, s.Idempotent, s.ReadOnly, s.AskFirst}
		if err := reg.Register(tl); err != nil {
			t.Errorf("register %s: %v", s.Name, err)
		}
		if s.Kind != "" && s.Kind != tool.KindModel || s.Server != "" {
			t.Errorf("%s: kind %q, server %q: want a built-in model tool", s.Name, s.Kind, s.Server)
		}
		if !strings.Contains(s.Reach, "agent") {
			t.Errorf("%s: Reach %q does not say it acts on agents", s.Name, s.Reach)
		}
		var schema struct {
			Type                 string `json:"type"`
			AdditionalProperties *bool  `json:"additionalProperties"`
		}
		if err := json.Unmarshal(s.InputSchema, &schema); err != nil || schema.Type != "object" ||
			schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: schema %s: want an object with no other properties", s.Name, s.InputSchema)
		}
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantFlags, gotFlags); diff != "" {
		t.Errorf("flags (-want +got):\n%s", diff)
	}
}

// TestToolsOffUnlessAllowed: an agent whose policy does not name an agent
// tool does not get it, however open its policy is otherwise; naming it
// allows it.
func TestToolsOffUnlessAllowed(t *testing.T) {
	for _, tl := range Tools(nil, nil) {
		s := tl.Spec()
		for _, p := range []tool.Policy{{}, {Ask: []string{"web_*"}}, {Allow: []string{"clock"}}, {Deny: []string{"run_command"}}} {
			if d := p.Decide(s); d.Verdict != tool.Deny {
				t.Errorf("%s under %+v: %v, want deny", s.Name, p, d.Verdict)
			}
		}
		if d := (tool.Policy{Allow: []string{s.Name}}).Decide(s); d.Verdict != tool.Allow {
			t.Errorf("%s allowed by name: %v (%s)", s.Name, d.Verdict, d.Reason)
		}
		if d := (tool.Policy{Allow: []string{"*"}, Deny: []string{s.Name}}).Decide(s); d.Verdict != tool.Deny {
			t.Errorf("%s denied by name: %v", s.Name, d.Verdict)
		}
	}
}

// TestToolsPermanentsFromOptions: create_permanent_agent uses the maker
// the options give, and without one refuses every call, saying why.
func TestToolsPermanentsFromOptions(t *testing.T) {
	run := func(o *ToolOptions) tool.Result {
		reg := tool.NewRegistry(nil)
		for _, tl := range Tools(New(nil, nil, nil), o) {
			if err := reg.Register(tl); err != nil {
				t.Fatal(err)
			}
		}
		c := &tool.Call{ID: "1", Name: ToolPermanent, Agent: "planner", Args: json.RawMessage(`{"name":"scribe","description":"d","system_prompt":"p"}`)}
		return reg.Run(t.Context(), c, nil).Result
	}
	if res := run(nil); !res.IsError || !strings.Contains(res.Output, "no permanent agents") {
		t.Errorf("no maker: %+v", res)
	}
	f := &fakeSystem{perm: PermanentResult{}}
	if res := run(&ToolOptions{Permanents: f}); res.IsError || len(f.got) != 1 {
		t.Errorf("a maker: %+v, asked %v", res, f.got)
	}
}
