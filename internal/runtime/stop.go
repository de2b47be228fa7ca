package runtime

import (
	"context"
	"errors"
	"fmt"

	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/store"
)

// StoppedReason is the reason of the turn_end of an input a stopped
// agent's session refused.
const StoppedReason = "the agent was stopped"

// ClosedReason is the reason of the turn_end of an input whose session
// was closed after it accepted the input (on another node, on a shared
// store): the input is refused rather than the session reopened.
const ClosedReason = "the session was closed before this input's turn"

// Stop stops a session's agent for good: it cancels the running turn (on
// another node too on a shared store, as Cancel does), ends every queued
// input, a paused agent's too, with an error (StoppedReason), logs a
// "stopped" marker with reason and leaves the session closed: later
// inputs are refused with ErrSessionClosed until it is reopened (Reopen,
// or an input with Reopen). It returns once that is durable. Stopping a
// closed session with nothing queued changes nothing, so Stop may be
// called again after a crash, or after it failed (a session being
// stopped refuses input meanwhile). A session that does not exist is
// store.ErrNotFound.
//
// On a shared store, a turn another node runs is cancelled there and
// waited for; the inputs queued behind it on that node are not refused:
// that node runs them, and Stop closes the session once it can take the
// lease (ErrBusy after Options.OutsideWait while that node holds it).
func (r *Runtime) Stop(ctx context.Context, addr, reason string) error {
	sess, err := r.existing(ctx, addr)
	if err != nil {
		return err
	}
	sess.mu.Lock()
	if sess.s.State == store.StateClosed && !sess.working && len(sess.queue) == 0 {
		sess.mu.Unlock()
		return nil
	}
	sess.stopped = true
	cancel := sess.cancel
	var last int64
	if n := len(sess.queue); n > 0 {
		last = sess.queue[n-1].item.ID
	}
	sess.mu.Unlock()
	switch rc, ok := r.leases.(RemoteCancel); {
	case cancel != nil:
		cancel(engine.ErrCancelled)
	case ok && r.shared():
		agentID, key, _ := r.address(addr)
		turn, err := r.cancelElsewhere(ctx, rc, addr, agentID, key)
		if err != nil && !errors.Is(err, ErrNoTurn) {
			return err
		}
		if turn != 0 { // the session's lease is free for the marker once it ends
			if _, err := r.Wait(ctx, turn); err != nil {
				return fmt.Errorf("runtime: stop %s: %w", addr, err)
			}
		}
	}
	if last != 0 {
		r.kick(sess) // a paused agent's queue runs too: to be refused
		if _, err := r.Wait(ctx, last); err != nil {
			return fmt.Errorf("runtime: stop %s: %w", addr, err)
		}
	}
	return r.outside(ctx, sess, func(epoch int64) error {
		ev := event.New(sess.s.ID, 0, event.Marker, event.MarkerData{Name: "stopped", Reason: reason})
		return r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, State: store.StateClosed, Events: []event.Event{ev}, Epoch: epoch})
	})
}

// isStopped reports whether Stop was called for the session since it was
// last reopened (or loaded): its queued inputs are refused.
func (s *session) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}
