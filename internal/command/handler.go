package command

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"agentd/internal/agent"
	"agentd/internal/extension"
	"agentd/internal/prompt"
	"agentd/internal/schema"
	"agentd/internal/store"
)

// Agents finds agents by id, for the checks of a row that names one.
type Agents interface {
	Get(id string) (*agent.Definition, bool)
}

// Handler activates command rows in a Router, and checks them
// (extension.Checker).
type Handler struct {
	router *Router
	agents Agents
}

// NewHandler returns the handler of command rows, which keeps router's
// table; agents are looked up by the checks.
func NewHandler(router *Router, agents Agents) *Handler {
	return &Handler{router: router, agents: agents}
}

// Type is the command extension type, with its handler.
func Type(router *Router, agents Agents) extension.Type {
	return extension.Type{Name: TypeName, Summary: "a slash command (/standup [team]): typed arguments fill a prompt an agent answers",
		Schema: Schema(), Handler: NewHandler(router, agents), Actor: actors}
}

// actors is the command type's Actor: the agents a command makes answer
// (extension.AgentOf). A command without an agent is answered by the
// agent of whatever session it is typed in, any agent: an agent writes
// such a row only if it may change any row, and names itself otherwise,
// so that its prompt never makes a better-equipped agent work for it.
func actors(spec json.RawMessage) []string {
	out := extension.AgentOf(spec)
	if out[0] == "" {
		out[0] = "(the agent of any session it is typed in)"
	}
	return out
}

// Activate makes the row's command active, in place of its previous
// version; a spec that does not decode leaves the previous one.
func (h *Handler) Activate(_ context.Context, e *store.Extension) error {
	s, err := Decode(e.Spec)
	if err != nil {
		return err
	}
	if _, err := s.Budget.Budgets(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	h.router.set(e.Name, s)
	return nil
}

// Deactivate removes the command.
func (h *Handler) Deactivate(_ context.Context, name string) error {
	h.router.set(name, nil)
	return nil
}

// Reserved are the names of the chats' own commands, which no command
// row may take.
var Reserved = []string{"help", "compact", "reset", "quit", "exit"}

// Check checks what the schema cannot: the name is not reserved, the agent named exists, the
// template refers only to declared arguments, the arguments' names are
// unique, an enum has values and its default among them, a default fits
// its type, only the last argument takes the rest of the line, and the
// budget's wall time is a positive duration.
func (h *Handler) Check(_ context.Context, d *extension.Doc) []schema.Error {
	s, err := Decode(d.Spec)
	if err != nil {
		return []schema.Error{{Pointer: "/spec", Message: err.Error()}}
	}
	var errs []schema.Error
	add := func(ptr, format string, args ...any) {
		errs = append(errs, schema.Error{Pointer: "/spec" + ptr, Message: fmt.Sprintf(format, args...)})
	}
	if slices.Contains(Reserved, d.Name) {
		errs = append(errs, schema.Error{Pointer: "/name", Message: fmt.Sprintf("/%s is a chat's own command (reserved: %v)", d.Name, Reserved)})
	}
	if s.Agent != "" {
		if _, ok := h.agents.Get(s.Agent); !ok {
			add("/agent", "no agent %q", s.Agent)
		}
	}
	var names []string
	for i, a := range s.Arguments {
		ptr := "/arguments/" + strconv.Itoa(i)
		if slices.Contains(names, a.Name) {
			add(ptr+"/name", "a second argument named %q", a.Name)
		}
		names = append(names, a.Name)
		if a.kind() == Enum && len(a.Values) == 0 {
			add(ptr+"/values", "an enum argument needs its values")
		}
		if a.kind() != Enum && len(a.Values) > 0 {
			add(ptr+"/values", "only an enum argument has values")
		}
		if dt, ok := a.defaultText(); ok {
			if why := a.check(dt); why != "" {
				add(ptr+"/default", "the default: %s", why)
			}
			if a.Required {
				add(ptr+"/default", "a required argument has no default")
			}
		}
		if a.Rest && i != len(s.Arguments)-1 {
			add(ptr+"/rest", "only the last argument may take the rest of the line")
		}
	}
	for _, ref := range prompt.Refs(s.Prompt) {
		if !slices.Contains(names, ref) {
			add("/prompt", "{{%s}} is not an argument of the command (its arguments: %v)", ref, names)
		}
	}
	if _, err := s.Budget.Budgets(); err != nil {
		add("/budget/max_wall_time", "%v", err)
	}
	return errs
}
