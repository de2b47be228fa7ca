package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
)

// fakeAccount is an Account with the ledger's rule: a reservation is
// refused when it would take spent and reserved past the limit.
type fakeAccount struct {
	mu                    sync.Mutex
	limit, spent, reserve float64
	settled               int
}

func (a *fakeAccount) Key() string    { return "1:7" }
func (a *fakeAccount) Limit() float64 { return a.limit }

func (a *fakeAccount) Reserve(usd float64) (bool, float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.spent + a.reserve
	if a.limit > 0 && s+usd > a.limit {
		return false, s
	}
	a.reserve += usd
	return true, s
}

func (a *fakeAccount) Settle(reserved, actual float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reserve -= reserved
	a.spent += actual
	a.settled++
}

// looping calls the read tool for ever, producing at most the output it
// is allowed (and 5 tokens), as a model does.
type looping struct{}

func (looping) Stream(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	out := 5
	if req.MaxTokens > 0 {
		out = min(out, req.MaxTokens)
	}
	return &model.Response{ToolCalls: []model.ToolCall{{ID: "c", Name: "read", Args: json.RawMessage(`{}`)}},
		Usage: model.Usage{InputTokens: 1, OutputTokens: out}}, nil
}

// Turns that share an account (a turn and its sub-agents') cannot
// overspend it together: each call reserves its bounded cost first, and
// a turn whose call does not fit ends with the budget of the paying turn.
func TestAccountSharedByConcurrentTurns(t *testing.T) {
	h := newHarness(t, models{"priced": looping{}})
	acct := &fakeAccount{limit: 100}
	const turns = 4
	ends := make([]event.TurnEndData, turns)
	var wg sync.WaitGroup
	for i := range turns {
		wg.Go(func() {
			def := &agent.Definition{ID: "child", Model: agent.Model{Name: "priced"}}
			tr := turn(def)
			tr.ID, tr.Item.ID = int64(10+i), int64(10+i)
			tr.Session = store.Session{ID: int64(2 + i), Agent: "child", Key: "main"}
			tr.Account, tr.Payer = acct, "parent"
			var err error
			if ends[i], err = h.run(t.Context(), tr); err != nil {
				t.Errorf("turn %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	total := 0.0
	for i, end := range ends {
		total += end.CostUSD
		if end.Status != event.StatusBudget || end.Budget != "max_usd_per_turn" || !strings.Contains(end.Reason, "paying turn 1:7") {
			t.Errorf("turn %d ended %+v; want the paying turn's budget", i, end)
		}
	}
	if acct.spent > acct.limit || total > acct.limit || acct.reserve != 0 {
		t.Errorf("the turns spent $%v (the account counts $%v, $%v still reserved) of $%v", total, acct.spent, acct.reserve, acct.limit)
	}
	if total != acct.spent {
		t.Errorf("the account was settled with $%v, the turns cost $%v", acct.spent, total)
	}
	// The usage rows name the payer and the account.
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	rows := 0
	for _, b := range h.log.batches {
		for _, u := range b.Usage {
			rows++
			if u.Payer != "parent" || u.Account != "1:7" {
				t.Errorf("usage row %+v; want payer parent, account 1:7", u)
			}
		}
	}
	if rows == 0 {
		t.Error("no usage rows")
	}
}

// An account with nothing left stops the turn before its next call.
func TestAccountSpentStopsTurn(t *testing.T) {
	h := newHarness(t, models{"priced": looping{}})
	acct := &fakeAccount{limit: 10, spent: 10}
	tr := turn(&agent.Definition{Model: agent.Model{Name: "priced"}})
	tr.Account = acct
	end, err := h.run(t.Context(), tr)
	if err != nil || end.Status != event.StatusBudget || end.Budget != "max_usd_per_turn" || end.Steps != 0 {
		t.Fatalf("end %+v, err %v; want the account's budget before any call", end, err)
	}
}

// A model without a price is not bounded by the account, as by any USD
// budget; its calls still name the account.
func TestAccountUnpricedModel(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("done")}}
	h := newHarness(t, models{"m": p})
	acct := &fakeAccount{limit: 1}
	tr := turn(&agent.Definition{})
	tr.Account = acct
	end, err := h.run(t.Context(), tr)
	if err != nil || end.Status != event.StatusDone || p.reqs[0].MaxTokens != 0 {
		t.Fatalf("end %+v, err %v, max_tokens %d", end, err, p.reqs[0].MaxTokens)
	}
}
