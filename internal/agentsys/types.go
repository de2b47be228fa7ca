package agentsys

import "agentd/internal/agent"

// behaviour is what an agent type does: the one table the System's
// decisions read.
type behaviour struct {
	instanced           bool // its instances are derived from a template (a permanent agent has a row but a definition of its own)
	hasParent           bool // it is started by an agent, its parent
	reports             bool // it reports its end to whoever started it
	paidByParent        bool // its parent's turn account and payer pay for it
	cancelledWithParent bool // stopping its parent, or the turn that started it, stops it
	closesWhenDone      bool // its session closes when its task is done
	ownScope            bool // its memory scope is its own, not its template's
}

// behaviours holds each agent type's behaviour (a test holds it to
// agent.Types()).
var behaviours = map[string]behaviour{
	agent.TypeUser:       {instanced: true},
	agent.TypeSwarm:      {instanced: true, ownScope: true},
	agent.TypePermanent:  {},
	agent.TypeBackground: {instanced: true, reports: true, closesWhenDone: true},
	agent.TypeSubagent: {instanced: true, hasParent: true, reports: true, paidByParent: true,
		cancelledWithParent: true, closesWhenDone: true},
	agent.TypeCron:   {},
	agent.TypeSystem: {},
}
