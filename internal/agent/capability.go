package agent

import (
	"slices"
)

// Capability is a named bundle an agent includes by name (its
// capabilities list): tool patterns its policy allows or asks for, the
// built-in tools, skills and MCP servers it is offered, and a fragment of
// system prompt. Capabilities come from extension rows of type
// capability.
type Capability struct {
	Description string          `json:"description,omitempty"`
	Tools       CapabilityTools `json:"tools,omitempty"`
	Skills      []string        `json:"skills,omitempty"`
	Servers     []string        `json:"servers,omitempty"`
	Prompt      string          `json:"prompt,omitempty"`
}

// CapabilityTools are the tool patterns a capability adds to an agent's
// policy.
type CapabilityTools struct {
	Allow   []string `json:"allow,omitempty"`
	Ask     []string `json:"ask,omitempty"`
	Builtin []string `json:"builtin,omitempty"`
}

// SetCapability installs (or replaces) a capability; the agents that
// include it change with it.
func (r *Registry) SetCapability(name string, c *Capability) {
	r.mu.Lock()
	if r.caps == nil {
		r.caps = map[string]*Capability{}
	}
	r.caps[name] = c
	changed := r.publish(true)
	r.mu.Unlock()
	r.notify(changed)
}

// RemoveCapability removes a capability.
func (r *Registry) RemoveCapability(name string) {
	r.mu.Lock()
	if _, ok := r.caps[name]; !ok {
		r.mu.Unlock()
		return
	}
	delete(r.caps, name)
	changed := r.publish(true)
	r.mu.Unlock()
	r.notify(changed)
}

// HasCapability reports whether a capability of that name is installed.
func (r *Registry) HasCapability(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.caps[name]
	return ok
}

// withCapabilities returns def with the capabilities it names merged in
// (a new definition; def is not changed), and the names it includes that
// are not installed. A list the agent leaves out (nil: everything) stays
// out.
func withCapabilities(def *Definition, caps map[string]*Capability) (*Definition, []string) {
	if len(def.Capabilities) == 0 {
		return def, nil
	}
	d := def.Clone()
	d.Tools.Builtin = slices.Clone(def.Tools.Builtin)
	d.Skills, d.Servers = slices.Clone(def.Skills), slices.Clone(def.Servers)
	var missing []string
	for _, name := range def.Capabilities {
		c, ok := caps[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		d.Tools.Grant = appendNew(slices.Clone(d.Tools.Grant), c.Tools.Allow)
		d.Tools.Ask = appendNew(d.Tools.Ask, c.Tools.Ask)
		if d.Tools.Builtin != nil {
			d.Tools.Builtin = appendNew(d.Tools.Builtin, c.Tools.Builtin)
		}
		if d.Skills != nil {
			d.Skills = appendNew(d.Skills, c.Skills)
		}
		if d.Servers != nil {
			d.Servers = appendNew(d.Servers, c.Servers)
		}
		if c.Prompt != "" {
			d.SystemPrompt += "\n\n" + c.Prompt
		}
	}
	return d, missing
}

func appendNew(to, from []string) []string {
	for _, s := range from {
		if !slices.Contains(to, s) {
			to = append(to, s)
		}
	}
	return to
}
