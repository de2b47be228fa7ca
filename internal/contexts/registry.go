package contexts

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

// Store is what contexts need of agentd's store: a session's working
// memory, where an instance's state lives.
type Store interface {
	SessionByAddress(ctx context.Context, agent, key string) (store.Session, error)
	Working(ctx context.Context, session int64) (map[string]json.RawMessage, error)
	SetWorking(ctx context.Context, session int64, key string, value json.RawMessage) (event.Event, error)
}

// Agents finds agents by id, for the checks of a row that names one.
type Agents interface {
	Get(id string) (*agent.Definition, bool)
}

// Options configure Contexts. The zero value (or nil) gives the defaults.
type Options struct {
	// Logger receives the failures of a used context's preparation,
	// which leave its render out; nil discards.
	Logger *slog.Logger
}

// Contexts holds the active context types; it is their extension
// handler (Activate, Deactivate, Check), the engine's ContextSource
// (Prepare) and the update_context tool's owner. It is safe for
// concurrent use.
type Contexts struct {
	st     Store
	agents Agents
	log    *slog.Logger
	mu     sync.RWMutex
	types  map[string]*ctype // by row name
	// smu serializes update_context's read-modify-write of a state: two
	// calls of one step run in parallel.
	smu sync.Mutex
}

// New returns Contexts with no types, over st; agents are looked up by
// the checks.
func New(st Store, agents Agents, o *Options) *Contexts {
	c := &Contexts{st: st, agents: agents, types: map[string]*ctype{}}
	if o != nil {
		c.log = o.Logger
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Type is the context extension type, with c as its handler. A row makes
// its agent act (extension.AgentOf).
func (c *Contexts) Type() extension.Type {
	return extension.Type{Name: TypeName, Summary: "a context type (chat with {userId}): an instance per args with a persistent state its agent sees and changes",
		Schema: Schema(), Handler: c, Actor: extension.AgentOf}
}

// Activate makes the row's context type active, in place of its
// previous version; a spec that does not decode or compile leaves the
// previous one.
func (c *Contexts) Activate(_ context.Context, e *store.Extension) error {
	s, err := Decode(e.Spec)
	if err != nil {
		return err
	}
	t, errs := compile(e.Name, s)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, errs[0])
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.types[e.Name] = t
	return nil
}

// Deactivate removes the context type.
func (c *Contexts) Deactivate(_ context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.types, name)
	return nil
}

// Check checks what the schema cannot: the agent exists, the schemas
// compile and the initial state matches its schema, the key refers only
// to args and the render and the uses' args only to args and state
// properties, each used type exists and no type uses itself through
// others.
func (c *Contexts) Check(_ context.Context, d *extension.Doc) []schema.Error {
	s, err := Decode(d.Spec)
	if err != nil {
		return []schema.Error{{Pointer: "/spec", Message: err.Error()}}
	}
	t, errs := compile(d.Name, s)
	add := func(ptr, format string, args ...any) {
		errs = append(errs, schema.Error{Pointer: "/spec" + ptr, Message: fmt.Sprintf(format, args...)})
	}
	if _, ok := c.agents.Get(s.Agent); !ok {
		add("/agent", "no agent %q", s.Agent)
	}
	t.checkRefs(add)
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, u := range s.Use {
		if _, ok := c.types[u.Type]; !ok && u.Type != d.Name {
			add(fmt.Sprintf("/use/%d/type", i), "no context type %q", u.Type)
		} else if path := c.cycle(d.Name, s, u.Type); path != nil {
			add(fmt.Sprintf("/use/%d/type", i), "a cycle: %v", path)
		}
	}
	return errs
}

// cycle returns the path by which from reaches name through uses, with
// name's spec taken as s, or nil. Called with c.mu held.
func (c *Contexts) cycle(name string, s *Spec, from string) []string {
	uses := func(n string) []Use {
		if n == name {
			return s.Use
		}
		if t, ok := c.types[n]; ok {
			return t.spec.Use
		}
		return nil
	}
	var walk func(n string, path []string) []string
	walk = func(n string, path []string) []string {
		path = append(path, n)
		if n == name {
			return path
		}
		if slices.Contains(path[:len(path)-1], n) {
			return nil // another cycle, not through name: its own row's check says so
		}
		for _, u := range uses(n) {
			if p := walk(u.Type, path); p != nil {
				return p
			}
		}
		return nil
	}
	return walk(from, []string{name})
}

// get returns the active type name.
func (c *Contexts) get(name string) (*ctype, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.types[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	return t, nil
}

// Summary is what List says of a type.
type Summary struct {
	Name        string `json:"name"`
	Agent       string `json:"agent"`
	Key         string `json:"key"`
	Description string `json:"description,omitempty"`
}

// List returns the active types, by name.
func (c *Contexts) List() []Summary {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Summary, 0, len(c.types))
	for _, n := range sortedKeys(c.types) {
		t := c.types[n]
		out = append(out, Summary{Name: n, Agent: t.spec.Agent, Key: t.spec.Key, Description: t.spec.Description})
	}
	return out
}
