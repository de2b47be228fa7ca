package engine

import (
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/event"
)

// dayAccount is a fakeAccount that says the payer's day binds it.
type dayAccount struct{ fakeAccount }

func (*dayAccount) Binding() (string, string) {
	return "max_usd_per_day", "the day of planner past its $0.3000 budget"
}

// A call refused by an account that names the budget binding it ends the
// turn with that budget and its words, not the paying turn's.
func TestAccountNamesItsBinding(t *testing.T) {
	h := newHarness(t, models{"priced": looping{}})
	acct := &dayAccount{fakeAccount{limit: 0.3, spent: 0.2999999}} // too little left for a call
	tr := turn(&agent.Definition{Model: agent.Model{Name: "priced"}})
	tr.Account = acct
	end, err := h.run(t.Context(), tr)
	if err != nil || end.Status != event.StatusBudget || end.Budget != "max_usd_per_day" ||
		!strings.Contains(end.Reason, "could take the day of planner past its $0.3000 budget") || !strings.HasSuffix(end.Reason, "(budgets.max_usd_per_day)") {
		t.Fatalf("end %+v, err %v; want the day's budget named", end, err)
	}
}
