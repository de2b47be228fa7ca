package agentsys

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Ledger keeps the spending accounts shared by a turn and the sub-agents
// it started (runtime.Accounts): one max_usd_per_turn bounds them
// together. An account lives in memory while it is used; one the ledger
// does not hold (after a restart, or one dropped) is loaded from the usage
// rows recorded with its key, so a call that did not commit (its
// reservation gone with the process) was not paid.
//
// Ledger.mu is a leaf lock: no store read, no other lock, under it.
type Ledger struct {
	st     accountStore
	lookup func(ctx context.Context, id string) (store.Instance, error) // an instance's row (cached)
	now    func() time.Time
	shared bool

	mu       sync.Mutex
	accounts map[string]*account
}

// accountStore is what the ledger reads.
type accountStore interface {
	UsageOfAccount(ctx context.Context, account string) (float64, error)
}

// Ledger tuning.
const (
	// refreshAfter is how old a shared store's account view may get before
	// Reserve reads it again (other nodes' sub-agents spend from it too).
	refreshAfter = time.Second
	// idleAccount is how long an account no turn has used stays in memory.
	idleAccount = 10 * time.Minute
)

func newLedger(st accountStore, lookup func(context.Context, string) (store.Instance, error), now func() time.Time, shared bool) *Ledger {
	return &Ledger{st: st, lookup: lookup, now: now, shared: shared, accounts: make(map[string]*account)}
}

// accountKey is the key of the account of turn in the session id.
func accountKey(session, turn int64) string {
	return strconv.FormatInt(session, 10) + ":" + strconv.FormatInt(turn, 10)
}

// For returns the account and payer of a turn of def in sess: a
// sub-agent's turn spends from the account of the turn that started it
// (and its day budget is its payer's); any other turn's account is its
// own, made here so that the sub-agents it starts share it.
func (l *Ledger) For(ctx context.Context, sess store.Session, turn int64, def *agent.Definition, b agent.Budgets) (engine.Account, string, error) {
	if store.IsInstanceID(sess.Agent) && def.Template != "" {
		in, err := l.lookup(ctx, sess.Agent)
		if err != nil {
			return nil, "", fmt.Errorf("agentsys: account of %s: %w", sess.Agent, err)
		}
		if in.Account != "" {
			a, err := l.account(ctx, in.Account, in.TurnLimit)
			return a, in.Payer, err
		}
		a, err := l.account(ctx, accountKey(sess.ID, turn), b.MaxUSDPerTurn)
		return a, in.Payer, err
	}
	a, err := l.account(ctx, accountKey(sess.ID, turn), b.MaxUSDPerTurn)
	return a, "", err
}

// account returns the account of key, loading what it spent if the
// ledger does not hold it. limit is its limit when it is made here (the
// paying turn's; 0 none).
func (l *Ledger) account(ctx context.Context, key string, limit float64) (*account, error) {
	l.mu.Lock()
	a, ok := l.accounts[key]
	if ok {
		a.used = l.now()
	}
	l.mu.Unlock()
	if ok {
		return a, nil
	}
	spent, err := l.st.UsageOfAccount(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("agentsys: account %s: %w", key, err)
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.accounts[key]; ok { // made meanwhile
		return a, nil
	}
	a = &account{l: l, key: key, limit: limit, spent: spent, loaded: now, used: now}
	l.accounts[key] = a
	return a, nil
}

// limit returns the limit of the account of key if the ledger holds it.
func (l *Ledger) limit(key string) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.accounts[key]
	if !ok {
		return 0, false
	}
	return a.limit, true
}

// drop forgets the account of key unless a call holds a reservation on it
// (a later For loads it again from the usage rows).
func (l *Ledger) drop(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.accounts[key]; ok && a.reserved == 0 {
		delete(l.accounts, key)
	}
}

// sweep forgets the accounts no turn has used for idleAccount.
func (l *Ledger) sweep() {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, a := range l.accounts {
		if a.reserved == 0 && now.Sub(a.used) > idleAccount {
			delete(l.accounts, k)
		}
	}
}

// account is one turn's spending, shared with its sub-agents' turns. Its
// fields are guarded by the ledger's mu.
type account struct {
	l      *Ledger
	key    string
	limit  float64
	spent  float64
	loaded time.Time // when spent was read from the store
	used   time.Time

	reserved float64
}

func (a *account) Key() string    { return a.key }
func (a *account) Limit() float64 { return a.limit }

// Reserve takes usd from what is left, or refuses when less is left.
func (a *account) Reserve(usd float64) (bool, float64) {
	a.refresh()
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	a.used = a.l.now()
	before := a.spent + a.reserved
	if a.limit > 0 && before+usd > a.limit {
		return false, before
	}
	a.reserved += usd
	return true, before
}

// Settle replaces a reservation by what the call cost.
func (a *account) Settle(reserved, actual float64) {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	a.reserved = max(0, a.reserved-reserved)
	a.spent += actual
}

// refresh reads what a shared store's account spent when the view is
// older than refreshAfter: the calls other nodes committed. The local
// calls' settled costs are in the store too, so the read replaces them.
func (a *account) refresh() {
	if !a.l.shared {
		return
	}
	a.l.mu.Lock()
	stale := a.l.now().Sub(a.loaded) > refreshAfter
	a.l.mu.Unlock()
	if !stale {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupWait)
	spent, err := a.l.st.UsageOfAccount(ctx, a.key)
	cancel()
	if err != nil {
		return // keep the local view
	}
	a.l.mu.Lock()
	a.spent, a.loaded = max(a.spent, spent), a.l.now()
	a.l.mu.Unlock()
}

var _ runtime.Accounts = (*Ledger)(nil)
