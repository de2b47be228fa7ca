package agentsys

import (
	"context"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/store"
)

// dayUsage is a usage whose payers spent today what it says.
type dayUsage struct {
	usage
	today map[string]float64
}

func (u *dayUsage) UsageSince(ctx context.Context, agent string, t time.Time) (store.Usage, error) {
	return store.Usage{CostUSD: u.today[agent]}, nil
}

// Turns a payer pays for at once reserve from its day: together they
// cannot take it past max_usd_per_day, whatever each turn's own account
// has left; a settled call gives back what it did not cost.
func TestDayAccountBoundsTurnsAtOnce(t *testing.T) {
	ctx := context.Background()
	l := newLedger(&dayUsage{today: map[string]float64{"assistant": 0.4}}, noInstance, time.Now, false)
	def := &agent.Definition{ID: "assistant"}
	b := agent.Budgets{MaxUSDPerDay: 1}
	a, _, err := l.For(ctx, store.Session{ID: 1, Agent: "assistant"}, 7, def, b)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := l.For(ctx, store.Session{ID: 2, Agent: "assistant"}, 8, def, b)
	if err != nil {
		t.Fatal(err)
	}
	if a.Key() != "1:7" || c.Key() != "2:8" || a.Limit() != 1 {
		t.Fatalf("accounts %s and %s, limit %v", a.Key(), c.Key(), a.Limit())
	}
	if ok, spent := a.Reserve(0.5); !ok || spent != 0.4 {
		t.Fatalf("the first turn's 0.5 of the 0.6 left: %v (spent %v)", ok, spent)
	}
	if ok, spent := c.Reserve(0.2); ok || spent < 0.89 || spent > 0.91 {
		t.Errorf("the second turn's 0.2 with 0.1 left: %v (spent %v)", ok, spent)
	}
	if b, what := c.(interface{ Binding() (string, string) }).Binding(); b != "max_usd_per_day" || what != "the day of assistant past its $1.0000 budget" {
		t.Errorf("the binding budget: %s, %q", b, what)
	}
	a.Settle(0.5, 0.1)
	if ok, _ := c.Reserve(0.2); !ok {
		t.Error("after the first call cost 0.1, the second turn's 0.2 was refused")
	}

	// Without a day budget the turn's account is its own alone.
	d, _, err := l.For(ctx, store.Session{ID: 3, Agent: "other"}, 9, &agent.Definition{ID: "other"}, agent.Budgets{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.(*account); !ok {
		t.Errorf("a turn with no day budget got %T", d)
	}
}
