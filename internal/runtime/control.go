package runtime

import (
	"context"
	"fmt"

	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/store"
)

// Reset appends a reset marker after whatever is queued: the context
// restarts after it and the session keeps its id. A session that does not
// exist is store.ErrNotFound.
func (r *Runtime) Reset(ctx context.Context, addr, reason string) (Receipt, error) {
	sess, err := r.existing(ctx, addr)
	if err != nil {
		return Receipt{}, err
	}
	rc, _, err := r.control(ctx, sess, event.Reset, reason, "reset")
	return rc, err
}

// Compact asks for the session's context to be compacted, focusing the
// summary on focus (may be ""), in order behind its queued inputs, and
// waits for it. A session that does not exist is store.ErrNotFound.
func (r *Runtime) Compact(ctx context.Context, addr, focus string) (Receipt, event.TurnEndData, error) {
	sess, err := r.existing(ctx, addr)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	if sess.state() == store.StateClosed {
		return Receipt{}, event.TurnEndData{}, closedErr(addr)
	}
	return r.control(ctx, sess, event.CompactRequest, focus, "compact")
}

// control queues an item that is not an input (a reset, a compaction)
// behind the session's queued inputs and waits until it is done.
func (r *Runtime) control(ctx context.Context, sess *session, kind event.Kind, text, source string) (Receipt, event.TurnEndData, error) {
	var w waiting
	rc, err := r.enqueue(ctx, sess, store.InboxItem{Session: sess.s.ID, Kind: kind, Text: text, Source: source}, &w)
	if err != nil {
		return rc, event.TurnEndData{}, err
	}
	end, err := r.await(ctx, rc.Turn, w.end)
	return rc, end, err
}

// CloseSession closes a session: it keeps its log and refuses new input
// until it is reopened. A session with a running or queued turn is not
// closed (ErrBusy); one that does not exist is store.ErrNotFound.
func (r *Runtime) CloseSession(ctx context.Context, addr string) error {
	sess, err := r.existing(ctx, addr)
	if err != nil {
		return err
	}
	sess.mu.Lock()
	busy := sess.working || len(sess.queue) > 0
	sess.mu.Unlock()
	if busy {
		return fmt.Errorf("%w: %s has a turn running or queued; cancel it or wait", ErrBusy, addr)
	}
	return r.mark(ctx, sess, "closed", store.StateClosed)
}

// Reopen reopens a closed session: it takes input again, its context
// continuing where it stopped. It reports whether the session was closed;
// reopening an open one changes nothing. A session that does not exist is
// store.ErrNotFound.
func (r *Runtime) Reopen(ctx context.Context, addr string) (bool, error) {
	sess, err := r.existing(ctx, addr)
	if err != nil {
		return false, err
	}
	return r.reopen(ctx, sess)
}

// reopen logs a "reopened" marker and makes a closed session idle.
func (r *Runtime) reopen(ctx context.Context, sess *session) (bool, error) {
	if sess.state() != store.StateClosed {
		return false, nil
	}
	if err := r.mark(ctx, sess, "reopened", store.StateIdle); err != nil {
		return false, err
	}
	return true, nil
}

// mark logs a marker outside any turn, with the session's new state.
func (r *Runtime) mark(ctx context.Context, sess *session, name, state string) error {
	ev := event.New(sess.s.ID, 0, event.Marker, event.MarkerData{Name: name})
	return r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, State: state, Events: []event.Event{ev}})
}

// closedErr is the error of input to a closed session, saying how to reopen it.
func closedErr(addr string) error {
	return fmt.Errorf("%w: %s (reopen it first, or send with reopen)", ErrSessionClosed, addr)
}

// Cancel cancels the running turn of a session. Queued inputs still run.
func (r *Runtime) Cancel(ctx context.Context, addr string) error {
	if _, _, err := r.address(addr); err != nil {
		return err
	}
	// A session with a running turn is in memory (working sessions are
	// never evicted); looking one up must not create it.
	var cancel context.CancelCauseFunc
	if sess := r.inMemory(addr); sess != nil {
		sess.mu.Lock()
		cancel = sess.cancel
		sess.mu.Unlock()
	}
	if cancel == nil {
		return fmt.Errorf("%w in %s", ErrNoTurn, addr)
	}
	cancel(engine.ErrCancelled)
	return nil
}
