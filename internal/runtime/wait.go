package runtime

import (
	"context"
	"fmt"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
)

// Wait waits for a turn to end and returns how it ended.
func (r *Runtime) Wait(ctx context.Context, turn int64) (event.TurnEndData, error) {
	ch := r.addWaiter(turn)
	// The state is read even if ctx is already done, so that a caller who
	// does not want to wait still learns whether the turn has ended.
	rctx := context.WithoutCancel(ctx)
	it, err := r.st.InboxItem(rctx, turn)
	if err != nil {
		r.dropWaiter(turn, ch)
		return event.TurnEndData{}, fmt.Errorf("runtime: turn %d: %w", turn, err)
	}
	if it.State == store.InboxDone {
		r.dropWaiter(turn, ch)
		return r.turnResult(rctx, it)
	}
	return r.await(ctx, turn, ch)
}

// waitFor waits for the end of a turn just submitted: on ch (from
// addWaiter), or, for a duplicate input (ch nil), by its id.
func (r *Runtime) waitFor(ctx context.Context, turn int64, ch chan event.TurnEndData) (event.TurnEndData, error) {
	if ch == nil {
		return r.Wait(ctx, turn)
	}
	return r.await(ctx, turn, ch)
}

// await waits for the end of a turn on ch (from addWaiter) until ctx is
// done, or until the runtime has stopped without ending the turn: then
// the error is ErrClosed, and the turn resumes at the next start.
//
// Once the runtime has stopped, that outcome is the answer even if ctx is
// done too: a server that stops serving right after the runtime cancels
// its requests, and the waiter must still say how the turn went.
func (r *Runtime) await(ctx context.Context, turn int64, ch chan event.TurnEndData) (event.TurnEndData, error) {
	// On a shared store the turn may run on another node (which holds the
	// session's lease): its end then comes from the events that node
	// committed (remoteEnds), or, if their notification was lost, from
	// the store, read every awaitPoll.
	var tick <-chan time.Time
	if r.shared() {
		t := time.NewTicker(awaitPoll)
		defer t.Stop()
		tick = t.C
	}
wait:
	for {
		select {
		case end := <-ch:
			return end, nil
		case <-ctx.Done():
			break wait
		case <-r.stopped:
			break wait
		case <-tick:
			if end, ok := r.endedElsewhere(ctx, turn); ok {
				r.dropWaiter(turn, ch)
				return end, nil
			}
		}
	}
	defer r.dropWaiter(turn, ch)
	select {
	case end := <-ch: // it ended as the runtime stopped, or as ctx ended
		return end, nil
	default:
	}
	if r.isStopped() {
		return event.TurnEndData{}, fmt.Errorf("%w: turn %d did not end before it stopped; it goes on when agentd starts again", ErrClosed, turn)
	}
	return event.TurnEndData{}, ctx.Err()
}

// awaitPoll is how often a waiter on a shared store looks for its turn's
// end in the store, in case the end another node committed did not reach
// this node's bus (a notification lost with the listener's connection,
// or the bus dropped remoteEnds as too slow).
const awaitPoll = 5 * time.Second

// remoteEnds tells the waiters of turns that other nodes ran how those
// ended, from the events the other nodes committed (the store's listener
// publishes them on the bus), until Close. A subscription the bus drops
// as too slow is made again: the waiters' poll finds what it missed.
func (r *Runtime) remoteEnds() {
	sub := r.bus.SubscribeRemote(0, 4096)
	defer func() { sub.Close() }()
	for {
		select {
		case <-r.quit:
			return
		case e, ok := <-sub.C:
			if !ok {
				sub = r.bus.SubscribeRemote(0, 4096)
				continue
			}
			if end, ok := endOf(e); ok {
				r.notify(e.Turn, end)
			}
		}
	}
}

// endOf reports whether e ends its turn, and how: a turn_end, or the one
// event of a reset or a silent message, which end without a turn.
func endOf(e event.Event) (event.TurnEndData, bool) {
	if e.Turn == 0 {
		return event.TurnEndData{}, false
	}
	switch e.Kind {
	case event.TurnEnd:
		var d event.TurnEndData
		return d, e.Decode(&d) == nil
	case event.Reset:
		return event.TurnEndData{Status: event.StatusDone}, true
	case event.SystemMessage:
		var d event.InputData
		return event.TurnEndData{Status: event.StatusDone}, e.Decode(&d) == nil && d.Silent
	}
	return event.TurnEndData{}, false
}

// endedElsewhere reads whether a turn has ended, and how, from the store.
func (r *Runtime) endedElsewhere(ctx context.Context, turn int64) (event.TurnEndData, bool) {
	it, err := r.st.InboxItem(ctx, turn)
	if err != nil || it.State != store.InboxDone {
		return event.TurnEndData{}, false
	}
	end, err := r.turnResult(ctx, it)
	return end, err == nil
}

// isStopped reports whether Close has stopped every worker.
func (r *Runtime) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// turnResult reads a finished turn's end from the log.
func (r *Runtime) turnResult(ctx context.Context, it store.InboxItem) (event.TurnEndData, error) {
	evs, err := r.st.TurnEvents(ctx, it.Session, it.ID)
	if err != nil {
		return event.TurnEndData{}, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == event.TurnEnd {
			var d event.TurnEndData
			err := evs[i].Decode(&d)
			return d, err
		}
	}
	// Silent messages and resets end without a turn.
	return event.TurnEndData{Status: event.StatusDone}, nil
}

func (r *Runtime) addWaiter(turn int64) chan event.TurnEndData {
	ch := make(chan event.TurnEndData, 1)
	r.mu.Lock()
	r.waiters[turn] = append(r.waiters[turn], ch)
	r.mu.Unlock()
	return ch
}

func (r *Runtime) dropWaiter(turn int64, ch chan event.TurnEndData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.waiters[turn]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(r.waiters, turn)
	} else {
		r.waiters[turn] = ws
	}
}

func (r *Runtime) notify(turn int64, end event.TurnEndData) {
	r.mu.Lock()
	ws := r.waiters[turn]
	delete(r.waiters, turn)
	r.mu.Unlock()
	for _, w := range ws {
		w <- end
	}
}
