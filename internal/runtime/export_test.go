package runtime

// SessionsHeld returns how many sessions r holds in memory, and the most
// its maps have held since they were last made.
func SessionsHeld(r *Runtime) (held, peak int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions), r.peak
}
