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
	agentID, key, err := r.address(in.Session)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	if err := checkInput(&in); err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	if r.closing.Load() { // before the session is made
		return Receipt{}, event.TurnEndData{}, ErrClosed
	}
	sess, err := r.lookup(ctx, agentID, key)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	sub := r.bus.Subscribe(sess.s.ID, 256) // a reader that falls behind catches up from the log
	defer sub.Close()
	var ch chan event.TurnEndData
	rc, err := r.submit(ctx, in, &ch)
	if err != nil {
		return rc, event.TurnEndData{}, err
	}
	var last int64
	emit := func(e event.Event) error {
		// A turn's events; the session's state changes are the session's.
		if e.Turn != rc.Turn || e.Kind == event.State {
			return nil
		}
		if e.Seq > 0 {
			if e.Seq <= last {
				return nil
			}
			last = e.Seq
		}
		return fn(e)
	}
	// replay sends what fn has not seen of the turn's logged events; once
	// the turn has ended, it reads them even if ctx is done meanwhile.
	replay := func(ctx context.Context) error {
		evs, err := r.st.TurnEvents(ctx, sess.s.ID, rc.Turn)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := emit(e); err != nil {
				return err
			}
		}
		return nil
	}
	// A turn's events have consecutive sequence numbers, but parallel
	// writes may be published out of order: on a gap, read the log.
	live := func(e event.Event) error {
		if e.Turn == rc.Turn && e.Seq > 0 && last > 0 && e.Seq != last+1 {
			return replay(ctx)
		}
		return emit(e)
	}
	if ch == nil { // duplicate: the original's events and result
		end, err := r.Wait(ctx, rc.Turn)
		if err == nil {
			err = replay(context.WithoutCancel(ctx))
		}
		return rc, end, err
	}
	defer r.dropWaiter(rc.Turn, ch)
	c := sub.C
	for {
		select {
		case e, ok := <-c:
			if !ok {
				// Dropped as too slow: catch up from the log, then wait.
				if err := replay(ctx); err != nil {
					return rc, event.TurnEndData{}, err
				}
				c = nil
				continue
			}
			if err := live(e); err != nil {
				return rc, event.TurnEndData{}, err
			}
		case <-r.stopped:
			// Stopped: the turn's end, if it came, is in ch; else it
			// resumes at the next start and await says so.
			end, err := r.await(ctx, rc.Turn, ch)
			if err != nil {
				return rc, end, err
			}
			return rc, end, replay(context.WithoutCancel(ctx))
		case end := <-ch:
			// The turn's events were published before it ended; take what
			// is still buffered, then anything missed from the log.
			for drained := false; !drained && c != nil; {
				select {
				case e, ok := <-c:
					if !ok {
						drained = true
						break
					}
					if err := live(e); err != nil {
						return rc, end, err
					}
				default:
					drained = true
				}
			}
			return rc, end, replay(context.WithoutCancel(ctx))
		case <-ctx.Done():
			// The turn may have ended, or the runtime stopped, meanwhile.
			end, err := r.await(ctx, rc.Turn, ch)
			if err != nil {
				return rc, end, err
			}
			return rc, end, replay(context.WithoutCancel(ctx))
		}
	}
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
