package agentsys

import (
	"agentd/internal/agent"
	"agentd/internal/store"
)

// derive returns the definition an instance runs with: its template's,
// with the instance's id, name and type, its template and parent, the
// memory scope of its type (a swarm instance's own id, the template's
// otherwise) and the template's identity key. The template's definition is
// not changed (a shallow copy: its slices and maps are shared, read-only).
func derive(tpl *agent.Definition, in store.Instance) *agent.Definition {
	d := *tpl
	d.ID = in.Agent
	if in.Name != "" {
		d.Name = in.Name
	}
	d.Type = in.Type
	d.Template = tpl.ID
	d.Parent = in.Parent
	d.Scope = tpl.ScopeID()
	if behaviours[in.Type].ownScope {
		d.Scope = in.ID
	}
	d.KeyOwner = tpl.KeyOwnerID()
	return &d
}
