package main

import (
	"slices"
	"strings"
	"testing"

	"agentd/internal/event"
)

// The USD budgets are hard: a model call's output is bounded so that the
// call cannot take the turn (or the agent's day) past its budget, and a
// call that could not fit is not made. The model here talks until its
// max_tokens stops it; prices are in agentd.yaml.
func TestUSDBudgetsBoundCalls(t *testing.T) {
	t.Parallel()
	addr := fake(t, "match *\nsay "+strings.Repeat("blah ", 3000)+"\n")
	agent := func(budgets string) string {
		return "model:\n  provider: openai\n  name: fake\n  base_url: http://" + addr + "/v1\nbudgets:\n" + budgets
	}
	dir := dataDir(t, map[string]string{
		// $0.00001 an input token, $0.01 an output token.
		"agentd.yaml":       "prices:\n  fake: {input: 10, output: 10000}\n",
		"agents/turn.yaml":  agent("  max_usd_per_turn: 1\n"),
		"agents/daily.yaml": agent("  max_usd_per_day: 1.5\n"),
	})

	// Unbounded, the reply would cost $37.50.
	r := run(t, dir, "send", "--json", "turn", "talk")
	evs, end := jsonEvents(t, r.stdout)
	if r.code != 0 || end == nil || end.CostUSD > 1 || end.CostUSD < 0.5 || end.Steps != 1 {
		t.Fatalf("turn: exit %d, end %+v\n%s", r.code, end, r.stderr)
	}
	for _, e := range evs {
		var d event.ModelCallData
		if e.Kind == event.ModelCall && e.Decode(&d) == nil && d.StopReason != "length" {
			t.Errorf("the call was not stopped by its max_tokens: %+v", d)
		}
	}

	// The day's budget across turns, through the daemon.
	serve(t, dir)
	spent := 0.0
	for i := 0; ; i++ {
		r := run(t, dir, "send", "--json", "daily", "talk")
		evs, end := jsonEvents(t, r.stdout)
		if end == nil {
			t.Fatalf("daily turn %d: exit %d\n%s", i, r.code, r.stderr)
		}
		spent += end.CostUSD
		if end.Status == event.StatusBudget {
			if end.Budget != "max_usd_per_day" || r.code != 4 || !strings.Contains(r.stderr, "budgets.max_usd_per_day") {
				t.Errorf("daily turn %d: exit %d, end %+v", i, r.code, end)
			}
			if slices.Contains(kinds(evs), event.ModelCall) {
				t.Errorf("daily turn %d: stopped after a model call, not before", i)
			}
			break
		}
		if i == 3 {
			t.Fatalf("no budget stop after %d turns costing $%.4f", i+1, spent)
		}
	}
	if spent > 1.5 || spent < 1 {
		t.Errorf("the day cost $%.4f of its $1.50", spent)
	}
}
