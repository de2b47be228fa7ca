package runtime

import (
	"context"

	"agentd/internal/event"
	"agentd/internal/store"
)

// Stream submits an input and calls fn with each event of its turn as it
// happens — live text deltas and every logged event — until the turn ends.
// If the bus drops the subscription (fn too slow), the rest comes from the
// log, so fn sees every logged event of the turn exactly once, in order.
func (r *Runtime) Stream(ctx context.Context, in Input, fn func(event.Event) error) (Receipt, event.TurnEndData, error) {
	sess, err := r.accept(ctx, &in)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	sub := r.bus.Subscribe(sess.s.ID, 256) // a reader that falls behind catches up from the log
	defer sub.Close()
	var w waiting
	rc, err := r.submitTo(ctx, sess, in, &w)
	if err != nil {
		return rc, event.TurnEndData{}, err
	}
	ch := w.end
	ts := &turnStream{r: r, session: sess.s.ID, turn: rc.Turn, fn: fn}
	if ch == nil { // duplicate: the original's events and result
		end, err := r.Wait(ctx, rc.Turn)
		if err == nil {
			err = ts.replay(context.WithoutCancel(ctx))
		}
		return rc, end, err
	}
	defer r.dropWaiter(rc.Turn, ch)
	end, err := ts.follow(ctx, sub.C, ch)
	return rc, end, err
}

// turnStream delivers one turn's events to fn: live from the bus, and
// from the log when the bus dropped the subscription or published out of
// order, each logged event exactly once, in order.
type turnStream struct {
	r       *Runtime
	session int64
	turn    int64
	fn      func(event.Event) error
	last    int64 // the sequence number of the last logged event delivered
}

// follow delivers the turn's events from c, the session's subscription,
// until the turn's end comes on ch (from addWaiter), ctx is done or the
// runtime stops.
func (s *turnStream) follow(ctx context.Context, c <-chan event.Event, ch chan event.TurnEndData) (event.TurnEndData, error) {
	for {
		select {
		case e, ok := <-c:
			if !ok {
				// Dropped as too slow: catch up from the log, then wait.
				if err := s.replay(ctx); err != nil {
					return event.TurnEndData{}, err
				}
				c = nil
				continue
			}
			if err := s.live(ctx, e); err != nil {
				return event.TurnEndData{}, err
			}
		case end := <-ch:
			// The turn's events were published before it ended; take what
			// is still buffered, then anything missed from the log.
			if err := s.drain(ctx, c); err != nil {
				return end, err
			}
			return end, s.replay(context.WithoutCancel(ctx))
		case <-s.r.stopped:
			// Stopped: the turn's end, if it came, is in ch; else it
			// resumes at the next start and await says so.
			return s.finish(ctx, ch)
		case <-ctx.Done():
			// The turn may have ended, or the runtime stopped, meanwhile.
			return s.finish(ctx, ch)
		}
	}
}

// finish returns the turn's end when following it stopped early, and
// delivers the rest of its logged events if it ended.
func (s *turnStream) finish(ctx context.Context, ch chan event.TurnEndData) (event.TurnEndData, error) {
	end, err := s.r.await(ctx, s.turn, ch)
	if err != nil {
		return end, err
	}
	return end, s.replay(context.WithoutCancel(ctx))
}

// drain delivers what is still buffered in c (nil: nothing).
func (s *turnStream) drain(ctx context.Context, c <-chan event.Event) error {
	for c != nil {
		select {
		case e, ok := <-c:
			if !ok {
				return nil
			}
			if err := s.live(ctx, e); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// emit delivers e if it is one of the turn's events that fn has not seen;
// the session's state changes are the session's, not the turn's.
func (s *turnStream) emit(e event.Event) error {
	if e.Turn != s.turn || e.Kind == event.State {
		return nil
	}
	if e.Seq > 0 {
		if e.Seq <= s.last {
			return nil
		}
		s.last = e.Seq
	}
	return s.fn(e)
}

// replay delivers what fn has not seen of the turn's logged events; once
// the turn has ended, it is called with a ctx that is never done, to read
// them even if the caller's ctx is done meanwhile.
func (s *turnStream) replay(ctx context.Context) error {
	evs, err := s.r.st.TurnEvents(ctx, s.session, s.turn)
	if err != nil {
		return err
	}
	for _, e := range evs {
		if err := s.emit(e); err != nil {
			return err
		}
	}
	return nil
}

// live delivers an event from the bus. A turn's events have consecutive
// sequence numbers, but parallel writes may be published out of order: on
// a gap, the log is read.
func (s *turnStream) live(ctx context.Context, e event.Event) error {
	if e.Turn == s.turn && e.Seq > 0 && s.last > 0 && e.Seq != s.last+1 {
		return s.replay(ctx)
	}
	return s.emit(e)
}

// Events returns a session's logged events after a sequence number.
func (r *Runtime) Events(ctx context.Context, addr string, after int64, limit int) (store.Session, []event.Event, error) {
	agentID, key, err := ParseAddress(addr)
	if err != nil {
		return store.Session{}, nil, err
	}
	s, err := r.st.SessionByAddress(ctx, agentID, key)
	if err != nil {
		return s, nil, sessionErr(addr, err)
	}
	evs, err := r.st.Events(ctx, s.ID, after, limit)
	return s, evs, err
}
