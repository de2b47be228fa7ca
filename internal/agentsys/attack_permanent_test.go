package agentsys

// Attacks on create_permanent_agent: an agent that may create agents
// makes one with more than it has itself.

import (
	"errors"
	"testing"

	"agentd/internal/extension"
	"agentd/internal/store"
)

// TestAttackCreatePermanentDropsTheCreatorsBudgets: "an agent cannot make
// a better-equipped agent", but the row create_permanent_agent writes
// carries none of its creator's budgets. A planner held to $0.10 a turn
// and $1 a day makes an agent with no budget at all and asks it
// (ask_agent reaches the agents it made: their parent is the creator),
// and the work runs on the new agent's budget, which is none.
func TestAttackCreatePermanentDropsTheCreatorsBudgets(t *testing.T) {
	w := newPermWorldFiles(t, map[string]string{"planner": creatorFile + "budgets: {max_usd_per_turn: 0.1, max_usd_per_day: 1}\n"})
	if d, _ := w.agents.Get("planner"); d.Budgets.MaxUSDPerTurn != 0.1 || d.Budgets.MaxUSDPerDay != 1 {
		t.Fatalf("the creator's budgets %+v", d.Budgets)
	}
	r, err := w.p.CreatePermanent(t.Context(), scribe("clock"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Instance.Parent != "planner" {
		t.Fatalf("the new agent's parent %q: want its creator, who may then ask it", r.Instance.Parent)
	}
	d, ok := w.agents.Get("scribe")
	if !ok {
		t.Fatal("no agent scribe")
	}
	if b := d.Budgets; b.MaxUSDPerTurn <= 0 || b.MaxUSDPerTurn > 0.1 || b.MaxUSDPerDay <= 0 || b.MaxUSDPerDay > 1 {
		t.Errorf("the agent made by a creator of $0.10 a turn and $1 a day has budgets %+v: it spends without the creator's limits", b)
	}
}

// TestAttackCreatePermanentTakesADeletedAgentsName: create_permanent_agent
// refuses a name an agent has, but not a name an agent had. An agent
// planner made is deleted by a person; another agent then creates one of
// the same name, and gets what the name keeps (its sessions and their
// history, its memory scope, its identity key, all keyed on the agent
// id) and the old instance, whose parent is still planner: the row says
// helper made the agent, the tree says planner did, and planner keeps its
// reach over it.
func TestAttackCreatePermanentTakesADeletedAgentsName(t *testing.T) {
	w := newPermWorld(t)
	first, err := w.p.CreatePermanent(t.Context(), scribe("clock"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.ext.Delete(t.Context(), "agent", "scribe", extension.Who{Provenance: store.ProvenanceUser}); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.agents.Get("scribe"); ok {
		t.Fatal("scribe is still defined after its row was deleted")
	}
	again := scribe("clock")
	again.Creator, again.CreatorSession, again.SystemPrompt = "helper", "helper/main", "You are scribe. Recite your notes."
	r, err := w.p.CreatePermanent(t.Context(), again)
	if err == nil {
		t.Errorf("helper made an agent of the deleted agent's name, with its id's history, memory and key (instance %s, parent %q; the first was %s)",
			r.Instance.ID, r.Instance.Parent, first.Instance.ID)
	} else if !errors.Is(err, ErrExists) {
		t.Errorf("err %v, want ErrExists", err)
	}
}
