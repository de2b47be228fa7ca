package contexts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/store"
)

// maxKey is the longest instance key: a session key is at most 512 bytes
// with its agent.
const maxKey = 256

// Instance is a context instance: its type, args (normalized: {} when
// none) and session.
type Instance struct {
	Type  string          `json:"type"`
	Args  json.RawMessage `json:"args"`
	Agent string          `json:"agent"`
	// Key is the instance key (chat:alice); the session key is
	// ctx:<type>:<key>.
	Key     string `json:"key"`
	Session string `json:"session"` // <agent>/ctx:<type>:<key>
	// Budgets tighten the agent's for the instance's turns (the type's
	// budget); nil: none.
	Budgets *agent.Budgets `json:"-"`
	t       *ctype
	args    map[string]any
}

// Ref is the instance as a message's lifecycle options carry it.
func (in *Instance) Ref() *engine.ContextRef {
	return &engine.ContextRef{Type: in.Type, Args: in.Args}
}

// Resolve finds the instance of type typ named by args: ErrUnknown for
// a type that is not active, ErrBadArgs (with every problem) for args
// that do not match the args schema or make a key that cannot name a
// session.
func (c *Contexts) Resolve(typ string, args json.RawMessage) (*Instance, error) {
	t, err := c.get(typ)
	if err != nil {
		return nil, err
	}
	return t.instance(args)
}

func (t *ctype) instance(args json.RawMessage) (*Instance, error) {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	m, err := object(args)
	if err != nil {
		return nil, fmt.Errorf("%w for context %q: %v", ErrBadArgs, t.name, err)
	}
	if t.args != nil {
		if errs := t.args.Validate(m); len(errs) > 0 {
			msgs := make([]string, len(errs))
			for i, e := range errs {
				msgs[i] = e.String()
			}
			return nil, fmt.Errorf("%w for context %q: %s", ErrBadArgs, t.name, strings.Join(msgs, "; "))
		}
	}
	key, missing := fill(t.spec.Key, m)
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w for context %q: the key %q needs %v", ErrBadArgs, t.name, t.spec.Key, missing)
	}
	if why := badKey(key); why != "" {
		return nil, fmt.Errorf("%w for context %q: the key %q %s", ErrBadArgs, t.name, key, why)
	}
	norm, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w for context %q: %v", ErrBadArgs, t.name, err)
	}
	return &Instance{Type: t.name, Args: norm, Agent: t.spec.Agent, Key: key,
		Session: t.spec.Agent + "/" + keyPrefix + t.name + ":" + key, Budgets: t.budgets, t: t, args: m}, nil
}

// badKey says why key cannot be part of a session key, or "". A session
// key has no "/" and no control characters: args that would put one in
// are refused rather than changed, so that two args never share an
// instance.
func badKey(key string) string {
	switch {
	case key == "":
		return "is empty"
	case len(key) > maxKey:
		return fmt.Sprintf("is longer than %d bytes", maxKey)
	case !utf8.ValidString(key):
		return "is not UTF-8"
	case strings.Contains(key, "/"):
		return `has a "/", which no session key may have`
	}
	for _, r := range key {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return "has a control character"
		}
	}
	return ""
}

// typeOf returns the context type of a session key ctx:<type>:<key>, or
// false.
func typeOf(sessionKey string) (string, bool) {
	rest, ok := strings.CutPrefix(sessionKey, keyPrefix)
	if !ok {
		return "", false
	}
	typ, _, ok := strings.Cut(rest, ":")
	return typ, ok && typ != ""
}

// state returns the instance's state: its session's StateKey, or the
// initial state when the session or the key does not exist yet.
func (c *Contexts) state(ctx context.Context, in *Instance) (map[string]any, error) {
	agentID, key, _ := strings.Cut(in.Session, "/")
	s, err := c.st.SessionByAddress(ctx, agentID, key)
	if errors.Is(err, store.ErrNotFound) {
		return clone(in.t.initial), nil
	}
	if err != nil {
		return nil, fmt.Errorf("contexts: state of %s: %w", in.Session, err)
	}
	return c.sessionState(ctx, in.t, s.ID)
}

// sessionState returns the state stored in session id, or t's initial
// state.
func (c *Contexts) sessionState(ctx context.Context, t *ctype, session int64) (map[string]any, error) {
	wm, err := c.st.Working(ctx, session)
	if err != nil {
		return nil, fmt.Errorf("contexts: state: %w", err)
	}
	raw, ok := wm[StateKey]
	if !ok {
		return clone(t.initial), nil
	}
	m, err := object(raw)
	if err != nil {
		return nil, fmt.Errorf("contexts: state: %s: %w", StateKey, err)
	}
	return m, nil
}

// clone copies a decoded JSON object deeply enough that a merge into it
// leaves the original alone (a merge replaces top-level keys only).
func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Prepare is the engine.ContextSource: the view of ref's instance for a
// turn in session. It validates the args, checks that session is the
// instance's (a message cannot borrow another session's state by naming
// a context), loads the state and renders it, with the renders of the
// contexts the type uses (prepared in parallel).
func (c *Contexts) Prepare(ctx context.Context, d *agent.Definition, session string, ref *engine.ContextRef) (*engine.ContextView, error) {
	if ref == nil {
		return nil, fmt.Errorf("contexts: no context named")
	}
	in, err := c.Resolve(ref.Type, ref.Args)
	if err != nil {
		return nil, err
	}
	if session != in.Session || (d != nil && d.ID != in.Agent) {
		return nil, fmt.Errorf("%w: session %s is not the instance %s of context %q", ErrBadArgs, session, in.Session, in.Type)
	}
	s := in.t.spec
	v := &engine.ContextView{Type: in.Type, Key: in.Key, Instructions: s.Instructions,
		Actions: append(append([]string(nil), s.Actions...), UpdateTool), OnRun: s.OnRun, OnError: s.OnError}
	v.Renders, err = c.renders(ctx, in, map[string]bool{})
	if err != nil {
		return v, err
	}
	return v, nil
}

// renders returns in's render then those of the contexts its type uses,
// each with its own instance's state; seen holds the types on the path
// here, so that a cycle (which Check refuses) still ends.
func (c *Contexts) renders(ctx context.Context, in *Instance, seen map[string]bool) ([]engine.ContextRender, error) {
	state, err := c.state(ctx, in)
	if err != nil {
		return nil, err
	}
	vars := map[string]any{"args": in.args, "state": state}
	text, _ := fill(in.t.spec.Render, vars)
	out := []engine.ContextRender{{Type: in.Type, Key: in.Key, Text: text}}
	uses := in.t.spec.Use
	if len(uses) == 0 || seen[in.Type] {
		return out, nil
	}
	seen = with(seen, in.Type)
	parts := make([][]engine.ContextRender, len(uses))
	var wg sync.WaitGroup
	for i, u := range uses {
		wg.Go(func() {
			r, err := c.use(ctx, u, vars, seen)
			if err != nil {
				// A used context that cannot be prepared is left out of the
				// prompt, not the turn's end: the log says why.
				c.log.Warn("context: a used context left out", "context", in.Type, "key", in.Key, "use", u.Type, "err", err)
				return
			}
			parts[i] = r
		})
	}
	wg.Wait()
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// use prepares the renders of one used context, its args filled from
// vars.
func (c *Contexts) use(ctx context.Context, u Use, vars map[string]any, seen map[string]bool) ([]engine.ContextRender, error) {
	t, err := c.get(u.Type)
	if err != nil {
		return nil, err
	}
	args := map[string]any{}
	for k, tmpl := range u.Args {
		if ref, ok := whole(tmpl); ok {
			// "{{args.n}}" alone passes the value itself: a number stays a number.
			if v, ok := lookup(vars, strings.Split(ref, ".")); ok {
				args[k] = v
				continue
			}
		}
		v, missing := fill(tmpl, vars)
		if len(missing) > 0 {
			return nil, fmt.Errorf("%w: args.%s: no value for %v", ErrBadArgs, k, missing)
		}
		args[k] = v
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	in, err := t.instance(raw)
	if err != nil {
		return nil, err
	}
	return c.renders(ctx, in, seen)
}

// with returns a copy of seen with name added: goroutines of one level
// share the parent's map read-only.
func with(seen map[string]bool, name string) map[string]bool {
	out := make(map[string]bool, len(seen)+1)
	for k := range seen {
		out[k] = true
	}
	out[name] = true
	return out
}
