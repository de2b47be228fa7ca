package engine

import (
	"fmt"
	"math"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
)

// Account is spending shared by a turn and the turns of the sub-agents it
// started: one max_usd_per_turn bounds them together. The engine reserves
// a call's bounded cost before the call and settles it with what the call
// cost after, so that turns running at once cannot overspend it together.
// Safe for concurrent use.
type Account interface {
	// Key is "<session id>:<turn id>" of the paying turn; usage rows carry
	// it as their account.
	Key() string
	// Limit is the account's USD limit; 0: none.
	Limit() float64
	// Reserve takes usd from what is left and reports true, or takes
	// nothing and reports false when less than usd is left. spent is what
	// the account had spent and reserved before this call.
	Reserve(usd float64) (ok bool, spent float64)
	// Settle replaces a reservation by what the call it was made for
	// actually cost.
	Settle(reserved, actual float64)
}

// accountTries bounds how often a call's reservation is tried again when
// turns sharing the account took what was left between the look and the
// reservation.
const accountTries = 4

// reserve takes from the turn's account the most req's call to m may
// cost: its input at its estimate and its output at the bound it then
// gets (lowered so that the reservation fits what the account has left).
// A call that does not fit even with one output token is not made: the
// error is a *budgetStop naming the paying turn. A model without a price,
// or an account without a limit, reserves nothing: its cost is settled
// after the call all the same.
func (r *run) reserve(m agent.Model, req *model.Request) error {
	a := r.t.Account
	r.release()
	price, ok := r.e.o.Prices[m.Name]
	if a == nil || !ok || a.Limit() <= 0 {
		return nil
	}
	in := r.inputCost(m, price)
	n := req.MaxTokens // the output bound so far; none: what every model accepts
	if n <= 0 {
		n = safeOutput
	}
	_, spent := a.Reserve(0)
	for try := 0; try < accountTries; try++ {
		left := a.Limit() - spent
		k := affordable(left, in, price)
		if k < 1 {
			break
		}
		k = min(k, n)
		usd := in + float64(k)*price.Output/1e6
		var ok bool
		if ok, spent = a.Reserve(usd); ok {
			r.held = usd
			boundOutput(req, k)
			return nil
		}
	}
	left := a.Limit() - spent
	return &budgetStop{event.TurnEndData{Status: event.StatusBudget, Budget: "max_usd_per_turn",
		Reason: fmt.Sprintf("stopped: the next call to %s could take the paying turn %s past its $%.4f budget: $%.4f is left, its input costs about $%.4f (budgets.max_usd_per_turn)",
			m.Name, a.Key(), a.Limit(), max(left, 0), in)}}
}

// affordable returns the output tokens that left pays for after a call's
// input cost in, at price (MaxInt32 when output is free and the input
// fits); less than 1 when the input alone does not fit.
func affordable(left, in float64, price agent.Price) int {
	if price.Output <= 0 {
		if in >= left {
			return 0
		}
		return math.MaxInt32
	}
	return int(max(min(math.Floor((left-in)*1e6/price.Output), math.MaxInt32), 0))
}

// settle replaces the reservation of the turn's last call by what the
// call cost, on the turn's account if it has one.
func (r *run) settle(cost float64) {
	if a := r.t.Account; a != nil {
		a.Settle(r.held, cost)
	}
	r.held = 0
}

// release gives back the reservation of a call that cost nothing (it
// failed, or was not made).
func (r *run) release() {
	if r.held != 0 {
		r.settle(0)
	}
}

// accountKey returns the turn's account for its usage rows ("" without
// one).
func (r *run) accountKey() string {
	if a := r.t.Account; a != nil {
		return a.Key()
	}
	return ""
}

// accountSpent reports whether the turn's account has nothing left, and
// the reason to stop then.
func (r *run) accountSpent() (string, bool) {
	a := r.t.Account
	if a == nil || a.Limit() <= 0 {
		return "", false
	}
	_, spent := a.Reserve(0)
	if spent < a.Limit() {
		return "", false
	}
	return fmt.Sprintf("stopped: the paying turn %s spent $%.4f of its $%.4f budget (budgets.max_usd_per_turn)", a.Key(), spent, a.Limit()), true
}
