package command

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/prompt"
)

// Router holds the active commands and the agents a line may address,
// and says what a chat line means. It is safe for concurrent use; the
// Handler changes its table.
type Router struct {
	agents Directory // nil: no agents to address
	mu     sync.RWMutex
	cmds   map[string]*Spec // by name, without the "/"
}

// Directory is the agents a line may address with @ or #.
type Directory interface {
	Get(id string) (*agent.Definition, bool)
	List() []*agent.Definition
}

// Disabler is the optional ability of a Directory to know the agents that
// exist but are disabled (their row is): "@id" addresses such an agent
// too, and the post to its session is refused there as a direct one is,
// rather than sending the line to the caller's agent as prose.
type Disabler interface {
	Disabled(ctx context.Context, id string) bool
}

// NewRouter returns a Router with no commands that addresses no agents
// (NewRouterWith addresses some).
func NewRouter() *Router { return NewRouterWith(nil) }

// NewRouterWith returns a Router with no commands, which addresses agents
// (@id, #tag) among agents; nil addresses none.
func NewRouterWith(agents Directory) *Router {
	return &Router{agents: agents, cmds: map[string]*Spec{}}
}

// set makes spec the command name's; nil removes it.
func (r *Router) set(name string, spec *Spec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if spec == nil {
		delete(r.cmds, name)
		return
	}
	r.cmds[name] = spec
}

// Route is what a command line asks for: a text to submit to a session.
type Route struct {
	// Command is the command's name, without the "/"; "" for a line
	// addressed to an agent.
	Command string
	// Agent is the agent a line addressed with @ or #; "" for a command.
	Agent string
	// Session is the address the text goes to: the caller's session, or,
	// for a command whose agent or a line addressed to an agent that is
	// not the session's, that agent's session keyed by the caller's
	// ("<agent>/<caller agent>:<caller key>").
	Session string
	// Text is the prompt, filled.
	Text string
	// Silent: the text is logged as a system message for the session's
	// next turn, and no turn starts.
	Silent bool
	// Budgets tighten the agent's for the turn; nil for none.
	Budgets *agent.Budgets
}

// Options returns the lifecycle options of the route's input: opts (a
// message's own, JSON; may be nil) with the route's budgets.
func (rt *Route) Options(opts json.RawMessage) (json.RawMessage, error) {
	if rt.Budgets == nil {
		return opts, nil
	}
	o, err := engine.ParseLifecycleOptions(opts)
	if err != nil {
		return nil, err
	}
	o.Budgets = new(engine.Tighter(*rt.Budgets, o.Budgets))
	return json.Marshal(o)
}

// Route says what line, typed in the session at addr ("<agent>/<key>"),
// asks for (see Prefixes). ok is false when the line is not routed: it
// does not start with a prefix followed by an active command's name, an
// agent's id or an agent's tag and a space or the end. A command whose
// arguments do not parse, an agent addressed with nothing to say or a tag
// several agents share is an ErrUsage error; no text is to be submitted
// then.
func (r *Router) Route(ctx context.Context, line, addr string) (rt Route, ok bool, err error) {
	p, name, rest, ok := cutLine(line)
	if !ok {
		return Route{}, false, nil
	}
	switch p {
	case '@':
		if !r.known(ctx, name) {
			return Route{}, false, nil
		}
		return address(name, line[:1+len(name)], rest, addr)
	case '#':
		return r.tagged(name, rest, addr)
	}
	r.mu.RLock()
	spec := r.cmds[name]
	r.mu.RUnlock()
	if spec == nil {
		return Route{}, false, nil
	}
	said := line[:1+len(name)]
	vals, err := args(said, spec, rest)
	if err != nil {
		return Route{}, true, err
	}
	b, err := spec.Budget.Budgets()
	if err != nil {
		return Route{}, true, fmt.Errorf("%w: %s: budget: %w", ErrInvalid, said, err)
	}
	rt = Route{Command: name, Session: addr, Silent: spec.Silent, Budgets: b,
		Text: prompt.Fill(spec.Prompt, func(n string) (string, bool) { v, ok := vals[n]; return v, ok })}
	if spec.Agent != "" {
		rt.Session = sessionOf(spec.Agent, addr)
	}
	return rt, true, nil
}

// sessionOf is the session agent id answers in for a line typed in the
// session at addr: that session when id is its agent, else id's own
// session keyed by the caller's ("<id>/<caller agent>:<caller key>"), so
// that the caller's conversation is not handed to another agent and a
// second line continues the first.
func sessionOf(id, addr string) string {
	caller, key, _ := strings.Cut(addr, "/")
	if id == caller {
		return addr
	}
	return id + "/" + caller + ":" + key
}

// Info is a command as /help lists it.
type Info struct {
	Name        string `json:"name"`  // without the "/"
	Usage       string `json:"usage"` // "/standup <team> [days]"
	Description string `json:"description,omitempty"`
	Agent       string `json:"agent,omitempty"`
}

// List returns the active commands, by name.
func (r *Router) List() []Info {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Info, 0, len(r.cmds))
	for name, s := range r.cmds {
		out = append(out, Info{Name: name, Usage: Usage(name, s), Description: s.Description, Agent: s.Agent})
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
	return out
}
