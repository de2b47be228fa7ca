package runtime

import (
	"context"
	"errors"
	"fmt"

	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/store"
)

// Reset appends a reset marker after whatever is queued: the context
// restarts after it and the session keeps its id. A session that does not
// exist is store.ErrNotFound.
func (r *Runtime) Reset(ctx context.Context, addr, reason string) (Receipt, error) {
	return r.ResetOnce(ctx, addr, reason, "")
}

// ResetOnce is Reset done once per key (a chat platform's message id;
// "" none): the reset's inbox item carries key, unique per session, so a
// redelivery of the same request finds it (Receipt.Duplicate) and resets
// nothing.
func (r *Runtime) ResetOnce(ctx context.Context, addr, reason, key string) (Receipt, error) {
	sess, err := r.existing(ctx, addr)
	if err != nil {
		return Receipt{}, err
	}
	rc, _, err := r.control(ctx, sess, store.InboxItem{Kind: event.Reset, Text: reason, Source: "reset", IdempotencyKey: key})
	return rc, err
}

// Compact asks for the session's context to be compacted, focusing the
// summary on focus (may be ""), in order behind its queued inputs, and
// waits for it. A session that does not exist is store.ErrNotFound.
func (r *Runtime) Compact(ctx context.Context, addr, focus string) (Receipt, event.TurnEndData, error) {
	return r.CompactOnce(ctx, addr, focus, "")
}

// CompactOnce is Compact done once per key, as ResetOnce; a duplicate
// returns at once with no turn end.
func (r *Runtime) CompactOnce(ctx context.Context, addr, focus, key string) (Receipt, event.TurnEndData, error) {
	sess, err := r.existing(ctx, addr)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	if sess.state() == store.StateClosed {
		return Receipt{}, event.TurnEndData{}, closedErr(addr)
	}
	return r.control(ctx, sess, store.InboxItem{Kind: event.CompactRequest, Text: focus, Source: "compact", IdempotencyKey: key})
}

// control queues an item that is not an input (a reset, a compaction)
// behind the session's queued inputs and waits until it is done; a
// duplicate of one queued before is not waited for.
func (r *Runtime) control(ctx context.Context, sess *session, item store.InboxItem) (Receipt, event.TurnEndData, error) {
	var w waiting
	item.Session = sess.s.ID
	rc, err := r.enqueue(ctx, sess, item, &w)
	if err != nil || rc.Duplicate {
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
	if err := r.mark(ctx, sess, "closed", store.StateClosed); err != nil {
		return err
	}
	if r.o.Cleared != nil {
		r.o.Cleared(sess.s)
	}
	return nil
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
	sess.mu.Lock()
	sess.stopped = false
	sess.mu.Unlock()
	return true, nil
}

// mark logs a marker outside any turn, with the session's new state,
// under the session's lease (outside).
func (r *Runtime) mark(ctx context.Context, sess *session, name, state string) error {
	return r.outside(ctx, sess, func(epoch int64) error {
		ev := event.New(sess.s.ID, 0, event.Marker, event.MarkerData{Name: name})
		return r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, State: state, Events: []event.Event{ev}, Epoch: epoch})
	})
}

// closedErr is the error of input to a closed session, saying how to reopen it.
func closedErr(addr string) error {
	return fmt.Errorf("%w: %s (reopen it first, or send with reopen)", ErrSessionClosed, addr)
}

// Cancel cancels the running turn of a session. Queued inputs still run.
// On a shared store, a turn that runs on another node is cancelled by
// that node: Cancel returns once the cancel is sent (RemoteCancel), and
// ErrNoTurn if no live node runs a turn of the session.
func (r *Runtime) Cancel(ctx context.Context, addr string) error {
	agentID, key, err := r.address(addr)
	if err != nil {
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
	if cancel != nil {
		cancel(engine.ErrCancelled)
		return nil
	}
	if rc, ok := r.leases.(RemoteCancel); ok && r.shared() {
		_, err := r.cancelElsewhere(ctx, rc, addr, agentID, key)
		return err
	}
	return fmt.Errorf("%w in %s", ErrNoTurn, addr)
}

// RemoteCancel is the optional ability of Leases (a store other nodes
// share) to carry a cancel to the node running a session's turn, which
// cancels it with CancelRunning. It is best effort, as a cancel is: the
// turn it names may end first, and a cancel lost on its way (the owner
// cut off, or dead: its turn is resumed elsewhere) is not sent again.
type RemoteCancel interface {
	// CancelTurn sends the cancel of the session's running turn and
	// returns that turn; running is false, and nothing is sent, when no
	// live node runs one.
	CancelTurn(ctx context.Context, session int64) (turn int64, running bool, err error)
}

// cancelElsewhere sends the cancel of a session's turn to the node
// running it, and returns that turn.
func (r *Runtime) cancelElsewhere(ctx context.Context, rc RemoteCancel, addr, agentID, key string) (int64, error) {
	s, err := r.st.SessionByAddress(ctx, agentID, key)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("%w in %s", ErrNoTurn, addr)
	}
	if err != nil {
		return 0, fmt.Errorf("runtime: cancel %s: %w", addr, err)
	}
	turn, running, err := rc.CancelTurn(ctx, s.ID)
	if err != nil {
		return 0, fmt.Errorf("runtime: cancel %s: %w", addr, err)
	}
	if !running {
		return 0, fmt.Errorf("%w in %s", ErrNoTurn, addr)
	}
	r.log.Info("cancel sent to the node running the turn", "session", addr, "turn", turn)
	return turn, nil
}

// CancelRunning cancels turn of session if it runs on this node; a turn
// that ended already, or runs elsewhere, is left alone. It is how a
// cancel another node sent (RemoteCancel) takes effect, and does not
// block.
func (r *Runtime) CancelRunning(session, turn int64) {
	r.mu.Lock()
	sess := r.sessions[session]
	r.mu.Unlock()
	if sess == nil {
		return
	}
	sess.mu.Lock()
	cancel := sess.cancel
	if sess.turn != turn {
		cancel = nil
	}
	sess.mu.Unlock()
	if cancel != nil {
		r.log.Info("turn cancelled from another node", "session", sess.s.Address(), "turn", turn)
		cancel(engine.ErrCancelled)
	}
}
