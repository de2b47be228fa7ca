// Package contexts is agentd's context types (Daydreams' contexts): a
// `context` extension row names an agent, the args an instance is named
// by (chat with {userId}), a key template that makes them an instance key
// (chat:{{userId}} → chat:alice), instructions, a persistent state with a
// schema and a render template that shows it to the model, actions
// offered only in the context, other contexts it uses, and hooks.
//
// An instance is a session of the context's agent, <agent>/ctx:<type>:<key>,
// so one run per instance at a time is the runtime's per-session rule, and
// its history is the session's log. The instance's state is a key of that
// session's working memory (StateKey, hidden from the working-memory
// section as agentd's own): the model changes it with the update_context
// tool, which validates every change against the state schema. An
// instance that never changed its state has the initial state, and
// nothing is written for it.
//
// The engine asks Prepare (engine.ContextSource) at a turn's start and
// each step for the instance's view: the messages that name a context
// carry an engine.ContextRef in their lifecycle options.
package contexts

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"agentd/internal/agent"
	"agentd/internal/command"
)

// TypeName is the extension type of contexts.
const TypeName = "context"

// StateKey is the working-memory key of an instance's state; keys
// beginning with "_" are agentd's own.
const StateKey = "_context_state"

// UpdateTool is the tool that changes the state of the calling session's
// context instance.
const UpdateTool = "update_context"

// keyPrefix begins the session key of every context instance.
const keyPrefix = "ctx:"

// Sentinel errors.
var (
	// ErrUnknown: no active context type of that name.
	ErrUnknown = errors.New("unknown context type")
	// ErrBadArgs: an instance's args do not match its type's args schema,
	// or make a key that cannot name a session. The error lists why.
	ErrBadArgs = errors.New("invalid context args")
	// ErrBadState: a state change does not match the state schema.
	ErrBadState = errors.New("invalid context state")
	// ErrInvalid: a context row's spec does not decode or its schemas
	// do not compile.
	ErrInvalid = errors.New("invalid context")
	// ErrNotContext: update_context was called outside a context
	// instance's session.
	ErrNotContext = errors.New("not a context session")
)

//go:embed schema.json
var schemaJSON []byte

// Schema is the JSON Schema of a context row's spec.
func Schema() json.RawMessage { return schemaJSON }

// Spec is a context row's spec.
type Spec struct {
	// Agent answers in the context's instances.
	Agent       string `json:"agent"`
	Description string `json:"description,omitempty"`
	// ArgsSchema is the JSON Schema of the args; nil: any object.
	ArgsSchema json.RawMessage `json:"args_schema,omitempty"`
	// Key is the instance key, a template over the args (package
	// prompt's references): "chat:{{userId}}".
	Key          string `json:"key"`
	Instructions string `json:"instructions,omitempty"`
	// StateSchema is the JSON Schema of the state; nil: any object.
	StateSchema json.RawMessage `json:"state_schema,omitempty"`
	// InitialState is the state before the first change; nil: {}.
	InitialState json.RawMessage `json:"initial_state,omitempty"`
	// Render is what the model is shown of an instance, a template over
	// {{args.x}} and {{state.x}} ({{state}} is the whole state as JSON).
	Render string `json:"render,omitempty"`
	// Actions are tool names or globs offered only in this context.
	Actions []string `json:"actions,omitempty"`
	// Use are other contexts whose renders this one includes.
	Use []Use `json:"use,omitempty"`
	// OnRun are called after a run that ended well, OnError after one
	// that failed.
	OnRun   []agent.BootstrapCall `json:"on_run,omitempty"`
	OnError []agent.BootstrapCall `json:"on_error,omitempty"`
	// Budget tightens the agent's budgets for the context's turns.
	Budget *command.Budget `json:"budget,omitempty"`
}

// Use names a context this one includes: its type, and its args as
// templates over this context's args and state.
type Use struct {
	Type string            `json:"type"`
	Args map[string]string `json:"args,omitempty"`
}

// Decode decodes a spec (already valid against Schema): unknown fields
// are refused.
func Decode(raw json.RawMessage) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &s, nil
}
