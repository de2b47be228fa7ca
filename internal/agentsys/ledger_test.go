package agentsys

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/model"
	"agentd/internal/store"
	"agentd/internal/testkit"
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
	h.allowDetach("assistant")
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

// A turn's max_usd_per_turn bounds the sub-agents it started together, on
// the real kernel: four sub-agents running at once each try to spend the
// whole budget (their model answers with all the output it is allowed);
// what they spend together stays within it, and each one refused reports
// a budget failure to its parent.
func TestSubagentsRunningAtOnceShareOneTurnBudget(t *testing.T) {
	const limit = 0.001 // X: $0.001, a thousand output tokens at $1 per million
	h := newHarness(t, &harnessOptions{prices: map[string]agent.Price{"echo": {Output: 1}}})
	parent := testkit.Agent("assistant")
	parent.Agents.Templates = []string{"worker"}
	parent.Budgets.MaxUSDPerTurn = limit
	h.setDef(parent)
	release := make(chan struct{})
	h.model.Respond = func(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		last := testkit.LastUser(req)
		out := 2
		if strings.HasPrefix(last, "spend") {
			select { // the calls made wait until every sub-agent has tried
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			out = 1000 // X's worth
			if req.MaxTokens > 0 {
				out = min(out, req.MaxTokens) // a model keeps to the bound it is sent
			}
		}
		return &model.Response{Text: "re: " + last, StopReason: "stop", Usage: model.Usage{InputTokens: 3, OutputTokens: out}}, nil
	}
	rc, _ := h.send("assistant/main", "hello")
	kids := make([]store.Instance, 4)
	errs := make(chan error, len(kids))
	for i := range kids {
		go func() {
			var err error
			kids[i], err = h.sys.Start(context.Background(), StartRequest{Caller: "assistant", CallerSession: "assistant/main",
				Turn: rc.Turn, CallID: fmt.Sprint("call_", i), Prompt: fmt.Sprint("spend ", i), Template: "worker"})
			errs <- err
		}()
	}
	for range kids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	h.eventually("every sub-agent calling its model or ended", func() bool {
		ended := 0
		for _, k := range kids {
			if store.AgentEnded(h.instance(k.ID).State) {
				ended++
			}
		}
		return ended+h.model.Active() == len(kids)
	})
	close(release)
	refused := 0
	for _, k := range kids {
		in := h.reported(k.ID)
		if in.State == store.AgentDone {
			continue
		}
		refused++
		if in.State != store.AgentFailed || !strings.Contains(in.Result, "max_usd_per_turn") {
			t.Errorf("%s ended %s: %s", k.ID, in.State, in.Result)
		}
		h.eventually("the report of "+k.ID, func() bool { return len(h.reports("assistant/main", k.ID)) == 1 })
		if r := h.reports("assistant/main", k.ID)[0]; !strings.Contains(r.Text, "max_usd_per_turn") {
			t.Errorf("%s reported %q", k.ID, r.Text)
		}
	}
	spent, err := h.k.Store.UsageOfAccount(context.Background(), kids[0].Account)
	if err != nil {
		t.Fatal(err)
	}
	if spent > limit*(1+1e-9) {
		t.Errorf("the turn and its sub-agents spent $%.6f of $%.6f", spent, limit)
	}
	if refused == 0 {
		t.Errorf("no sub-agent was refused: $%.6f spent", spent)
	}
}
