package agent

import (
	"maps"
	"slices"
)

// SetDeny denies the tools globs match to every agent, under a source's
// name (a control that switches tools off); nil globs lift that source's
// denial. Every agent's definition changes with it.
func (r *Registry) SetDeny(source string, globs []string) {
	r.mu.Lock()
	if len(globs) == 0 {
		if _, ok := r.deny[source]; !ok {
			r.mu.Unlock()
			return
		}
		delete(r.deny, source)
	} else {
		if r.deny == nil {
			r.deny = map[string][]string{}
		}
		r.deny[source] = slices.Clone(globs)
	}
	changed := r.publish(true)
	r.mu.Unlock()
	r.notify(changed)
}

// withDeny returns def with the denied globs added to its deny list (a
// new definition; def is not changed).
func withDeny(def *Definition, deny map[string][]string) *Definition {
	if len(deny) == 0 {
		return def
	}
	d := def.Clone()
	for _, src := range slices.Sorted(maps.Keys(deny)) {
		d.Tools.Deny = appendNew(d.Tools.Deny, deny[src])
	}
	return d
}
