package engine

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/tool"
)

// The skills a conversation loaded come from its events: a skill call
// with a successful result, or a summary that folded such calls.
func TestConversationSkills(t *testing.T) {
	load := func(id, args string) event.Event {
		return ev(1, event.ToolCall, event.ToolCallData{ID: id, Name: "skill", Args: json.RawMessage(args), Step: 1})
	}
	result := func(id string, isErr bool) event.Event {
		return ev(1, event.ToolResult, event.ToolResultData{ID: id, Name: "skill", Output: "...", IsError: isErr})
	}
	tests := []struct {
		name string
		evs  []event.Event
		want []string
	}{
		{"none", []event.Event{ev(1, event.Input, event.InputData{Text: "hi"})}, nil},
		{"loaded", []event.Event{load("a", `{"name":"tea"}`), result("a", false)}, []string{"tea"}},
		{"failed to load", []event.Event{load("a", `{"name":"tea"}`), result("a", true)}, nil},
		{"no result yet", []event.Event{load("a", `{"name":"tea"}`)}, nil},
		{"a file read loads nothing", []event.Event{load("a", `{"name":"tea","file":"x.md"}`), result("a", false)}, nil},
		{"another tool", []event.Event{ev(1, event.ToolCall, event.ToolCallData{ID: "a", Name: "clock", Args: json.RawMessage(`{"name":"tea"}`)}), result("a", false)}, nil},
		{"several, sorted", []event.Event{load("a", `{"name":"tea"}`), load("b", `{"name":"coffee"}`), result("b", false), result("a", false),
			ev(2, event.TurnEnd, event.TurnEndData{}), load("c", `{"name":"tea"}`), result("c", false)}, []string{"coffee", "tea"}},
		{"a summary keeps those it folded", []event.Event{ev(3, event.Summary, event.SummaryData{Text: "s", Skills: []string{"tea"}}),
			load("d", `{"name":"pdf"}`), result("d", false)}, []string{"pdf", "tea"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Conversation
			c.Add(tt.evs...)
			if diff := cmp.Diff(tt.want, c.Skills()); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
		})
	}
}

type connectRec struct {
	mu    sync.Mutex
	calls [][]string
}

func (c *connectRec) ConnectSkills(_ context.Context, agentID string, skills []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, append([]string{agentID}, skills...))
}

// A skill's server's tools are offered only in a session that loaded the
// skill: before the turn (Turn.Skills) or in an earlier step of it; the
// servers of the skills loaded before are connected first.
func TestSkillServerTools(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c1", Name: "skill", Args: json.RawMessage(`{"name":"coffee"}`)}),
		text("done"),
	}}
	h := newHarness(t, models{"m": p})
	conn := &connectRec{}
	h.eng.o.Skills = conn
	for _, s := range []tool.Spec{
		{Name: "skill", InputSchema: obj},
		{Name: "teashop__brew", InputSchema: obj, Server: "teashop", Skills: []string{"tea"}},
		{Name: "cafe__brew", InputSchema: obj, Server: "cafe", Skills: []string{"coffee"}, Scope: []string{"a"}},
		{Name: "both__brew", InputSchema: obj, Server: "both", Skills: []string{"coffee", "tea"}},
	} {
		if err := h.tools.Register(tool.Func(s, func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{Output: "ok"}, nil })); err != nil {
			t.Fatal(err)
		}
	}
	tr := turn(&agent.Definition{Tools: agent.ToolPolicy{Builtin: []string{"skill"}}})
	tr.Skills = []string{"tea"}
	if _, err := h.run(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	names := func(r *model.Request) []string {
		var out []string
		for _, s := range r.Tools {
			out = append(out, s.Name)
		}
		return out
	}
	if got, want := names(p.reqs[0]), []string{"both__brew", "skill", "teashop__brew"}; !slices.Equal(got, want) {
		t.Errorf("first step offered %q, want %q", got, want)
	}
	if got, want := names(p.reqs[1]), []string{"both__brew", "cafe__brew", "skill", "teashop__brew"}; !slices.Equal(got, want) {
		t.Errorf("after loading coffee, offered %q, want %q", got, want)
	}
	if diff := cmp.Diff([][]string{{"a", "tea"}}, conn.calls); diff != "" {
		t.Errorf("connected (-want +got):\n%s", diff)
	}

	// Another session, which loaded nothing, sees none of them.
	p2 := &script{}
	h2 := newHarness(t, models{"m": p2})
	for _, s := range []tool.Spec{{Name: "teashop__brew", InputSchema: obj, Server: "teashop", Skills: []string{"tea"}}} {
		h2.tools.Register(tool.Func(s, func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{}, nil }))
	}
	if _, err := h2.run(context.Background(), turn(&agent.Definition{})); err != nil {
		t.Fatal(err)
	}
	if got := names(p2.reqs[0]); slices.Contains(got, "teashop__brew") {
		t.Errorf("a session without skills is offered %q", got)
	}
}
