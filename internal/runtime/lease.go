package runtime

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"agentd/internal/store"
)

// Leases decides which node runs a session's turns (store.ClusterStore
// has it): a worker runs a session's queue only while its node holds the
// session's lease, and every batch of a turn carries the lease's epoch,
// so that a node that lost the lease cannot write the turn any more
// (store.ErrFenced).
type Leases interface {
	// Lease takes or keeps the session's lease; held is false while
	// another live node holds it.
	Lease(ctx context.Context, session int64) (epoch int64, held bool, err error)
	// Unlease gives the session's lease up unless it has pending inputs
	// (released false: the node keeps it, to run them).
	Unlease(ctx context.Context, session, epoch int64) (released bool, err error)
	// Orphans takes the leases of sessions with pending inputs and no
	// live owner (up to max; max <= 0: all) and returns them.
	Orphans(ctx context.Context, max int) ([]store.Lease, error)
}

// soleNode is the Leases of a store no other node uses: this node holds
// every session's lease, and the sessions to resume are those with
// pending inputs.
type soleNode struct{ st store.Store }

func (soleNode) Lease(context.Context, int64) (int64, bool, error)   { return 1, true, nil }
func (soleNode) Unlease(context.Context, int64, int64) (bool, error) { return true, nil }
func (n soleNode) Orphans(ctx context.Context, max int) ([]store.Lease, error) {
	ids, err := n.st.PendingSessions(ctx)
	ls := make([]store.Lease, len(ids))
	for i, id := range ids {
		ls[i] = store.Lease{Session: id, Epoch: 1}
	}
	return ls, err
}

// shared reports whether other nodes may run this node's sessions: then
// a session's lease is given up whenever its queue empties, taken again
// with its next input, and sessions without a live owner are claimed
// every Options.ClaimEvery.
func (r *Runtime) shared() bool { return r.o.ClaimEvery > 0 }

// own makes sure this node holds sess's lease before its worker runs the
// queue, taking it if needed; false means the worker is done: another
// node holds the lease (the items wait in the inbox for it, which finds
// them when its own queue empties, or for the claim that follows its
// death), the store failed (the claim retries), or nothing is left to run.
func (r *Runtime) own(sess *session) bool {
	sess.lmu.Lock()
	defer sess.lmu.Unlock()
	sess.mu.Lock()
	leased := sess.leased
	r.unkeep(sess)
	empty := len(sess.queue) == 0
	sess.mu.Unlock()
	if leased { // kept (in grace, ended now) or held while the worker ran
		return !empty || !r.shared() || !r.rest(sess)
	}
	epoch, held, err := r.leases.Lease(r.ctx, sess.s.ID)
	if err == nil && held && r.shared() {
		err = r.takeOver(sess, epoch)
		if err != nil {
			r.unlease(sess.s.ID, epoch)
		}
	} else if err == nil && held {
		sess.mu.Lock()
		r.hold(sess, epoch, sess.s.LastSeq)
		sess.mu.Unlock()
	}
	if err != nil || !held {
		if err != nil && r.ctx.Err() == nil {
			r.log.Warn("cannot take a session's lease; its inputs wait", "session", sess.s.Address(), "err", err)
		}
		sess.mu.Lock()
		sess.queue = nil // still pending in the inbox
		sess.working = false
		sess.mu.Unlock()
		return false
	}
	sess.mu.Lock()
	empty = len(sess.queue) == 0
	sess.mu.Unlock()
	return !empty || !r.rest(sess)
}

// takeOver completes taking sess's lease at epoch on a shared store:
// the session as the store has it (another node may have written it),
// and its pending inputs, some of which another node may have started.
// sess.lmu is held.
func (r *Runtime) takeOver(sess *session, epoch int64) error {
	s, err := r.st.SessionByID(r.ctx, sess.s.ID)
	if err != nil {
		return err
	}
	items, err := r.st.Pending(r.ctx, sess.s.ID)
	if err != nil {
		return err
	}
	sess.mu.Lock()
	stale := r.hold(sess, epoch, s.LastSeq)
	sess.s.State, sess.s.Title, sess.s.TitleBy = s.State, s.Title, s.TitleBy
	r.merge(sess, items, stale, true)
	sess.mu.Unlock()
	return nil
}

// hold records that this node holds sess's lease at epoch; the session's
// log as the store has it ends at lastSeq. It reports whether another
// node may have run the session since this node last knew it (the log
// grew elsewhere, or the lease is back at a new epoch): then the cached
// context is dropped, and the queued inputs may have events of turns
// begun elsewhere. sess.mu is held.
func (r *Runtime) hold(sess *session, epoch, lastSeq int64) (stale bool) {
	stale = lastSeq != sess.s.LastSeq || (sess.epoch != 0 && epoch != sess.epoch)
	if stale {
		r.setConv(sess, nil)
	}
	sess.leased, sess.epoch, sess.s.LastSeq = true, epoch, lastSeq
	return stale
}

// merge makes sess's queue the inputs the store has pending for it, in
// the order they were accepted, keeping what is known of those queued
// here already; a queued input not yet known durable stays too. An input
// that may have events of a turn begun elsewhere resumes as after a
// restart: with stale (another node may have run the session meanwhile)
// every input, with foreign those this node did not queue (another node,
// since dead, may have begun them before this node knew the session).
// Without either, the node held the lease while they were accepted, and
// no node ran them. No turn of sess runs. sess.mu is held.
func (r *Runtime) merge(sess *session, items []store.InboxItem, stale, foreign bool) {
	local := map[int64]queued{}
	for _, q := range sess.queue {
		local[q.item.ID] = q
	}
	out := make([]queued, 0, len(items))
	for _, it := range items {
		sess.seen = max(sess.seen, it.ID)
		q, ok := local[it.ID]
		if !ok {
			q = queued{item: it, recovered: foreign}
		}
		q.recovered = q.recovered || stale
		delete(local, it.ID)
		out = append(out, q)
	}
	for _, q := range local {
		if q.durable != nil { // not yet in the store's list
			out = append(out, q)
		}
	}
	slices.SortFunc(out, func(a, b queued) int { return cmp.Compare(a.item.ID, b.item.ID) })
	sess.queue = out
}

// admit queues q, an input this node has just accepted, unless a merge
// found it pending in the store first (another submit's worker took the
// lease, or this node's worker gave it up, between the input's insert
// and this call): queued from there, it runs, or ran, once, and queuing
// it again would run it again from its start. An id up to sess.seen that
// is no longer queued ran here, or (ids are not committed in order) was
// not pending yet when the merge read: the session's grace then ends and
// its next rest gives the lease up, which finds it pending if it is.
// sess.mu is held.
func (r *Runtime) admit(sess *session, q queued) {
	if !r.shared() || q.item.ID > sess.seen {
		sess.queue = append(sess.queue, q)
		return
	}
	if slices.ContainsFunc(sess.queue, func(o queued) bool { return o.item.ID == q.item.ID }) {
		return
	}
	r.endGrace(sess)
}

// release is called by sess's worker when its queue is empty: on a
// shared store it keeps the lease idle for a grace (grace.go), or looks
// for inputs other nodes accepted meanwhile (to run them: false), else
// gives up the lease, and ends the worker (true).
// Alone on its store the node keeps the lease and ends the worker.
func (r *Runtime) release(sess *session) bool {
	if !r.shared() {
		sess.mu.Lock()
		defer sess.mu.Unlock()
		if len(sess.queue) > 0 {
			return false
		}
		sess.working = false
		return true
	}
	sess.lmu.Lock()
	defer sess.lmu.Unlock()
	return r.rest(sess)
}

// rest is release with sess.lmu held: on a shared store the lease is
// kept idle for Options.LeaseGrace (grace.go), or, without a grace or as
// the runtime closes, given up at once.
func (r *Runtime) rest(sess *session) bool {
	sess.mu.Lock()
	kept := r.shared() && r.o.LeaseGrace > 0 && sess.leased && len(sess.queue) == 0 && !sess.asked && !r.closing.Load()
	sess.asked = false
	if kept {
		r.keep(sess)
		sess.working = false
	}
	sess.mu.Unlock()
	return kept || r.releaseLocked(sess)
}

// releaseLocked is release on a shared store; sess.lmu is held. The
// store keeps the lease while inputs are pending (accepted elsewhere
// while this node held it: no node ran them); they are queued and run.
// A store that fails is tried a few times, then the lease is left to
// its TTL (it is renewed while this node lives: another node's inputs
// for the session then wait for this node's next one, or its stop).
func (r *Runtime) releaseLocked(sess *session) bool {
	for try := 1; ; try++ {
		sess.mu.Lock()
		if len(sess.queue) > 0 {
			sess.mu.Unlock()
			return false
		}
		epoch := sess.epoch
		sess.mu.Unlock()
		released, err := r.leases.Unlease(r.ctx, sess.s.ID, epoch)
		var items []store.InboxItem
		if err == nil && !released {
			items, err = r.st.Pending(r.ctx, sess.s.ID)
		}
		switch {
		case err == nil && !released:
			sess.mu.Lock()
			r.merge(sess, items, false, false)
			sess.mu.Unlock()
			if try < 3 {
				continue
			}
		case err != nil && try < 3 && r.ctx.Err() == nil:
			select {
			case <-time.After(500 * time.Millisecond):
			case <-r.ctx.Done():
			}
			continue
		case err != nil && r.ctx.Err() == nil:
			r.log.Warn("cannot give up a session's lease", "session", sess.s.Address(), "err", err)
		}
		sess.mu.Lock()
		defer sess.mu.Unlock()
		if len(sess.queue) > 0 {
			return false
		}
		sess.leased, sess.working = false, false
		return true
	}
}

// unlease gives a lease up after a failure, logging a failure of its
// own: the lease then expires once the node stops renewing it.
func (r *Runtime) unlease(session, epoch int64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), 5*time.Second)
	defer cancel()
	if _, err := r.leases.Unlease(ctx, session, epoch); err != nil {
		r.log.Warn("cannot give up a session's lease", "session", session, "err", err)
	}
}

// fenced deals with a turn whose commit found the session's lease lost
// (store.ErrFenced): another node may run the session now, or this node
// claimed it again at a new epoch (it had expired). The session's cached
// context is dropped and its lease marked lost; the worker then takes
// the lease again, as own does: if another node holds it, the queue is
// dropped (the inputs are pending in the inbox, for that node) and the
// worker ends; if this node does, the turn resumes from the log as after
// a restart. Whoever waits here for a turn another node ends learns its
// end from the store.
func (r *Runtime) fenced(sess *session, err error) bool {
	if !errors.Is(err, store.ErrFenced) {
		return false
	}
	r.log.Warn("session's lease lost; its turn stops here", "session", sess.s.Address(), "err", err)
	sess.lmu.Lock()
	defer sess.lmu.Unlock()
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.leased = false
	r.setConv(sess, nil)
	if len(sess.queue) > 0 {
		// Its input and steps may be in the log: whoever holds the lease
		// next, this node too at the same epoch, resumes it from there.
		sess.queue[0].recovered = true
	}
	return true
}

// epochOf returns the epoch of sess's lease for a turn's batch, 0 if the
// node does not hold it.
func (r *Runtime) epochOf(sess *session) int64 {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if !sess.leased {
		return 0
	}
	return sess.epoch
}

// claim takes over the sessions with pending inputs and no live owner
// and schedules them: at start, those a previous process left; on a
// shared store, those of a dead node or a node that gave them up while
// another node accepted their input.
func (r *Runtime) claim(ctx context.Context) (int, error) {
	ls, err := r.leases.Orphans(ctx, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, l := range ls {
		if err := r.adopt(ctx, l); err != nil {
			for _, l := range ls[i:] {
				r.unlease(l.Session, l.Epoch)
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// adopt schedules the session of a lease just claimed with its pending
// inputs, as resumed after a restart. Its worker takes the lease (the
// node's own now, at the same epoch) and merges what is pending then; a
// session whose worker runs already finds the inputs when its queue
// empties.
func (r *Runtime) adopt(ctx context.Context, l store.Lease) error {
	s, err := r.st.SessionByID(ctx, l.Session)
	if err != nil {
		return err
	}
	for {
		sess := r.session(s)
		sess.lmu.Lock()
		// The pending inputs are read under lmu: a worker of this node may
		// have taken the lease (Orphans gave it to this node) and run them
		// meanwhile; read before, they would be queued and run again.
		items, err := r.st.Pending(ctx, l.Session)
		if err != nil {
			sess.lmu.Unlock()
			return err
		}
		r.mu.Lock()
		if r.sessions[s.ID] != sess { // evicted meanwhile
			r.mu.Unlock()
			sess.lmu.Unlock()
			continue
		}
		sess.mu.Lock()
		working := sess.working
		if !working {
			r.merge(sess, items, true, true)
		}
		idle := len(sess.queue) == 0
		sess.mu.Unlock()
		r.mu.Unlock()
		if !working && idle && r.shared() {
			// Done meanwhile by its last owner, or accepted again since:
			// the lease claimed is given up, or its inputs run.
			sess.mu.Lock()
			r.hold(sess, l.Epoch, s.LastSeq)
			sess.mu.Unlock()
			idle = r.releaseLocked(sess)
		}
		sess.lmu.Unlock()
		if !working && !idle {
			r.log.Info("resuming session", "session", s.Address(), "pending", len(items))
			r.kick(sess)
		}
		return nil
	}
}

// claimLoop claims sessions without a live owner every ClaimEvery until
// the runtime closes.
func (r *Runtime) claimLoop() {
	t := time.NewTicker(r.o.ClaimEvery)
	defer t.Stop()
	for {
		select {
		case <-r.quit:
			return
		case <-t.C:
		}
		if _, err := r.claim(r.ctx); err != nil && r.ctx.Err() == nil && !r.closing.Load() {
			r.log.Warn("cannot claim sessions without an owner; trying again", "err", err)
		}
	}
}
