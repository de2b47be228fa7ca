package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/store"
)

type queued struct {
	item      store.InboxItem
	recovered bool // from a previous process: may have events already
	// durable waits until the item is durable; nil if it was when queued.
	durable func() error
}

// kick starts a worker for sess if it has work and none is running.
func (r *Runtime) kick(sess *session) {
	sess.mu.Lock()
	if sess.working || len(sess.queue) == 0 {
		sess.mu.Unlock()
		return
	}
	sess.working = true
	sess.mu.Unlock()
	r.mu.Lock()
	if r.closed {
		// Closed: the item stays pending in the inbox for the next start.
		r.mu.Unlock()
		sess.mu.Lock()
		sess.working = false
		sess.mu.Unlock()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go r.work(sess)
}

// work runs a session's queue in order, then exits.
func (r *Runtime) work(sess *session) {
	defer r.wg.Done()
	for {
		sess.mu.Lock()
		// Closing: the running turn finished; what is queued waits in the
		// inbox for the next start.
		if len(sess.queue) == 0 || r.ctx.Err() != nil || r.closing.Load() {
			sess.working = false
			sess.mu.Unlock()
			return
		}
		q := sess.queue[0]
		sess.mu.Unlock()

		select {
		case r.sem <- struct{}{}:
		case <-r.ctx.Done():
			continue
		}
		end, err := r.process(sess, q)
		<-r.sem
		if err != nil && q.durable != nil && q.durable() != nil {
			// The input never became durable and its sender was told so.
			sess.mu.Lock()
			sess.queue = sess.queue[1:]
			r.setConv(sess, nil)
			sess.mu.Unlock()
			continue
		}
		if err != nil {
			if errors.Is(err, engine.ErrShutdown) || r.ctx.Err() != nil {
				continue // left for the next start
			}
			r.log.Error("turn failed; will retry", "session", sess.s.Address(), "turn", q.item.ID, "err", err)
			// The log could not be written. Keep the item and retry after a
			// pause rather than lose or reorder it.
			select {
			case <-time.After(time.Second):
			case <-r.ctx.Done():
			}
			sess.mu.Lock()
			sess.queue[0].recovered = true
			r.setConv(sess, nil)
			sess.mu.Unlock()
			continue
		}
		sess.mu.Lock()
		sess.queue = sess.queue[1:]
		// A session whose queue is empty is idle before its waiters hear
		// of the end, so that one closed right after its reply is not busy.
		idle := len(sess.queue) == 0
		if idle {
			sess.working = false
		}
		sess.mu.Unlock()
		r.notify(q.item.ID, end)
		if idle {
			return
		}
	}
}

// process handles one inbox item and returns how it ended; the caller
// tells the waiters.
func (r *Runtime) process(sess *session, q queued) (event.TurnEndData, error) {
	ctx := r.ctx
	it := q.item
	switch {
	case it.Kind == event.Reset:
		ev := event.New(sess.s.ID, it.ID, event.Reset, event.MarkerData{Name: "reset", Reason: it.Text})
		if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: []event.Event{ev}, Done: []int64{it.ID}}); err != nil {
			return event.TurnEndData{}, err
		}
		return event.TurnEndData{Status: event.StatusDone}, nil
	case it.Silent:
		ev := event.New(sess.s.ID, it.ID, event.SystemMessage, event.InputData{Text: it.Text, Source: it.Source, Origin: it.Origin, Silent: true, IdempotencyKey: it.IdempotencyKey, Images: it.Images})
		if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: []event.Event{ev}, Done: []int64{it.ID}}); err != nil {
			return event.TurnEndData{}, err
		}
		return event.TurnEndData{Status: event.StatusDone}, nil
	}
	var err error
	if sess.state() == store.StateClosed {
		// Closed after this input was accepted: end it rather than reopen.
		end := event.TurnEndData{Status: event.StatusError, Reason: "the session was closed before this input's turn"}
		ev := event.New(sess.s.ID, it.ID, event.TurnEnd, end)
		if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: []event.Event{ev}, Done: []int64{it.ID}, State: store.StateClosed}); err != nil {
			return event.TurnEndData{}, err
		}
		return end, nil
	}
	def, ok := r.o.Agents.Get(sess.s.Agent)
	if !ok {
		// The agent's file was removed after the input was accepted: end the
		// turn with an error rather than lose the input silently.
		end := event.TurnEndData{Status: event.StatusError, Reason: fmt.Sprintf("agent %q is no longer defined", sess.s.Agent)}
		ev := event.New(sess.s.ID, it.ID, event.TurnEnd, end)
		if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: []event.Event{ev}, Done: []int64{it.ID}}); err != nil {
			return event.TurnEndData{}, err
		}
		return end, nil
	}
	t := &engine.Turn{Log: turnLog{r, sess}, ID: it.ID, Session: sess.s, Agent: def, Item: it, Durable: q.durable, Recovered: q.recovered}
	if q.recovered {
		prior, err := r.st.TurnEvents(ctx, sess.s.ID, it.ID)
		if err != nil {
			return event.TurnEndData{}, err
		}
		t.Prior = prior
	}
	if len(t.Prior) > 0 {
		// The context must not include this turn's own events.
		evs, err := r.st.ContextEvents(ctx, sess.s.ID)
		if err != nil {
			return event.TurnEndData{}, fmt.Errorf("runtime: load context: %w", err)
		}
		cut := len(evs)
		for cut > 0 && evs[cut-1].Seq >= t.Prior[0].Seq {
			cut--
		}
		var c engine.Conversation
		c.Add(engine.FromSummary(evs[:cut])...)
		t.Context, t.Marks, t.Skills = c.Messages(), c.Marks(), c.Skills()
	} else if t.Context, t.Marks, t.Tokens, t.Skills, err = r.context(ctx, sess); err != nil {
		return event.TurnEndData{}, err
	}
	if def.Budgets.MaxUSDPerDay > 0 {
		y, m, d := time.Now().UTC().Date()
		u, err := r.st.UsageSince(ctx, def.ID, time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
		if err != nil {
			return event.TurnEndData{}, err
		}
		t.SpentToday = u.CostUSD
	}
	tctx, cancel := context.WithCancelCause(ctx)
	sess.mu.Lock()
	sess.cancel = cancel
	sess.mu.Unlock()
	r.bus.Publish(event.Event{Session: sess.s.ID, Turn: it.ID, Kind: event.TurnStart, Time: time.Now().UTC()})
	// The store sees the session active only if the turn writes before it
	// ends; watchers see it at once.
	r.publishState(sess, it.ID, store.StateActive)
	var end event.TurnEndData
	if it.Kind == event.CompactRequest {
		c, ok := r.o.Engine.(Compactor)
		if !ok {
			cancel(nil)
			return event.TurnEndData{}, fmt.Errorf("runtime: this engine cannot compact")
		}
		end, err = c.Compact(tctx, t)
	} else {
		end, err = r.o.Engine.Run(tctx, t)
	}
	cancel(nil)
	sess.mu.Lock()
	sess.cancel = nil
	sess.mu.Unlock()
	if err != nil {
		return event.TurnEndData{}, err
	}
	return end, nil
}
