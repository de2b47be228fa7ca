package runtime

import "time"

// On a shared store a node keeps an idle session's lease for
// Options.LeaseGrace after its queue empties, so that the session's next
// input on this node runs at once: taking the lease back would cost
// three round trips to the store (the lease, the session, its pending
// inputs), and giving it up a fourth. Meanwhile other nodes cannot run
// the session, so the grace ends early (EndGrace) when another node
// accepts an input for it (this node runs it) or asks for the lease to
// write outside turns; when the grace ends the lease is given up, or,
// with inputs pending, kept and they run. A node that dies holds its
// sessions' leases in grace until they expire, as it holds those of its
// running turns.

// keep begins sess's grace: its worker ends with the lease kept.
// sess.lmu and sess.mu are held.
func (r *Runtime) keep(sess *session) {
	r.graces.Add(1)
	var t *time.Timer
	t = time.AfterFunc(r.o.LeaseGrace, func() {
		defer r.graces.Done()
		r.graceOver(sess, t)
	})
	sess.grace = t
}

// unkeep ends sess's grace, if it has one, without giving the lease up:
// the session's worker goes on under it, or the runtime is closing.
// sess.mu is held.
func (r *Runtime) unkeep(sess *session) {
	if sess.grace != nil && sess.grace.Stop() {
		r.graces.Done()
	}
	sess.grace = nil
}

// graceOver ends grace t of sess: the lease is given up, unless inputs
// are pending, which then run under it.
func (r *Runtime) graceOver(sess *session, t *time.Timer) {
	sess.lmu.Lock()
	sess.mu.Lock()
	mine := sess.grace == t
	if mine {
		sess.grace = nil
	}
	sess.mu.Unlock()
	if !mine || r.closing.Load() {
		sess.lmu.Unlock()
		return
	}
	idle := r.releaseLocked(sess)
	sess.lmu.Unlock()
	if !idle {
		r.kick(sess)
	}
}

// EndGrace ends the grace of session's lease at once, if this node keeps
// it idle: another node accepted an input for the session (which this
// node then runs) or asks for the lease. While the session's worker runs,
// its next rest begins no grace: it gives the lease up, or finds the
// inputs pending. It does not block: the store's listener calls it.
func (r *Runtime) EndGrace(session int64) {
	r.mu.Lock()
	sess := r.sessions[session]
	r.mu.Unlock()
	if sess == nil {
		return
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	r.endGrace(sess)
}

// endGrace is EndGrace with sess.mu held.
func (r *Runtime) endGrace(sess *session) {
	if sess.grace != nil && sess.grace.Stop() {
		sess.grace.Reset(0) // graceOver runs now, once
	} else if sess.grace == nil && sess.leased {
		sess.asked = true // the next rest gives the lease up
	}
}

// stopGraces ends every grace without giving the leases up, as the
// runtime closes (the store gives its leases up as it closes), and waits
// for those ending.
func (r *Runtime) stopGraces() {
	r.mu.Lock()
	for _, sess := range r.sessions {
		sess.mu.Lock()
		r.unkeep(sess)
		sess.mu.Unlock()
	}
	r.mu.Unlock()
	r.graces.Wait()
}
