package agentsys

import (
	"context"
	"sync"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/store"
)

// usage is an accountStore whose accounts spent what it says.
type usage struct {
	mu    sync.Mutex
	spent map[string]float64
	reads int
}

func (u *usage) UsageOfAccount(ctx context.Context, account string) (float64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reads++
	return u.spent[account], nil
}

func noInstance(ctx context.Context, id string) (store.Instance, error) {
	return store.Instance{}, store.ErrNotFound
}

func TestAccountConcurrentChildrenCannotOverspend(t *testing.T) {
	l := newLedger(&usage{}, noInstance, time.Now, false)
	a, _, err := l.For(context.Background(), store.Session{ID: 1, Agent: "assistant"}, 7, &agent.Definition{ID: "assistant"},
		agent.Budgets{MaxUSDPerTurn: 1})
	if err != nil {
		t.Fatal(err)
	}
	if a.Key() != "1:7" || a.Limit() != 1 {
		t.Fatalf("account %s limit %v", a.Key(), a.Limit())
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _ := a.Reserve(0.3); ok {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if granted != 3 {
		t.Fatalf("%d reservations of 0.3 granted on 1.0", granted)
	}
	a.Settle(0.3, 0.1) // a call cost less than bound: room again
	if ok, spent := a.Reserve(0.3); !ok || spent < 0.69 || spent > 0.71 {
		t.Errorf("after a settle: %v %v", ok, spent)
	}
}

func TestAccountReloadsWhatWasSpent(t *testing.T) {
	u := &usage{spent: map[string]float64{"1:7": 0.75}}
	l := newLedger(u, noInstance, time.Now, false)
	a, err := l.account(context.Background(), "1:7", 1)
	if err != nil {
		t.Fatal(err)
	}
	if ok, spent := a.Reserve(0.5); ok || spent != 0.75 {
		t.Errorf("a reload of 0.75 of 1.0 granted 0.5 (%v)", spent)
	}
	l.drop("1:7")
	if _, ok := l.limit("1:7"); ok {
		t.Error("dropped account still held")
	}
	if _, err := l.account(context.Background(), "1:7", 1); err != nil || u.reads != 2 {
		t.Errorf("reads %d, %v", u.reads, err)
	}
}

func TestSharedAccountRereads(t *testing.T) {
	u := &usage{spent: map[string]float64{"1:7": 0.25}}
	c := &clock{at: time.Now()}
	l := newLedger(u, noInstance, c.Now, true)
	a, err := l.account(context.Background(), "1:7", 1)
	if err != nil {
		t.Fatal(err)
	}
	u.mu.Lock()
	u.spent["1:7"] = 0.9 // another node's sub-agent spent
	u.mu.Unlock()
	if ok, _ := a.Reserve(0.5); !ok {
		t.Fatal("a fresh view refused")
	}
	a.Settle(0.5, 0)
	c.add(2 * refreshAfter)
	if ok, spent := a.Reserve(0.5); ok || spent < 0.9 {
		t.Errorf("a stale view not read again: %v %v", ok, spent)
	}
}

func TestSubagentSharesItsParentsTurnAccount(t *testing.T) {
	h := newHarness(t, nil)
	h.holdText("slow")
	in := h.startChild(StartRequest{Prompt: "slow", Template: "worker"})
	parent, err := h.k.Store.SessionByAddress(context.Background(), "assistant", "main")
	if err != nil {
		t.Fatal(err)
	}
	if in.Account != accountKey(parent.ID, in.OriginTurn) {
		t.Fatalf("account %q, want the starting turn's", in.Account)
	}
	sess, err := h.k.Store.SessionByAddress(context.Background(), in.ID, "main")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := h.sys.Definition(in.ID)
	a, payer, err := h.sys.Ledger().For(context.Background(), sess, in.Turn, d, agent.Budgets{MaxUSDPerTurn: 5})
	if err != nil {
		t.Fatal(err)
	}
	if a.Key() != in.Account || payer != "assistant" {
		t.Errorf("child's account %s payer %s", a.Key(), payer)
	}
	// A background agent pays alone, its template's day budget.
	bg := h.startChild(StartRequest{Prompt: "slow bg", Template: "worker", Detached: true, CallID: "bg"})
	bsess, err := h.k.Store.SessionByAddress(context.Background(), bg.ID, "main")
	if err != nil {
		t.Fatal(err)
	}
	bd, _ := h.sys.Definition(bg.ID)
	a, payer, err = h.sys.Ledger().For(context.Background(), bsess, bg.Turn, bd, agent.Budgets{})
	if err != nil || a.Key() != accountKey(bsess.ID, bg.Turn) || payer != "worker" {
		t.Errorf("background account %v payer %s %v", a, payer, err)
	}
}
