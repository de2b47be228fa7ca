package runtime

// paused reports whether sess's agent is paused (Options.Paused): its
// worker leaves the queue as it is, and Resume kicks it again.
func (r *Runtime) paused(sess *session) bool {
	return r.o.Paused != nil && r.o.Paused(sess.s.Agent)
}

// Resume runs the queued inputs of an agent's sessions, once it is no
// longer paused.
func (r *Runtime) Resume(agent string) {
	r.mu.Lock()
	var list []*session
	for _, sess := range r.sessions {
		if sess.s.Agent == agent {
			list = append(list, sess)
		}
	}
	r.mu.Unlock()
	for _, sess := range list {
		r.kick(sess)
	}
}
