package agentsys

// Attacks on the day budget a sub-agent's spending counts against.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/model"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// TestAttackChildrenTogetherOverspendTheDay: a sub-agent's spending counts
// against its parent's max_usd_per_day, but each turn reads what the
// payer spent today once, when it starts, and holds its calls to what was
// left then: nothing is reserved on the day, as the turn's account
// reserves on the turn. Sub-agents started at once each see the whole of
// what is left and each spend it: four children of a $1.00 day spend
// $2.00 on top of the $0.50 their parent spent. (max_children bounds how
// many at once; detached agents, paid by their template's day, are
// bounded only by max_live.)
func TestAttackChildrenTogetherOverspendTheDay(t *testing.T) {
	// A call costs $0.50: 2 output tokens at $0.25 each, input free.
	h := newHarness(t, &harnessOptions{engine: func(o *engine.Options) {
		o.Prices = map[string]agent.Price{"echo": {Input: 0, Output: 250000}}
	}})
	planner := *h.defs["assistant"]
	planner.Budgets.MaxUSDPerDay = 1
	h.setDef(&planner)
	var entered atomic.Int32
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	h.model.Respond = func(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		last := testkit.LastUser(req)
		if strings.Contains(last, "part") {
			entered.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &model.Response{Text: "re: " + last, StopReason: "stop", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}
	rc, _ := h.send("assistant/main", "plan") // $0.50 of the day
	var kids []store.Instance
	for i := range 4 {
		kids = append(kids, h.startChild(StartRequest{Turn: rc.Turn, CallID: fmt.Sprint("c", i), Prompt: "part " + fmt.Sprint(i),
			Template: "worker"}))
	}
	// Each child is in its model call, or was refused before it.
	h.eventually("every child at its call or ended", func() bool {
		n := int(entered.Load())
		for _, k := range kids {
			if store.AgentEnded(h.instance(k.ID).State) {
				n++
			}
		}
		return n >= len(kids)
	})
	open()
	for _, k := range kids {
		h.reported(k.ID)
	}
	y, m, d := time.Now().UTC().Date()
	u, err := h.k.Store.UsageSince(context.Background(), "assistant", time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if u.CostUSD > 1+1e-9 {
		t.Errorf("the planner's day of $1.00 paid $%.2f: its sub-agents, started at once, each spent what was left", u.CostUSD)
	}
}
