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
// A payer with a max_usd_per_day has a day account too, which every turn
// account it pays for reserves on with each call: the turns and sub-agents
// running at once for one payer cannot overspend its day together (each
// turn reads the day's spending only once, at its start).
//
// Ledger.mu is a leaf lock: no store read, no other lock, under it.
type Ledger struct {
	st     accountStore
	lookup func(ctx context.Context, id string) (store.Instance, error) // an instance's row (cached)
	now    func() time.Time
	shared bool
	days   *dayBook // nil: no day accounts

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

// dayBook is what day accounts are made from: a payer's day limit (0:
// none) and what it spent since a time.
type dayBook struct {
	limit func(payer string) float64
	spent func(ctx context.Context, payer string, since time.Time) (float64, error)
}

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
// own, made here so that the sub-agents it starts share it. The account
// reserves on its payer's day account as well.
func (l *Ledger) For(ctx context.Context, sess store.Session, turn int64, def *agent.Definition, b agent.Budgets) (engine.Account, string, error) {
	key, limit, payer, named := accountKey(sess.ID, turn), b.MaxUSDPerTurn, def.ID, ""
	if store.IsInstanceID(sess.Agent) && def.Template != "" {
		in, err := l.lookup(ctx, sess.Agent)
		if err != nil {
			return nil, "", fmt.Errorf("agentsys: account of %s: %w", sess.Agent, err)
		}
		if in.Account != "" {
			key, limit = in.Account, in.TurnLimit
		}
		if in.Payer != "" {
			payer, named = in.Payer, in.Payer
		}
	}
	a, err := l.account(ctx, key, limit)
	if err != nil {
		return nil, "", err
	}
	if err := l.payDay(ctx, a, payer); err != nil {
		return nil, "", err
	}
	return a, named, nil
}

// payDay sets the day account of payer on a, unless a has one.
func (l *Ledger) payDay(ctx context.Context, a *account, payer string) error {
	if l.days == nil {
		return nil
	}
	l.mu.Lock()
	has := a.day != nil
	l.mu.Unlock()
	if has {
		return nil
	}
	limit := l.days.limit(payer)
	if limit <= 0 {
		return nil
	}
	y, m, d := l.now().UTC().Date()
	since := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	key := "day:" + payer + ":" + since.Format(time.DateOnly)
	day, err := l.load(ctx, key, limit, func(ctx context.Context) (float64, error) { return l.days.spent(ctx, payer, since) })
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	day.limit = limit // the payer's definition may have changed
	if a.day == nil {
		a.day = day
	}
	return nil
}

// account returns the account of key, loading what it spent if the
// ledger does not hold it. limit is its limit when it is made here (the
// paying turn's; 0 none).
func (l *Ledger) account(ctx context.Context, key string, limit float64) (*account, error) {
	return l.load(ctx, key, limit, func(ctx context.Context) (float64, error) { return l.st.UsageOfAccount(ctx, key) })
}

// load returns the account of key, made with limit and what read says
// it spent if the ledger does not hold it.
func (l *Ledger) load(ctx context.Context, key string, limit float64, read func(context.Context) (float64, error)) (*account, error) {
	l.mu.Lock()
	a, ok := l.accounts[key]
	if ok {
		a.used = l.now()
	}
	l.mu.Unlock()
	if ok {
		return a, nil
	}
	spent, err := read(ctx)
	if err != nil {
		return nil, fmt.Errorf("agentsys: account %s: %w", key, err)
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if a, ok := l.accounts[key]; ok { // made meanwhile
		return a, nil
	}
	a = &account{l: l, key: key, limit: limit, spent: spent, read: read, loaded: now, used: now}
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

// sweep forgets the accounts no turn has used for idleAccount, and the
// day accounts no account it keeps reserves on.
func (l *Ledger) sweep() {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	inUse := map[*account]bool{}
	for k, a := range l.accounts {
		switch {
		case a.reserved == 0 && now.Sub(a.used) > idleAccount:
			delete(l.accounts, k)
		case a.day != nil:
			inUse[a.day] = true
		}
	}
	for k, a := range l.accounts {
		if a.reserved == 0 && now.Sub(a.used) > idleAccount && !inUse[a] {
			delete(l.accounts, k)
		}
	}
}

// account is one turn's spending, shared with its sub-agents' turns, or
// a payer's day's, shared by the turns it pays for. Its fields are
// guarded by the ledger's mu.
type account struct {
	l      *Ledger
	key    string
	limit  float64
	spent  float64
	read   func(context.Context) (float64, error) // what it spent, from the store
	loaded time.Time                              // when spent was read from the store
	used   time.Time
	day    *account // the payer's day account (nil: none)

	reserved float64
}

func (a *account) Key() string { return a.key }

// Limit is the turn's limit, or its payer's day limit when the turn has
// none.
func (a *account) Limit() float64 {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	limit, _ := a.bound()
	return limit
}

// bound returns the account's limit (Limit) and what is left of it: the
// less of what the turn and the payer's day have left. Called with the
// ledger's mu held.
func (a *account) bound() (limit, left float64) {
	limit, left = a.limit, a.limit-a.spent-a.reserved
	if d := a.day; d != nil && d.limit > 0 {
		dayLeft := d.limit - d.spent - d.reserved
		switch {
		case limit <= 0:
			limit, left = d.limit, dayLeft
		case dayLeft < left:
			left = dayLeft
		}
	}
	return limit, left
}

// slack absorbs the rounding of a reservation the engine sized to what
// was left.
const slack = 1e-12

// Reserve takes usd from what is left of the turn's and of the payer's
// day, or refuses when less is left of either. spent is the limit less
// what is left (the engine's view of the account).
func (a *account) Reserve(usd float64) (bool, float64) {
	a.refresh()
	a.l.mu.Lock()
	day := a.day
	a.l.mu.Unlock()
	if day != nil {
		day.refresh()
	}
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	a.used = a.l.now()
	limit, left := a.bound()
	before := limit - left
	if limit > 0 && usd > left+slack {
		return false, before
	}
	a.reserved += usd
	if day != nil {
		day.reserved += usd
		day.used = a.used
	}
	return true, before
}

// Settle replaces a reservation by what the call cost, on the day's
// account too.
func (a *account) Settle(reserved, actual float64) {
	a.l.mu.Lock()
	defer a.l.mu.Unlock()
	for _, x := range []*account{a, a.day} {
		if x != nil {
			x.reserved = max(0, x.reserved-reserved)
			x.spent += actual
		}
	}
}

// refresh reads what a shared store's account spent when the view is
// older than refreshAfter: the calls other nodes committed (for a day
// account, what its payer spent today). The local
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
	spent, err := a.read(ctx)
	cancel()
	if err != nil {
		return // keep the local view
	}
	a.l.mu.Lock()
	a.spent, a.loaded = max(a.spent, spent), a.l.now()
	a.l.mu.Unlock()
}

var _ runtime.Accounts = (*Ledger)(nil)

// dayBudgets are the System's day accounts: a payer's max_usd_per_day,
// and what it spent since a time.
func (s *System) dayBudgets() *dayBook {
	us, ok := s.st.(daySpending)
	if !ok {
		return nil
	}
	return &dayBook{
		limit: func(payer string) float64 {
			if d, ok := s.definition(payer); ok {
				return d.Budgets.MaxUSDPerDay
			}
			return 0
		},
		spent: func(ctx context.Context, payer string, since time.Time) (float64, error) {
			u, err := us.UsageSince(ctx, payer, since)
			return u.CostUSD, err
		},
	}
}

// daySpending is the optional ability of the Store to sum what an agent
// paid since a time (store.Store's UsageSince).
type daySpending interface {
	UsageSince(ctx context.Context, agent string, t time.Time) (store.Usage, error)
}
