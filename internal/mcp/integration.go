package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"agentd/internal/agent"
	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

// SourceIntegration is the Def.Source of servers defined by integration
// rows.
const SourceIntegration = "integration"

// Integrations are the MCP servers defined by extension rows of type
// integration (kind mcp): servers people or agents add at run time. They
// are defined like the configuration's servers (the manager connects them
// in the background and reconnects them), through sync, which hands every
// definition to Manager.Set.
type Integrations struct {
	sync func(ctx context.Context)

	mu   sync.Mutex
	defs map[string]Def
}

// NewIntegrations returns the integrations; sync is called after they
// changed.
func NewIntegrations(sync func(ctx context.Context)) *Integrations {
	return &Integrations{sync: sync, defs: map[string]Def{}}
}

// Defs returns the servers the enabled integration rows define, by name.
func (i *Integrations) Defs() []Def {
	i.mu.Lock()
	defer i.mu.Unlock()
	out := make([]Def, 0, len(i.defs))
	for _, name := range slices.Sorted(maps.Keys(i.defs)) {
		out = append(out, i.defs[name])
	}
	return out
}

// integrationSpec is an integration row's spec.
type integrationSpec struct {
	Kind        string           `json:"kind"`
	Description string           `json:"description,omitempty"`
	MCP         *agent.MCPServer `json:"mcp,omitempty"`
	// Agents are the agents that see the server's tools; null: every
	// agent that uses it (agents' servers list).
	Agents []string `json:"agents"`
}

// IntegrationSpec is the spec of an integration row defining server cfg,
// for agents (nil: node-wide).
func IntegrationSpec(cfg agent.MCPServer, agents []string) json.RawMessage {
	b, _ := json.Marshal(integrationSpec{Kind: "mcp", MCP: &cfg, Agents: agents})
	return b
}

// Type is the extension type integration.
func (i *Integrations) Type() extension.Type {
	return extension.Type{Name: "integration", Summary: "a connection to an outside service with secret references (an MCP server)",
		Schema: integrationSchema(), Handler: i,
		Machine: func(json.RawMessage) bool { return true }} // it starts a server, or reaches one
}

func integrationSchema() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "kind": {"enum": ["mcp"], "description": "mcp: an MCP server (a chat platform's bot is an integration row that names a platform instead)"},
    "description": {"type": "string", "maxLength": 1000},
    "mcp": %s,
    "agents": {"type": ["array", "null"], "items": {"type": "string"}, "description": "the agents that see its tools; null: every agent that uses it"}
  },
  "required": ["kind", "mcp"],
  "additionalProperties": false
}`, agent.MCPServerSchema()))
}

func (i *Integrations) def(name string, spec json.RawMessage) (Def, error) {
	var s integrationSpec
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Def{}, fmt.Errorf("mcp: integration %s: %w", name, err)
	}
	if s.MCP == nil {
		return Def{}, fmt.Errorf("mcp: integration %s: %w: no mcp server", name, ErrInvalid)
	}
	d := Def{Name: name, Config: *s.MCP, Agents: s.Agents, Source: SourceIntegration}
	return d, validateDef(&d)
}

// Check checks the server's definition as the manager will.
func (i *Integrations) Check(_ context.Context, d *extension.Doc) []schema.Error {
	if _, err := i.def(d.Name, d.Spec); err != nil {
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, ErrInvalid.Error()+": "); ok {
			msg = after
		}
		return []schema.Error{{Pointer: "/spec/mcp", Message: msg}}
	}
	return nil
}

// Activate defines (or redefines) the row's server; the manager connects it.
func (i *Integrations) Activate(ctx context.Context, e *store.Extension) error {
	d, err := i.def(e.Name, e.Spec)
	if err != nil {
		return err
	}
	i.mu.Lock()
	i.defs[e.Name] = d
	i.mu.Unlock()
	i.sync(ctx)
	return nil
}

// Deactivate removes the row's server.
func (i *Integrations) Deactivate(ctx context.Context, name string) error {
	i.mu.Lock()
	delete(i.defs, name)
	i.mu.Unlock()
	i.sync(ctx)
	return nil
}

// LoadState reads the servers a state file (the former mcp-servers.json)
// holds, to migrate them to integration rows.
func LoadState(path string) ([]Def, error) { return loadState(path) }
