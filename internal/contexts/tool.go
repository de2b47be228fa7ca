package contexts

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"agentd/internal/tool"
)

const updateSchema = `{"type": "object", "properties": {
	"set": {"type": "object", "description": "Keys to set in the context's state; the other keys stay."},
	"state": {"type": "object", "description": "The whole new state, replacing the old."}
	}, "additionalProperties": false, "minProperties": 1, "maxProperties": 1}`

// Tool is update_context: it changes the state of the calling session's
// context instance — {set: {…}} merges keys, {state: {…}} replaces it —
// validates the result against the type's state schema, stores it and
// returns it. An invalid change is an error the model sees, and changes
// nothing. The tool is offered only where a context's view names it (it
// is OptIn, so an agent's policy alone does not offer it), and refuses
// outside a context's session.
func (c *Contexts) Tool() tool.Tool {
	return tool.Func(tool.Spec{Name: UpdateTool,
		Description: "Changes the state of this context: {\"set\": {…}} sets some keys, {\"state\": {…}} replaces the whole state. Returns the new state.",
		InputSchema: json.RawMessage(updateSchema), Idempotent: true, OptIn: true}, c.update)
}

func (c *Contexts) update(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var a struct {
		Set   map[string]json.RawMessage `json:"set"`
		State json.RawMessage            `json:"state"`
	}
	if err := json.Unmarshal(call.Args, &a); err != nil || (a.Set == nil) == (a.State == nil) {
		return tool.Result{}, fmt.Errorf("%s: %w: give either set or state, an object", UpdateTool, ErrBadState)
	}
	agentID, key, _ := strings.Cut(call.Session, "/")
	typ, ok := typeOf(key)
	if !ok || (call.Agent != "" && call.Agent != agentID) {
		return tool.Result{}, fmt.Errorf("%s: %w (session %q)", UpdateTool, ErrNotContext, call.Session)
	}
	t, err := c.get(typ)
	if err != nil {
		return tool.Result{}, fmt.Errorf("%s: %w", UpdateTool, err)
	}
	if t.spec.Agent != agentID {
		return tool.Result{}, fmt.Errorf("%s: %w: context %q is agent %q's", UpdateTool, ErrNotContext, typ, t.spec.Agent)
	}
	s, err := c.st.SessionByAddress(ctx, agentID, key)
	if err != nil {
		return tool.Result{}, fmt.Errorf("%s: %w", UpdateTool, err)
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	state, err := c.sessionState(ctx, t, s.ID)
	if err != nil {
		return tool.Result{}, fmt.Errorf("%s: %w", UpdateTool, err)
	}
	if a.State != nil {
		if state, err = object(a.State); err != nil {
			return tool.Result{}, fmt.Errorf("%s: %w: %v", UpdateTool, ErrBadState, err)
		}
	}
	for k, raw := range a.Set {
		v, err := value(raw)
		if err != nil {
			return tool.Result{}, fmt.Errorf("%s: %w: set.%s: %v", UpdateTool, ErrBadState, k, err)
		}
		state[k] = v
	}
	if t.state != nil {
		if errs := t.state.Validate(state); len(errs) > 0 {
			msgs := make([]string, len(errs))
			for i, e := range errs {
				msgs[i] = e.String()
			}
			return tool.Result{}, fmt.Errorf("%s: %w (nothing changed): %s", UpdateTool, ErrBadState, strings.Join(msgs, "; "))
		}
	}
	out, err := json.Marshal(state)
	if err != nil {
		return tool.Result{}, fmt.Errorf("%s: %w", UpdateTool, err)
	}
	if _, err := c.st.SetWorking(ctx, s.ID, StateKey, out); err != nil {
		return tool.Result{}, fmt.Errorf("%s: %w", UpdateTool, err)
	}
	return tool.Result{Output: string(out)}, nil
}

// value decodes one JSON value, numbers as json.Number.
func value(raw json.RawMessage) (any, error) {
	m, err := object(json.RawMessage(`{"v":` + string(raw) + `}`))
	if err != nil {
		return nil, err
	}
	return m["v"], nil
}
