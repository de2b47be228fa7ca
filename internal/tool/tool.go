// Package tool defines what agentd calls a tool — a function a model can ask
// for — and the registry that validates arguments against each tool's JSON
// Schema, applies an agent's allow / deny / ask policy, and runs calls with a
// deadline and an output cap. Built-in tools live in tool/builtin.
package tool

import (
	"context"
	"encoding/json"

	"agentd/internal/model"
)

// Kinds of tool, as the Daemon lifecycle defines them.
const (
	KindModel       = "model"       // offered to the model for function calling
	KindContext     = "context"     // called before inference
	KindAction      = "action"      // called after generation with the output
	KindPostprocess = "postprocess" // called last
	KindServer      = "server"      // only on demand
)

// Spec describes a tool.
type Spec struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema of the arguments (an object schema).
	InputSchema json.RawMessage
	Kind        string // "" means KindModel

	// ReadOnly: the tool changes nothing. Idempotent: calling it twice with
	// the same arguments has the same effect as once. After a crash an
	// unfinished call is re-run only if one of these is true.
	ReadOnly   bool
	Idempotent bool
	// Risky marks tools that reach the network, run commands or write
	// files: they are off unless an agent's policy names them.
	Risky bool
	// Destructive marks tools that may destroy or overwrite something (an
	// MCP tool's destructiveHint): unless the policy's Allow names them,
	// each call needs a person's approval.
	Destructive bool
	// AskFirst marks tools that need a person's approval for each call
	// unless the policy's Allow names them exactly (a glob is not enough).
	AskFirst bool
	// OptIn marks a built-in tool offered only to an agent whose
	// tools.builtin is written and names it: the tools that act on a
	// machine (files, commands, the web) are not among "every built-in
	// tool" an agent file that leaves tools.builtin out is offered.
	OptIn bool
	// Reach says, in the deny reason of a Risky tool the policy does not
	// allow, what the tool reaches ("starts and messages other agents");
	// "" keeps the general wording.
	Reach string

	// Server is the MCP server (or skill) the tool comes from; "" for a
	// built-in tool. An agent sees a server's tools only if it uses the
	// server.
	Server string
	// Scope, when set, lists the agents that may see the tool (the MCP
	// servers an agent file defines); nil means every agent.
	Scope []string
	// Skills, when set, are the skills that bundle the tool's server: only
	// a session that loaded one of them sees the tool.
	Skills []string
	// Serves, when set, says whether an agent is offered the tool at all,
	// whatever its policy: search_all serves the agents whose
	// memory.search_all is on, skill those that may load a skill. Nil
	// serves every agent.
	Serves func(agentID string) bool
}

// Call is one invocation.
type Call struct {
	ID      string          // the tool_call id, also an idempotency key for the tool
	Name    string          // the tool's name
	Args    json.RawMessage // validated JSON object
	Agent   string          // the calling agent's id
	Session string          // the calling session's address
	// Turn is the calling turn's id (its inbox item's); Hops the hops of
	// the input that turn serves (0 for a person's): a message the tool
	// sends to another agent carries Hops+1.
	Turn int64
	Hops int
	// Scope is the long-term memory scope the calling agent reads and
	// writes; "" means Agent.
	Scope string
	// Approval makes the agent's approval of the message the call serves,
	// bound to the call, which tool servers receive; nil: none.
	Approval Approver
	// Skills are the skills the calling session has loaded: the tools
	// over MCP servers' resources and prompts reach a skill's server only
	// for them.
	Skills []string
	// MaxOutputBytes is the cap Registry.Run puts on the output: a tool
	// that reads a large output stops there and reports the rest as
	// Result.Omitted rather than hold it in memory.
	MaxOutputBytes int
}

// Approver signs the approvals calls carry to tool servers (see package
// agentd/approval): each is for one call alone, so whoever sees it cannot
// present it with another.
type Approver interface {
	// Approve returns the approval object (JSON) for the call of tool, the
	// server's own name for it, on the server audience (its URL, or its
	// name for a stdio server), with args exactly as they are sent.
	Approve(audience, tool string, args json.RawMessage) (json.RawMessage, error)
}

// Result is what a call returns to the model.
type Result struct {
	Output  string
	IsError bool
	// Images are images for the model besides Output (a screenshot, a
	// chart); Output should say they are there, for models that do not
	// see images. Registry.Run passes on those model.CheckImage accepts,
	// at most model.MaxImages, and notes in Output each one it drops.
	Images []model.Image
	// Omitted is how many bytes of output the tool left out as it read it
	// (it keeps no more than Call.MaxOutputBytes, or its server's answer
	// was cut as it arrived). Registry.Run counts them in its truncation
	// note and marks the outcome Truncated.
	Omitted int64
}

// Tool is a callable tool. A returned error becomes an error result the
// model sees; it never ends the turn.
type Tool interface {
	Spec() Spec
	Call(ctx context.Context, c *Call) (Result, error)
}
