package gateway

// The query of GET /v1/agents: which definitions and which dynamic agents
// it lists.

import (
	"net/url"
	"slices"
	"strconv"

	"agentd/internal/agent"
	"agentd/internal/store"
)

// agentQuery is a GET /v1/agents query, checked.
type agentQuery struct {
	store.AgentFilter
	// dynamic is nil for both kinds, true for the dynamic agents only,
	// false for the definitions only.
	dynamic *bool
}

// definitions reports whether q lists definitions: not asked for the
// dynamic agents alone, nor for a lineage, a state no definition has, or
// a page after the first (they are all on the first).
func (q agentQuery) definitions() bool {
	return (q.dynamic == nil || !*q.dynamic) && q.Parent == "" && q.Root == "" && q.Before == "" &&
		(q.State == "" || q.State == AgentReady || q.State == AgentInvalid)
}

// instances reports whether q lists dynamic agents: not asked for the
// definitions alone, nor for a type or a state no instance has.
func (q agentQuery) instances() bool {
	return (q.dynamic == nil || *q.dynamic) && (q.Type == "" || slices.Contains(store.InstanceTypes(), q.Type)) &&
		(q.State == "" || slices.Contains(store.AgentStates(), q.State))
}

// agentListQuery reads and checks a GET /v1/agents query: type, parent,
// root, state, dynamic, all (the dynamic agents that ended too), limit and
// before.
func agentListQuery(v url.Values) (agentQuery, error) {
	var q agentQuery
	q.Type, q.Parent, q.Root, q.State, q.Before = v.Get("type"), v.Get("parent"), v.Get("root"), v.Get("state"), v.Get("before")
	// The types of instances, and those only definitions have.
	types := append(store.InstanceTypes(), agent.TypeCron, agent.TypeSystem)
	if q.Type != "" && !slices.Contains(types, q.Type) {
		return q, badRequest("type %q: want one of %v", q.Type, types)
	}
	states := append(store.AgentStates(), AgentReady, AgentInvalid)
	if q.State != "" && !slices.Contains(states, q.State) {
		return q, badRequest("state %q: want one of %v", q.State, states)
	}
	for _, f := range [...]struct{ name, v string }{{"parent", q.Parent}, {"root", q.Root}, {"before", q.Before}} {
		if len(f.v) > store.MaxInstanceText {
			return q, badRequest("%s: longer than %d bytes", f.name, store.MaxInstanceText)
		}
	}
	if d := v.Get("dynamic"); d != "" {
		b, err := strconv.ParseBool(d)
		if err != nil {
			return q, badRequest("dynamic %q: want true or false", d)
		}
		q.dynamic = &b
	}
	all := false
	if a := v.Get("all"); a != "" {
		b, err := strconv.ParseBool(a)
		if err != nil {
			return q, badRequest("all %q: want true or false", a)
		}
		all = b
	}
	q.Live = q.State == "" && !all
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxInstanceLimit {
			return q, badRequest("limit %q: want 1 to %d", l, store.MaxInstanceLimit)
		}
		q.Limit = n
	}
	return q, nil
}
