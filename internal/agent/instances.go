package agent

// instances is the hook a Registry asks for the agents no file or row
// defines (dynamic agents: instances of a template).
type instances func(id string) (*Definition, bool)

// SetInstances installs f, asked by Get for an id no file or row defines
// (a dynamic agent: an instance derived from a template). f must be safe
// for concurrent use and must not call back into the registry's writes;
// Get stays lock-free. List does not include what f answers, so that a
// node with thousands of instances lists its definitions only. nil
// removes the hook.
func (r *Registry) SetInstances(f func(id string) (*Definition, bool)) {
	if f == nil {
		r.inst.Store(nil)
		return
	}
	h := instances(f)
	r.inst.Store(&h)
}

// instance asks the hook for id.
func (r *Registry) instance(id string) (*Definition, bool) {
	f := r.inst.Load()
	if f == nil {
		return nil, false
	}
	return (*f)(id)
}
