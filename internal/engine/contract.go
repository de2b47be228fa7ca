package engine

import (
	"context"
	"encoding/json"

	"agentd/internal/agent"
)

// ContextRef names the context instance a message runs in (Daydreams'
// agent.send(context, args, input)): a context type and its args. It
// travels in the message's LifecycleOptions, so a recovered turn runs
// in the same instance.
type ContextRef struct {
	Type string          `json:"type"`
	Args json.RawMessage `json:"args,omitempty"`
}

// ContextSource prepares the context instance of a turn (package
// contexts): its instructions, its state rendered for the model and the
// renders of the contexts it uses, the actions offered only in it, and
// its hooks. session is the turn's session address ("agent/key").
type ContextSource interface {
	Prepare(ctx context.Context, d *agent.Definition, session string, ref *ContextRef) (*ContextView, error)
}

// ContextView is a prepared context instance.
type ContextView struct {
	Type, Key    string
	Instructions string
	// Renders are what the model is shown of the instance's state, its
	// own first, then each context it uses.
	Renders []ContextRender
	// Actions are tool names or globs offered in this context besides
	// those the agent's policy offers everywhere.
	Actions []string
	// OnRun are called after a run that ended well, OnError after one
	// that failed.
	OnRun, OnError []agent.BootstrapCall
}

// ContextRender is one context instance's render.
type ContextRender struct {
	Type, Key, Text string
}

// OutputTool is the tool an output of a type other than text is handed
// to (package output): natively the model calls it; in the XML protocol
// an <output type="T"> element becomes a call of it with
// {"type": T, "content": …}.
const OutputTool = "output"

// OutputTypes lists the output types an agent may produce besides text
// (package output); nil or an empty list: text only.
type OutputTypes interface {
	OutputTypes(d *agent.Definition) []OutputType
}

// OutputType is an output type offered to the model.
type OutputType struct {
	Name        string
	Description string
	Schema      json.RawMessage // of the output's content
}
