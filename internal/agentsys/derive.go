package agentsys

import (
	"context"
	"fmt"

	"agentd/internal/agent"
	"agentd/internal/store"
)

// derive returns the definition an instance runs with: its template's,
// with the instance's id, name and type, its template and parent, the
// memory scope of its type (a swarm instance's own id; below one, the
// tree's: treeScope, passed as scope; the template's otherwise) and the
// template's identity key. The template's definition is not changed (a
// shallow copy: its slices and maps are shared, read-only).
func derive(tpl *agent.Definition, in store.Instance, scope string) *agent.Definition {
	d := *tpl
	d.ID = in.Agent
	if in.Name != "" {
		d.Name = in.Name
	}
	d.Type = in.Type
	d.Template = tpl.ID
	d.Parent = in.Parent
	d.Scope = tpl.ScopeID()
	if scope != "" {
		d.Scope = scope
	}
	if behaviours[in.Type].ownScope {
		d.Scope = in.ID
	}
	d.KeyOwner = tpl.KeyOwnerID()
	return &d
}

// treeScope is the memory scope the tree of in gives it: its root's own
// scope when the root is an instance of a type with one (a swarm
// customer's agent: its sub-agents remember in that customer's scope,
// whatever their template), "" otherwise. A failed read is an error: the
// instance then has no definition for now, rather than the template's
// memory.
func (s *System) treeScope(ctx context.Context, in store.Instance) (string, error) {
	if in.Root == "" || in.Root == in.Agent || !store.IsInstanceID(in.Root) {
		return "", nil
	}
	root, err := s.row(ctx, in.Root)
	if err != nil {
		return "", fmt.Errorf("the root of %s: %w", in.ID, err)
	}
	if behaviours[root.Type].ownScope {
		return root.ID, nil
	}
	return "", nil
}
