// Package control is the extension type control: typed switches (bool,
// enum, number, text) people flip in the console and agents and policies
// read — pause an agent, quiet hours, a model tier, a kill switch for a
// tool. A control's value is its row's spec; what agentd itself does with
// one is its effect (pause_agent, disable_tools); the node that writes a
// change logs it as a control event (Change) in the session
// <agent>/controls of the agent it applies to.
package control

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"sync"

	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

// Effects.
const (
	EffectNone         = "none"
	EffectPauseAgent   = "pause_agent"
	EffectDisableTools = "disable_tools"
)

//go:embed schema.json
var specSchema json.RawMessage

// Spec is a control row's spec.
type Spec struct {
	Kind        string          `json:"kind"`
	Value       json.RawMessage `json:"value"`
	Description string          `json:"description,omitempty"`
	Options     []string        `json:"options,omitempty"`
	Min         *float64        `json:"min,omitempty"`
	Max         *float64        `json:"max,omitempty"`
	Agent       string          `json:"agent,omitempty"`
	Effect      string          `json:"effect,omitempty"`
	Tools       []string        `json:"tools,omitempty"`
}

// On reports whether a bool control is on.
func (s *Spec) On() bool { return s.Kind == "bool" && bytes.Equal(s.Value, []byte("true")) }

// Agents is how controls look agents up.
type Agents interface {
	Has(id string) bool
}

// Options are what controls act on; each may be nil.
type Options struct {
	// Agents checks the agent a control names exists.
	Agents Agents
	// Paused is told when an agent is paused or resumed.
	Paused func(agent string, paused bool)
	// Deny denies tools to every agent under a control's name (nil globs:
	// lifted).
	Deny func(source string, globs []string)
}

// Controls are the active controls.
type Controls struct {
	o Options

	mu   sync.Mutex
	rows map[string]*Spec
}

// New returns the controls.
func New(o *Options) *Controls {
	if o == nil {
		o = &Options{}
	}
	return &Controls{o: *o, rows: map[string]*Spec{}}
}

// Type is the extension type control.
func (c *Controls) Type() extension.Type {
	return extension.Type{Name: "control", Summary: "a typed switch (bool, enum, number, text) people flip and agents and policies read",
		Schema: specSchema, Handler: c, Shared: true}
}

// Get returns a control's spec, if it is active.
func (c *Controls) Get(name string) (Spec, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.rows[name]
	if !ok {
		return Spec{}, false
	}
	return *s, true
}

// Paused reports whether an active pause_agent control that is on names
// agent.
func (c *Controls) Paused(agent string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.rows {
		if s.Effect == EffectPauseAgent && s.Agent == agent && s.On() {
			return true
		}
	}
	return false
}

func decode(spec json.RawMessage) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	return &s, nil
}

// Check checks what the schema cannot: an enum's value among its options,
// a number within its bounds, the agent and the tool patterns.
func (c *Controls) Check(_ context.Context, d *extension.Doc) []schema.Error {
	s, err := decode(d.Spec)
	if err != nil {
		return []schema.Error{{Pointer: "/spec", Message: err.Error()}}
	}
	var errs []schema.Error
	bad := func(p, format string, args ...any) {
		errs = append(errs, schema.Error{Pointer: "/spec/" + p, Message: fmt.Sprintf(format, args...)})
	}
	switch s.Kind {
	case "enum":
		var v string
		_ = json.Unmarshal(s.Value, &v)
		if !contains(s.Options, v) {
			bad("value", "must be one of its options %q", s.Options)
		}
	case "number":
		var v float64
		_ = json.Unmarshal(s.Value, &v)
		if s.Min != nil && v < *s.Min {
			bad("value", "must be at least %v", *s.Min)
		}
		if s.Max != nil && v > *s.Max {
			bad("value", "must be at most %v", *s.Max)
		}
	}
	if s.Agent != "" && c.o.Agents != nil && !c.o.Agents.Has(s.Agent) {
		bad("agent", "no agent %q exists", s.Agent)
	}
	for i, g := range s.Tools {
		if _, err := path.Match(g, ""); err != nil {
			bad(fmt.Sprintf("tools/%d", i), "is not a valid glob: %v", err)
		}
	}
	return errs
}

// Activate makes the control's value take effect.
func (c *Controls) Activate(_ context.Context, e *store.Extension) error {
	s, err := decode(e.Spec)
	if err != nil {
		return err
	}
	c.mu.Lock()
	prev := c.rows[e.Name]
	c.rows[e.Name] = s
	c.mu.Unlock()
	c.apply(e.Name, prev, s)
	return nil
}

// Change says what a write of a control row changed, for its control
// event: the control's agent and the event's data; ok is false when no
// event is due (its value did not change, it names no agent, or either
// row is not a control's).
func Change(old, cur *store.Extension) (agent string, d event.ControlData, ok bool) {
	if cur.Type != "control" {
		return "", d, false
	}
	s, err := decode(cur.Spec)
	if err != nil || s.Agent == "" {
		return "", d, false
	}
	d = event.ControlData{Name: cur.Name, Value: s.Value, Effect: s.Effect, Version: cur.Version, By: cur.UpdatedBy}
	if old != nil {
		if p, err := decode(old.Spec); err == nil {
			if bytes.Equal(p.Value, s.Value) && old.Enabled == cur.Enabled {
				return "", d, false
			}
			d.Previous = p.Value
		}
	}
	return s.Agent, d, true
}

// Deactivate lifts the control's effect.
func (c *Controls) Deactivate(_ context.Context, name string) error {
	c.mu.Lock()
	prev := c.rows[name]
	delete(c.rows, name)
	c.mu.Unlock()
	c.apply(name, prev, nil)
	return nil
}

// apply moves the effects from prev to cur (either may be nil).
func (c *Controls) apply(name string, prev, cur *Spec) {
	if c.o.Deny != nil {
		switch {
		case cur != nil && cur.Effect == EffectDisableTools && cur.On():
			c.o.Deny("control:"+name, cur.Tools)
		case prev != nil && prev.Effect == EffectDisableTools:
			c.o.Deny("control:"+name, nil)
		}
	}
	if c.o.Paused != nil {
		// Tell each agent the control applied to, before or now, once.
		var told string
		for _, s := range []*Spec{prev, cur} {
			if s != nil && s.Effect == EffectPauseAgent && s.Agent != told {
				told = s.Agent
				c.o.Paused(s.Agent, c.Paused(s.Agent))
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
