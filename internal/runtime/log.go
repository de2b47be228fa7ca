package runtime

import (
	"context"

	"agentd/internal/event"
	"agentd/internal/store"
)

// commit commits a batch of sess outside any turn's log (or for a store
// without asynchronous writes), then has it followed (committed): durable
// before visible.
func (r *Runtime) commit(ctx context.Context, sess *session, b *store.Batch) error {
	if err := r.st.Commit(ctx, b); err != nil {
		return err
	}
	r.committed(sess, b)
	return nil
}

// asyncStore is the optional ability of a store to take a write at once
// and report its durability later, keeping the order writes were handed over.
type asyncStore interface {
	CommitAsync(ctx context.Context, b *store.Batch) func() error
}

// turnLog is the log of one turn of a session (engine.Turn.Log).
type turnLog struct {
	r    *Runtime
	sess *session
}

// Commit hands a batch to the store and returns a function that waits for
// it to be durable, then keeps the session's cached context in step and
// publishes its events. Stores without the ability commit at once.
func (l turnLog) Commit(ctx context.Context, b *store.Batch) func() error {
	b.Epoch = l.r.epochOf(l.sess)
	as, ok := l.r.st.(asyncStore)
	if !ok {
		err := l.r.commit(ctx, l.sess, b)
		return func() error { return err }
	}
	wait := as.CommitAsync(ctx, b)
	return func() error {
		if err := wait(); err != nil {
			return err
		}
		l.r.committed(l.sess, b)
		return nil
	}
}

// committed keeps the session's cached context and state in step with a
// durable batch, then publishes its events and the session's new state.
func (r *Runtime) committed(sess *session, b *store.Batch) {
	if len(b.Events) > 0 {
		sess.mu.Lock()
		r.follow(sess, b.Events)
		sess.s.LastSeq = max(sess.s.LastSeq, b.Events[len(b.Events)-1].Seq)
		if b.State != "" {
			sess.s.State = b.State
		}
		sess.mu.Unlock()
	}
	r.bus.Publish(b.Events...)
	if b.State != "" {
		var turn int64
		if n := len(b.Events); n > 0 {
			turn = b.Events[n-1].Turn
		}
		r.publishState(sess, turn, b.State)
	}
	r.trimCache()
}

// publishState publishes a live session_state event if state is not the
// session's last published one.
func (r *Runtime) publishState(sess *session, turn int64, state string) {
	sess.mu.Lock()
	changed := sess.published != state
	sess.published = state
	id := sess.s.ID
	sess.mu.Unlock()
	if changed {
		r.bus.Publish(event.New(id, turn, event.State, event.StateData{State: state}))
	}
}
