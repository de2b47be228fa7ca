// Package output is what an agent produces besides its text reply: typed
// outputs, each validated against its type's schema and handed to the
// type's handler — a message to a connector chat, an artifact, a memory,
// or an output extension row's tool. The model produces one by calling
// the output tool (engine.OutputTool) with {"type": T, "content": …}; the
// XML protocol turns an <output type="T"> element into the same call, so
// an output is a tool call in the log: durable before its handler runs,
// and its result tells the model what was done or why not.
//
// Which types an agent has: the built-in ones (message, artifact, memory)
// when its tools.builtin names the output tool, less those its tools.deny
// matches as "output.<type>"; and the output rows that name it. An agent
// with none is not offered the tool.
package output

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/schema"
	"agentd/internal/tool"
)

// ErrInvalid: an output's type is not one of the agent's, or its content
// does not match the type's schema; the error says which and why.
var ErrInvalid = errors.New("invalid output")

// Agents finds agent definitions by id.
type Agents interface {
	Get(id string) (*agent.Definition, bool)
}

// Tools finds and runs the tools handlers call (remember, artifact, an
// output row's handler tool).
type Tools interface {
	Get(name string) (tool.Tool, bool)
	Run(ctx context.Context, c *tool.Call, o *tool.RunOptions) tool.Outcome
}

// Notifier writes a connector's message to a chat into its outbox
// (connector.Manager).
type Notifier interface {
	Notify(ctx context.Context, integration, chat, text string) error
	// Agent returns the agent a connector speaks for; false: no such
	// connector.
	Agent(integration string) (string, bool)
}

// Options configure a Set.
type Options struct {
	// Notifier delivers message outputs; nil: a message output is an
	// error (no connectors here).
	Notifier Notifier
}

// Set holds the output types: the built-in ones and the output rows
// (its extension type's handler). It implements engine.OutputTypes.
// Its lock is a leaf.
type Set struct {
	agents  Agents
	tools   Tools
	o       Options
	builtin []*kind

	mu   sync.RWMutex
	rows map[string]*kind // the active output rows, by name
}

// kind is one output type with its handler.
type kind struct {
	name, description string
	agent             string // a row's agent; "" for a built-in type
	schema            json.RawMessage
	compiled          *schema.Schema
	handle            func(ctx context.Context, c *tool.Call, content json.RawMessage) (string, error)
}

// New returns the output types over agents and tools.
func New(agents Agents, tools Tools, o *Options) *Set {
	s := &Set{agents: agents, tools: tools, rows: map[string]*kind{}}
	if o != nil {
		s.o = *o
	}
	s.builtin = s.builtins()
	return s
}

// types returns d's output types: the built-in ones, then its rows by
// name.
func (s *Set) types(d *agent.Definition) []*kind {
	deny := tool.Policy{Deny: d.Tools.Deny}
	if deny.Decide(tool.Spec{Name: engine.OutputTool}).Verdict == tool.Deny {
		return nil
	}
	allowed := func(k *kind) bool {
		return deny.Decide(tool.Spec{Name: engine.OutputTool + "." + k.name}).Verdict != tool.Deny
	}
	var out []*kind
	if d.Tools.Builtin != nil && d.OffersBuiltin(engine.OutputTool) {
		for _, k := range s.builtin {
			if allowed(k) {
				out = append(out, k)
			}
		}
	}
	s.mu.RLock()
	var rows []*kind
	for _, k := range s.rows {
		if k.agent == d.ID && allowed(k) {
			rows = append(rows, k)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(rows, func(a, b *kind) int { return strings.Compare(a.name, b.name) })
	return append(out, rows...)
}

// OutputTypes lists the output types of d besides text (engine.OutputTypes).
func (s *Set) OutputTypes(d *agent.Definition) []engine.OutputType {
	ks := s.types(d)
	out := make([]engine.OutputType, len(ks))
	for i, k := range ks {
		out[i] = engine.OutputType{Name: k.name, Description: k.description, Schema: k.schema}
	}
	return out
}

// toolSchema is the output tool's schema as registered: any type and
// content; the engine offers each agent its own types' schemas, and the
// tool checks the content against the type's.
const toolSchema = `{
	"type": "object",
	"properties": {
		"type": {"type": "string", "description": "the output's type"},
		"content": {"description": "the output, as its type's schema says"}
	},
	"required": ["type", "content"],
	"additionalProperties": false
}`

// Tool returns the output tool. An agent without output types is not
// offered it. It is not idempotent: a call a crash interrupted is not run
// again (a message might go out twice); the model is told instead.
func (s *Set) Tool() tool.Tool {
	return tool.Func(tool.Spec{
		Name: engine.OutputTool,
		Description: "Produces an output of one of your output types besides your text reply: " +
			"it is checked against the type's schema and handed to the type's handler, and the result says what was done.",
		InputSchema: json.RawMessage(toolSchema),
		Serves: func(id string) bool {
			d, ok := s.agents.Get(id)
			return ok && len(s.types(d)) > 0
		},
	}, s.call)
}

// call runs one output: finds its type, validates the content and hands
// it to the type's handler.
func (s *Set) call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var a struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(c.Args, &a); err != nil {
		return tool.Result{}, fmt.Errorf("output: %w: %w", ErrInvalid, err)
	}
	d, ok := s.agents.Get(c.Agent)
	if !ok {
		return tool.Result{}, fmt.Errorf("output: no agent %q", c.Agent)
	}
	k, err := s.find(d, a.Type)
	if err != nil {
		return tool.Result{}, err
	}
	if err := k.check(a.Content); err != nil {
		return tool.Result{}, err
	}
	done, err := k.handle(ctx, c, a.Content)
	if err != nil {
		return tool.Result{}, fmt.Errorf("output %s: %w", k.name, err)
	}
	return tool.Result{Output: done}, nil
}

// find returns d's output type name.
func (s *Set) find(d *agent.Definition, name string) (*kind, error) {
	ks := s.types(d)
	names := make([]string, len(ks))
	for i, k := range ks {
		if k.name == name {
			return k, nil
		}
		names[i] = k.name
	}
	if name == "text" {
		return nil, fmt.Errorf("output: %w: a text output is your reply itself; the output tool takes the other types: %s", ErrInvalid, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("output: %w: unknown type %q; your output types: %s", ErrInvalid, name, strings.Join(names, ", "))
}

// check validates content against k's schema.
func (k *kind) check(content json.RawMessage) error {
	v, err := decode(content)
	if err != nil {
		return fmt.Errorf("output %s: %w: content: %w", k.name, ErrInvalid, err)
	}
	errs := k.compiled.Validate(v)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = schema.Under("/content", []schema.Error{e})[0].String()
	}
	return fmt.Errorf("output %s: %w: the content does not match the type's schema: %s", k.name, ErrInvalid, strings.Join(msgs, "; "))
}

// decode decodes JSON into the values schema.Validate takes.
func decode(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, errors.New("missing")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// sub is the call of tool name a handler makes for output call c: the same
// agent, session, turn and memory scope, an id derived from c's.
func sub(c *tool.Call, name string, args json.RawMessage) *tool.Call {
	return &tool.Call{ID: c.ID + "." + name, Name: name, Args: args, Agent: c.Agent, Session: c.Session,
		Turn: c.Turn, Hops: c.Hops, Scope: c.Scope, Skills: c.Skills}
}

// run runs tool name for c with args, returning its output, or its error
// output as an error.
func (s *Set) run(ctx context.Context, c *tool.Call, name string, args any) (string, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	out := s.tools.Run(ctx, sub(c, name, raw), nil)
	if out.Result.IsError {
		return "", errors.New(out.Result.Output)
	}
	return out.Result.Output, nil
}
