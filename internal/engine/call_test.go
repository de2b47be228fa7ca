package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/tool"
)

// A tool learns the turn that calls it, the hops of the input the turn
// serves and the memory scope of its agent: an agent tool sends its
// message one hop further, a memory tool stays in the scope.
func TestCallCarriesTurnHopsScope(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c1", Name: "probe", Args: json.RawMessage(`{}`)}), text("done")}}
	h := newHarness(t, models{"m": p})
	var got []tool.Call
	err := h.tools.Register(tool.Func(tool.Spec{Name: "probe", InputSchema: json.RawMessage(`{"type":"object"}`), ReadOnly: true},
		func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			got = append(got, tool.Call{Agent: c.Agent, Session: c.Session, Turn: c.Turn, Hops: c.Hops, Scope: c.Scope})
			return tool.Result{Output: "ok"}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		scope string
		want  string
	}{
		{"own scope", "", "a"},
		{"swarm instance", "ck1", "ck1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, p.calls = nil, 0
			tr := turn(&agent.Definition{ID: "a", Scope: tc.scope})
			tr.Item.Hops = 3
			end, err := h.run(t.Context(), tr)
			if err != nil || end.Status != event.StatusDone {
				t.Fatalf("end %+v, err %v", end, err)
			}
			want := []tool.Call{{Agent: "a", Session: "a/k", Turn: 7, Hops: 3, Scope: tc.want}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// A swarm instance recalls from its own scope, not its template's.
func TestRecallInScope(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("ok")}}
	h := newHarness(t, models{"m": p})
	h.eng.o.Recall = recaller{}
	def := &agent.Definition{ID: "ck1", Template: "support", Scope: "ck1", Memory: agent.Memory{Recall: 3}}
	if _, err := h.run(t.Context(), turn(def)); err != nil {
		t.Fatal(err)
	}
	def = &agent.Definition{ID: "ck2", Template: "assistant", Scope: "assistant", Memory: agent.Memory{Recall: 3}}
	if _, err := h.run(t.Context(), turn(def)); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"ck1 likes green tea", "assistant likes green tea"} {
		if sys := p.reqs[i].System; !strings.Contains(sys, want) {
			t.Errorf("turn %d's system prompt lacks %q:\n%s", i, want, sys)
		}
	}
}
