package event

// Agent event operations (AgentData.Op).
const (
	AgentStarted = "started" // first in a dynamic agent's own log: who started it, and why
	AgentCreated = "created" // first in a permanent agent's log made by another agent
	AgentStopped = "stopped" // in a stopped agent's log: by whom, and why
	AgentGuard   = "guard"   // in the log of an agent a guard refused: which guard, its limit and the value
)

// AgentOps returns the operations of an agent event.
func AgentOps() []string { return []string{AgentStarted, AgentCreated, AgentStopped, AgentGuard} }

// AgentData is the payload of an Agent event: a dynamic agent's life
// (started, created, stopped) in its own log, or a guard's refusal in
// the log of the agent that tried to pass it.
type AgentData struct {
	Op     string `json:"op"`               // AgentStarted, AgentCreated, AgentStopped or AgentGuard
	ID     string `json:"id,omitempty"`     // the dynamic agent's id (started, created, stopped)
	Type   string `json:"type,omitempty"`   // its type: user, swarm, permanent, background, subagent
	Parent string `json:"parent,omitempty"` // the agent that started or created it ("" none)
	// Guard names the limit a guard op refused at (max_hops, max_depth,
	// max_children, max_live), Limit its value and Value what the refused
	// action would have reached.
	Guard string `json:"guard,omitempty"`
	Limit int    `json:"limit,omitempty"`
	Value int    `json:"value,omitempty"`
	// Target is the agent a refused message or start was meant for.
	Target string `json:"target,omitempty"`
	// Reason says why: a stop's reason, or a guard's refusal in words.
	Reason string `json:"reason,omitempty"`
}
