package runtime

import (
	"context"
	"fmt"
	"time"

	"agentd/internal/store"
)

// OutsideTurn runs write, a write of session's log outside its turns
// (working memory set through the API), fenced by the session's lease:
// ctx carries the lease's epoch (store.WithEpoch), which a store that
// fences checks in the write's transaction. See outside.
func (r *Runtime) OutsideTurn(ctx context.Context, session int64, write func(ctx context.Context) error) error {
	if !r.shared() {
		return write(ctx)
	}
	s, err := r.st.SessionByID(ctx, session)
	if err != nil {
		return fmt.Errorf("runtime: session %d: %w", session, err)
	}
	return r.outside(ctx, r.session(s), func(epoch int64) error {
		return write(store.WithEpoch(ctx, session, epoch))
	})
}

// outside runs write, a write of sess's log outside its turns, with the
// epoch of sess's lease, so that no two nodes write a session's log at
// once: the node running its turns writes under its lease; another takes
// the lease for the write (waiting up to Options.OutsideWait while a
// node holds it, then ErrBusy) and gives it up after. Alone on its store
// the node holds every lease. sess.lmu is held while write runs.
func (r *Runtime) outside(ctx context.Context, sess *session, write func(epoch int64) error) error {
	if !r.shared() {
		return write(r.epochOf(sess))
	}
	deadline := time.Now().Add(r.o.OutsideWait)
	for try := 0; ; try++ {
		taken, kept, err := r.writeLeased(ctx, sess, write)
		if kept != 0 {
			// Inputs were accepted while this node held the lease: it
			// runs them, as a node claiming the session would.
			if err := r.adopt(r.ctx, store.Lease{Session: sess.s.ID, Epoch: kept}); err != nil {
				r.log.Warn("cannot resume a session's inputs; they wait for a claim", "session", sess.s.Address(), "err", err)
			}
		}
		if taken || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s: another node runs its turns; try again", ErrBusy, sess.s.Address())
		}
		if rr, ok := r.leases.(RemoteRelease); ok && try == 0 {
			// The holder may keep the lease idle (grace.go): ask for it.
			if err := rr.AskRelease(ctx, sess.s.ID); err != nil {
				r.log.Debug("cannot ask for a session's lease", "session", sess.s.Address(), "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeLeased runs write under sess's lease if this node holds it or can
// take it (taken), else does nothing. A lease taken for the write is
// given up after it, unless inputs are pending: then this node keeps it
// (at epoch kept, not 0) and must run them. The session's cached context
// is dropped when the lease is taken: another node may have written the
// log.
func (r *Runtime) writeLeased(ctx context.Context, sess *session, write func(epoch int64) error) (taken bool, kept int64, err error) {
	sess.lmu.Lock()
	defer sess.lmu.Unlock()
	sess.mu.Lock()
	leased, epoch := sess.leased, sess.epoch
	sess.mu.Unlock()
	if leased {
		return true, 0, write(epoch)
	}
	epoch, held, err := r.leases.Lease(ctx, sess.s.ID)
	if err != nil || !held {
		return false, 0, err
	}
	sess.mu.Lock()
	r.setConv(sess, nil)
	sess.epoch = epoch
	sess.mu.Unlock()
	err = write(epoch)
	released, uerr := r.leases.Unlease(context.WithoutCancel(ctx), sess.s.ID, epoch)
	if uerr != nil {
		r.log.Warn("cannot give up a session's lease", "session", sess.s.Address(), "err", uerr)
	}
	if uerr == nil && !released {
		kept = epoch
	}
	return true, kept, err
}

// RemoteRelease is the optional ability of Leases (a store other nodes
// share) to ask the node keeping a session's lease idle to give it up
// (EndGrace on that node). Best effort: a request lost is a wait until
// the grace ends.
type RemoteRelease interface {
	AskRelease(ctx context.Context, session int64) error
}
