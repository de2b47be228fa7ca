package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
)

// TestInputBudgets: an input's budgets (a command's, a job's) tighten the
// agent's for its turn and never loosen them.
func TestInputBudgets(t *testing.T) {
	for _, tc := range []struct {
		name    string
		agent   agent.Budgets
		options string
		steps   int
	}{
		{"tighter", agent.Budgets{MaxSteps: 5}, `{"budgets":{"max_steps":2}}`, 2},
		{"never looser", agent.Budgets{MaxSteps: 3}, `{"budgets":{"max_steps":9}}`, 3},
		{"under the default", agent.Budgets{}, `{"budgets":{"max_steps":4}}`, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs []func(*model.Request) (*model.Response, error)
			for range 10 {
				rs = append(rs, calls(model.ToolCall{ID: "c", Name: "read", Args: json.RawMessage(`{}`)}))
			}
			h := newHarness(t, models{"m": &script{resps: rs}})
			tr := turn(&agent.Definition{Budgets: tc.agent})
			tr.Item.Options = json.RawMessage(tc.options)
			end, err := h.run(context.Background(), tr)
			if err != nil || end.Status != event.StatusBudget || end.Budget != "max_steps" || end.Steps != tc.steps {
				t.Fatalf("end %+v err %v; want max_steps after %d steps", end, err, tc.steps)
			}
			if tr.Agent.Budgets != tc.agent {
				t.Fatalf("the agent's definition changed: %+v", tr.Agent.Budgets)
			}
		})
	}
}

func TestTighter(t *testing.T) {
	b := agent.Budgets{MaxSteps: 10, MaxOutputTokens: 100, MaxUSDPerTurn: 1, MaxUSDPerDay: 5}
	got := Tighter(b, &agent.Budgets{MaxSteps: 20, MaxOutputTokens: 50, MaxWallTime: agent.Duration(60e9)})
	want := agent.Budgets{MaxSteps: 10, MaxOutputTokens: 50, MaxUSDPerTurn: 1, MaxUSDPerDay: 5, MaxWallTime: agent.Duration(60e9)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	if _, err := ParseLifecycleOptions(json.RawMessage(`{"budgets":{"max_steps":-1}}`)); err == nil {
		t.Error("a negative budget was accepted")
	}
	if _, err := ParseLifecycleOptions(json.RawMessage(`{"budgets":{"max_usd_per_day":1}}`)); err == nil {
		t.Error("an input set the agent's daily budget")
	}
}
