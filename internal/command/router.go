package command

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/prompt"
)

// Router holds the active commands and says what a chat line means. It
// is safe for concurrent use; the Handler changes its table.
type Router struct {
	mu   sync.RWMutex
	cmds map[string]*Spec // by name, without the "/"
}

// NewRouter returns a Router with no commands.
func NewRouter() *Router { return &Router{cmds: map[string]*Spec{}} }

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
	// Command is the command's name, without the "/".
	Command string
	// Session is the address the text goes to: the caller's session, or,
	// for a command whose agent is not the session's, that agent's
	// session keyed by the caller's ("<agent>/<caller agent>:<caller key>").
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
// asks for. ok is false when the line is not a command: it does not
// start with "/" and an active command's name followed by a space or the
// end. A command whose arguments do not parse is an ErrUsage error; no
// text is to be submitted then.
func (r *Router) Route(line, addr string) (rt Route, ok bool, err error) {
	rest, found := strings.CutPrefix(line, "/")
	if !found {
		return Route{}, false, nil
	}
	name, args := cutWord(rest)
	r.mu.RLock()
	spec := r.cmds[name]
	r.mu.RUnlock()
	if spec == nil {
		return Route{}, false, nil
	}
	vals, err := Args(name, spec, args)
	if err != nil {
		return Route{}, true, err
	}
	b, err := spec.Budget.Budgets()
	if err != nil {
		return Route{}, true, fmt.Errorf("%w: /%s: budget: %w", ErrInvalid, name, err)
	}
	rt = Route{Command: name, Session: addr, Silent: spec.Silent, Budgets: b,
		Text: prompt.Fill(spec.Prompt, func(n string) (string, bool) { v, ok := vals[n]; return v, ok })}
	if caller, key, _ := strings.Cut(addr, "/"); spec.Agent != "" && spec.Agent != caller {
		rt.Session = spec.Agent + "/" + caller + ":" + key
	}
	return rt, true, nil
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
