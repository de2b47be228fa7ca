package agentsys

import (
	"context"
	"fmt"
	"math"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/store"
)

// A payer's day is an account too: the turns it pays for at once (its
// sub-agents' turns, its own in several sessions) reserve from what its
// max_usd_per_day has left, so that together they cannot overspend it.
// Each turn still checks the day against the store's usage when it
// starts (runtime.pay); the day account adds the reservations of the
// calls in flight. A day account is keyed "day:<payer>:<date>" in the
// ledger's map, loaded from the payer's usage since midnight UTC, and
// forgotten by the sweep once idle. On a store other nodes share, their
// spending of the day is seen by the turns that start after it (as
// before); the reservations are this node's.

// daySpender is the optional ability of the ledger's store to sum what a
// payer spent since a time (store.Store.UsageSince).
type daySpender interface {
	UsageSince(ctx context.Context, agent string, t time.Time) (store.Usage, error)
}

// withDay returns turn bound by the day of its payer ("" def) too, when
// the payer has a max_usd_per_day; else turn. The day's limit is the
// payer's own, as its definition says (a tighter one an input sets holds
// for that turn alone: the engine checks it).
func (l *Ledger) withDay(ctx context.Context, turn *account, payer string, def *agent.Definition, b agent.Budgets) (engine.Account, error) {
	ds, ok := l.st.(daySpender)
	if payer == "" {
		payer = def.ID
	}
	limit := 0.0
	switch {
	case l.dayLimit != nil:
		limit = l.dayLimit(payer)
	case payer == def.ID:
		limit = b.MaxUSDPerDay
	}
	if !ok || limit <= 0 {
		return turn, nil
	}
	y, m, d := l.now().UTC().Date()
	midnight := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	key := "day:" + payer + ":" + midnight.Format(time.DateOnly)
	l.mu.Lock()
	day, held := l.accounts[key]
	if held {
		day.used, day.limit = l.now(), limit // the definition may have changed
	}
	l.mu.Unlock()
	if !held {
		u, err := ds.UsageSince(ctx, payer, midnight)
		if err != nil {
			return nil, fmt.Errorf("agentsys: day account of %s: %w", payer, err)
		}
		now := l.now()
		l.mu.Lock()
		if day, held = l.accounts[key]; !held { // not made meanwhile
			day = &account{l: l, key: key, limit: limit, spent: u.CostUSD, loaded: now, used: now}
			l.accounts[key] = day
		}
		l.mu.Unlock()
	}
	return &dayBound{turn: turn, day: day, payer: payer}, nil
}

// dayBound is a turn's account bounded by its payer's day as well: a
// reservation is taken from both or from neither. Its limit is the turn's
// (the day's when the turn has none), and what it reports spent is that
// limit less what the tighter of the two has left.
type dayBound struct {
	turn, day *account
	payer     string
}

func (c *dayBound) Key() string { return c.turn.key }

func (c *dayBound) Limit() float64 {
	l := c.turn.l
	l.mu.Lock()
	defer l.mu.Unlock()
	return c.limit()
}

// limit is Limit with l.mu held: withDay moves the day's limit under it
// (a definition changed while turns it pays for run).
func (c *dayBound) limit() float64 {
	if c.turn.limit > 0 {
		return c.turn.limit
	}
	return c.day.limit
}

func (c *dayBound) Reserve(usd float64) (bool, float64) {
	c.turn.refresh()
	l := c.turn.l
	l.mu.Lock()
	defer l.mu.Unlock()
	left := math.Inf(1)
	for _, a := range [...]*account{c.turn, c.day} {
		a.used = l.now()
		if a.limit > 0 {
			left = min(left, a.limit-a.spent-a.reserved)
		}
	}
	spent := c.limit() - left
	if usd > left+usdSlack {
		return false, spent
	}
	c.turn.reserved += usd
	c.day.reserved += usd
	return true, spent
}

func (c *dayBound) Settle(reserved, actual float64) {
	l := c.turn.l
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range [...]*account{c.turn, c.day} {
		a.reserved = max(0, a.reserved-reserved)
		a.spent += actual
	}
}

// Binding names the budget that has the least left (engine.binder): the
// turn's, or the payer's day.
func (c *dayBound) Binding() (budget, what string) {
	l := c.turn.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.turn.limit > 0 && c.turn.limit-c.turn.spent-c.turn.reserved <= c.day.limit-c.day.spent-c.day.reserved {
		return "max_usd_per_turn", fmt.Sprintf("the paying turn %s past its $%.4f budget", c.turn.key, c.turn.limit)
	}
	return "max_usd_per_day", fmt.Sprintf("the day of %s past its $%.4f budget", c.payer, c.day.limit)
}
