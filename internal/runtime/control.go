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
	agentID, key, err := r.address(addr)
	if err != nil {
		return Receipt{}, err
	}
	sess, err := r.existing(ctx, agentID, key)
	if err != nil {
		return Receipt{}, err
	}
	var ch chan event.TurnEndData
	rc, err := r.enqueue(ctx, sess, store.InboxItem{Session: sess.s.ID, Kind: event.Reset, Text: reason, Source: "reset"}, &ch)
	if err != nil {
		return rc, err
	}
	_, err = r.await(ctx, rc.Turn, ch)
	return rc, err
}

// Compact asks for the session's context to be compacted, focusing the
// summary on focus (may be ""), in order behind its queued inputs, and
// waits for it. A session that does not exist is store.ErrNotFound.
func (r *Runtime) Compact(ctx context.Context, addr, focus string) (Receipt, event.TurnEndData, error) {
	agentID, key, err := r.address(addr)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	sess, err := r.existing(ctx, agentID, key)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	if sess.state() == store.StateClosed {
		return Receipt{}, event.TurnEndData{}, closedErr(addr)
	}
	var ch chan event.TurnEndData
	rc, err := r.enqueue(ctx, sess, store.InboxItem{Session: sess.s.ID, Kind: event.CompactRequest, Text: focus, Source: "compact"}, &ch)
	if err != nil {
		return rc, event.TurnEndData{}, err
	}
	end, err := r.await(ctx, rc.Turn, ch)
	return rc, end, err
}

// CloseSession closes a session: it keeps its log and refuses new input
// until it is reopened. A session with a running or queued turn is not
// closed (ErrBusy); one that does not exist is store.ErrNotFound.
func (r *Runtime) CloseSession(ctx context.Context, addr string) error {
	agentID, key, err := r.address(addr)
	if err != nil {
		return err
	}
	sess, err := r.existing(ctx, agentID, key)
	if err != nil {
		return err
	}
	sess.mu.Lock()
	busy := sess.working || len(sess.queue) > 0
	sess.mu.Unlock()
	if busy {
		return fmt.Errorf("%w: %s has a turn running or queued; cancel it or wait", ErrBusy, addr)
	}
	ev := event.New(sess.s.ID, 0, event.Marker, event.MarkerData{Name: "closed"})
	return r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, State: store.StateClosed, Events: []event.Event{ev}})
}

// Reopen reopens a closed session: it takes input again, its context
// continuing where it stopped. It reports whether the session was closed;
// reopening an open one changes nothing. A session that does not exist is
// store.ErrNotFound.
func (r *Runtime) Reopen(ctx context.Context, addr string) (bool, error) {
	agentID, key, err := r.address(addr)
	if err != nil {
		return false, err
	}
	sess, err := r.existing(ctx, agentID, key)
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
	ev := event.New(sess.s.ID, 0, event.Marker, event.MarkerData{Name: "reopened"})
	if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, State: store.StateIdle, Events: []event.Event{ev}}); err != nil {
		return false, err
	}
	return true, nil
}

// closedErr is the error of input to a closed session, saying how to reopen it.
func closedErr(addr string) error {
	return fmt.Errorf("%w: %s (reopen it first, or send with reopen)", ErrSessionClosed, addr)
}

// Cancel cancels the running turn of a session. Queued inputs still run.
func (r *Runtime) Cancel(ctx context.Context, addr string) error {
	agentID, key, err := r.address(addr)
	if err != nil {
		return err
	}
	// A session with a running turn is in memory (working sessions are
	// never evicted); looking one up must not create it.
	r.mu.Lock()
	sess := r.byAddr[agentID+"/"+key]
	r.mu.Unlock()
	var cancel context.CancelCauseFunc
	if sess != nil {
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
