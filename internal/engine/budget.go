package engine

import (
	"fmt"
	"maps"
	"math"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
)

// inputMargin is how much more input than estimated a call's USD bound
// allows for: the estimate is calibrated by what providers report, but the
// first calls to a model are counted roughly.
const inputMargin = 1.25

// budgetStop is the end of a turn whose next model call could take it, or
// the agent's day, past a USD budget.
type budgetStop struct{ end event.TurnEndData }

func (b *budgetStop) Error() string { return b.end.Reason }

// usdBound returns the most output tokens a call to m may produce without
// taking the turn past budgets.max_usd_per_turn or the agent's day past
// budgets.max_usd_per_day, counting the call's input at its estimate (with
// inputMargin) and m's price; 0 when nothing bounds it. When not even one
// output token would fit, it returns a *budgetStop.
func (r *run) usdBound(m agent.Model) (int, error) {
	price, ok := r.e.o.Prices[m.Name]
	if !ok {
		return 0, nil
	}
	b := r.def.Budgets
	in := r.inputCost(m, price)
	bound := 0
	for _, lim := range []struct {
		name, what   string
		limit, spent float64
	}{
		{"max_usd_per_turn", "the turn", b.MaxUSDPerTurn, r.cost},
		{"max_usd_per_day", "the agent's day", b.MaxUSDPerDay, r.t.SpentToday + r.cost},
	} {
		if lim.limit <= 0 {
			continue
		}
		left := lim.limit - lim.spent
		n := math.Inf(1) // output tokens the money left pays for
		if price.Output > 0 {
			n = math.Floor((left - in) * 1e6 / price.Output)
		} else if in >= left {
			n = 0
		}
		if n < 1 {
			return 0, &budgetStop{event.TurnEndData{Status: event.StatusBudget, Budget: lim.name,
				Reason: fmt.Sprintf("stopped: the next call to %s could take %s past its $%.4f budget: $%.4f is left, its input costs about $%.4f (budgets.%s)",
					m.Name, lim.what, lim.limit, max(left, 0), in, lim.name)}}
		}
		if k := int(min(n, math.MaxInt32)); n < math.Inf(1) && (bound == 0 || k < bound) {
			bound = k
		}
	}
	return bound, nil
}

// inputCost estimates the cost of the next call's input to m, with
// inputMargin.
func (r *run) inputCost(m agent.Model, price agent.Price) float64 {
	return float64(r.e.calib.Scale(m.Name, r.lastRaw)) * inputMargin * price.Input / 1e6
}

// outputKeys are the names providers give the output limit, as an agent's
// model params may set them in extra.
var outputKeys = []string{"max_tokens", "max_completion_tokens", "max_output_tokens"}

// safeOutput is the largest output limit agentd sets where the agent set
// none: every model accepts it, while one larger than a model supports is
// refused (OpenAI: "max_tokens is too large").
const safeOutput = 4096

// boundOutput lowers req's output limit to at most n tokens: the limit the
// agent set (Request.MaxTokens, and any output limit in Request.Extra,
// which the providers send in its place), or, where it set none, a limit
// of n if n is at most safeOutput. (Without one the Anthropic client asks
// for its default 4096; an OpenAI-compatible server's default may be more.)
func boundOutput(req *model.Request, n int) {
	if req.MaxTokens > 0 && n < req.MaxTokens || req.MaxTokens == 0 && n <= safeOutput {
		req.MaxTokens = n
	}
	for _, k := range outputKeys {
		v, ok := req.Extra[k]
		if !ok {
			continue
		}
		if f, isNum := number(v); isNum && f <= float64(n) {
			continue
		}
		req.Extra = maps.Clone(req.Extra) // the agent's own map is shared
		req.Extra[k] = n
	}
}

// number returns v as a float64 when it is a number.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
