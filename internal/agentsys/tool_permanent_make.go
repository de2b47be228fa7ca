package agentsys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// ErrExists is returned by CreatePermanent for a name an agent has
// already (a file's, a row's, the built-in one's), unless the same
// creator made it with the same definition.
var ErrExists = errors.New("an agent of that name exists")

// agentRowType is the extension type of agent rows.
const agentRowType = "agent"

// AgentRows reads and writes agent rows (*extension.Manager).
type AgentRows interface {
	Get(ctx context.Context, typ, name string) (extension.Status, error)
	Put(ctx context.Context, d extension.Doc, w extension.Who) (extension.Status, error)
}

// ToolSpecs lists the registered tools (*tool.Registry).
type ToolSpecs interface {
	Specs() []tool.Spec
}

// EventLog writes events into a session's log (*runtime.Runtime).
type EventLog interface {
	Record(ctx context.Context, addr string, evs ...event.Event) error
}

// PermanentInstances records the instance of a permanent agent an agent
// made, or returns the one it has (the System's Permanent).
type PermanentInstances interface {
	Permanent(ctx context.Context, name, creator string) (store.Instance, error)
}

// What the wiring gives NewPermanents.
var (
	_ AgentRows   = (*extension.Manager)(nil)
	_ Definitions = (*agent.Registry)(nil)
	_ ToolSpecs   = (*tool.Registry)(nil)
	_ EventLog    = (*runtime.Runtime)(nil)
)

// PermanentOptions are the optional parts of Permanents.
type PermanentOptions struct {
	// Log records "created" first in the new agent's main log (default:
	// nothing is recorded).
	Log EventLog
}

// Permanents makes permanent agents: an agent row of provenance
// agent:<creator>, then its instance (descriptor permanent:<name>, the
// creator as parent), then a created event in its log. What a crash
// between the row and the instance leaves, a row without an instance, a
// call made again (or the System's recovery) completes; a crash before
// the event leaves the agent without it.
type Permanents struct {
	inst  PermanentInstances
	rows  AgentRows
	defs  Definitions
	tools ToolSpecs
	log   EventLog
}

// NewPermanents returns the maker of permanent agents over their
// instances (the System), the agent rows, the agent registry and the
// tool registry. o may be nil.
func NewPermanents(inst PermanentInstances, rows AgentRows, defs Definitions, tools ToolSpecs, o *PermanentOptions) *Permanents {
	p := &Permanents{inst: inst, rows: rows, defs: defs, tools: tools}
	if o != nil {
		p.log = o.Log
	}
	return p
}

// CreatePermanent makes the agent req asks for, or returns the one the
// same creator made before with the same definition (a call made again
// after a crash). A name any other agent has is ErrExists; a tool the
// creator may not use itself is refused.
func (p *Permanents) CreatePermanent(ctx context.Context, req PermanentRequest) (PermanentResult, error) {
	creator, ok := p.defs.Get(req.Creator)
	if !ok {
		return PermanentResult{}, fmt.Errorf("agentsys: create %s: %w: the creating agent %q", req.Name, ErrNotFound, req.Creator)
	}
	g, err := grant(creator, p.tools.Specs(), req.Tools)
	if err != nil {
		return PermanentResult{}, err
	}
	spec, err := json.Marshal(permanentDefinition(creator, req, g))
	if err != nil {
		return PermanentResult{}, err
	}
	who := extension.Who{Provenance: store.ProvenanceAgent + req.Creator}
	created, err := p.putRow(ctx, req.Name, spec, who)
	if err != nil {
		return PermanentResult{}, err
	}
	in, err := p.inst.Permanent(ctx, req.Name, req.Creator)
	if err != nil {
		return PermanentResult{}, fmt.Errorf("agentsys: create %s: %w", req.Name, err)
	}
	if created && p.log != nil {
		ev := event.New(0, 0, event.Agent, event.AgentData{Op: event.AgentCreated, ID: in.ID, Type: in.Type, Parent: req.Creator})
		if err := p.log.Record(ctx, req.Name+"/main", ev); err != nil {
			return PermanentResult{}, fmt.Errorf("agentsys: create %s: log: %w", req.Name, err)
		}
	}
	return PermanentResult{Instance: in, Created: created, Allow: g.allow, Ask: g.ask}, nil
}

// putRow writes the agent row name unless it exists: then it is the one
// a call made again finds (same provenance, same spec: created false),
// or ErrExists. An agent a file or the built-in defines is ErrExists as
// well: a row would override it.
func (p *Permanents) putRow(ctx context.Context, name string, spec json.RawMessage, who extension.Who) (created bool, err error) {
	row, err := p.rows.Get(ctx, agentRowType, name)
	switch {
	case err == nil:
		if row.Provenance != who.Provenance || !sameJSON(row.Spec, spec) {
			return false, fmt.Errorf("agentsys: create %s: %w (made by %s); choose another name", name, ErrExists, row.Provenance)
		}
		return false, nil
	case !errors.Is(err, store.ErrNotFound):
		return false, fmt.Errorf("agentsys: create %s: %w", name, err)
	}
	if _, taken := p.defs.Get(name); taken {
		return false, fmt.Errorf("agentsys: create %s: %w (an agent file or the built-in one); choose another name", name, ErrExists)
	}
	if _, err := p.rows.Put(ctx, extension.Doc{Type: agentRowType, Name: name, Spec: spec}, who); err != nil {
		return false, fmt.Errorf("agentsys: create %s: %w", name, err)
	}
	return true, nil
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// granted are the tools a new agent gets: Allow those its creator may
// call, Ask those it may call with a person's approval; Builtin and
// Servers what offers them (built-in tools by name, MCP servers).
type granted struct {
	allow, ask, builtin, servers []string
}

// grant resolves the tool patterns of a new agent against the registered
// tools: a name must be a tool the creator may use, a glob gives the
// tools it matches that the creator may use (and must match one). What
// the creator may call only with approval, the new agent may too.
func grant(creator *agent.Definition, specs []tool.Spec, patterns []string) (granted, error) {
	allow, ask, servers := map[string]bool{}, map[string]bool{}, map[string]bool{}
	builtin := []string{}
	for i, pat := range patterns {
		field := fmt.Sprintf("tools[%d]", i)
		if _, err := path.Match(pat, ""); err != nil {
			return granted{}, badArg(field, "%q is not a valid glob", pat)
		}
		literal := !strings.ContainsAny(pat, `*?[\`)
		n := 0
		for j := range specs {
			s := &specs[j]
			if ok, _ := path.Match(pat, s.Name); !ok {
				continue
			}
			v := creatorVerdict(creator, s)
			if v == tool.Deny {
				if literal {
					return granted{}, badArg(field, "%s is a tool you may not use yourself", s.Name)
				}
				continue
			}
			n++
			if allow[s.Name] || ask[s.Name] {
				continue
			}
			if v == tool.Ask {
				ask[s.Name] = true
			} else {
				allow[s.Name] = true
			}
			if s.Server == "" {
				builtin = append(builtin, s.Name)
			} else {
				servers[s.Server] = true
			}
		}
		if n == 0 {
			if literal {
				return granted{}, badArg(field, "no tool is named %q", pat)
			}
			return granted{}, badArg(field, "%q matches no tool you may use", pat)
		}
	}
	slices.Sort(builtin)
	return granted{allow: sortedKeys(allow), ask: sortedKeys(ask), builtin: builtin, servers: sortedKeys(servers)}, nil
}

// creatorVerdict is what the creator's policy says of s, Deny for a tool
// it is not offered at all (a built-in tool its tools.builtin leaves
// out, a server it does not use, a tool of its own servers, a skill's or
// one that serves only some agents).
func creatorVerdict(d *agent.Definition, s *tool.Spec) tool.Verdict {
	switch {
	case s.Serves != nil && !s.Serves(d.ID), s.Skills != nil, s.Scope != nil,
		s.Server == "" && !d.OffersBuiltin(s.Name), s.Server != "" && !d.UsesServer(s.Server):
		return tool.Deny
	}
	p := tool.Policy{Allow: d.Tools.Allow, Deny: d.Tools.Deny, Ask: d.Tools.Ask, Grant: d.Tools.Grant}
	return p.Decide(*s).Verdict
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// permanentDefinition is the new agent's row: its name, description and
// prompt; the creator's model unless it reaches the environment (a
// base_url, a key's variable: an agent may not write those; the default
// model then); and an allow list of exactly the granted tools (ask ones
// ask first), offering no other built-in tool and no other MCP server.
func permanentDefinition(creator *agent.Definition, req PermanentRequest, g granted) map[string]any {
	all := append(slices.Clone(g.allow), g.ask...)
	slices.Sort(all)
	tools := map[string]any{"allow": all, "builtin": g.builtin}
	if len(g.ask) > 0 {
		tools["ask"] = g.ask
	}
	def := map[string]any{"type": agent.TypePermanent, "name": req.Name, "description": req.Description,
		"system_prompt": req.SystemPrompt, "tools": tools, "servers": g.servers}
	if m := creator.Model; m.BaseURL == "" && m.APIKeyEnv == "" && m.Provider != "" {
		model := map[string]any{"provider": m.Provider}
		if m.Name != "" {
			model["name"] = m.Name
		}
		def["model"] = model
	}
	return def
}
