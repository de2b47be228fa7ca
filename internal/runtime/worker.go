package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/store"
)

// queued is an inbox item in a session's queue.
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
	select {
	case r.idle <- sess: // a worker waiting for work takes it
		r.mu.Unlock()
		return
	default:
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go r.worker(sess)
}

// Workers that ran a session's queue wait a while for another session's
// before they exit: a turn's stack (engine, model client, store) is deep,
// and a new goroutine grows its stack to that size, copying it each time,
// on every turn. The stacks of at most maxIdleWorkers wait, each for at
// most workerIdle.
const (
	maxIdleWorkers = 16
	workerIdle     = time.Second
)

// worker runs sess's queue, then the queues of sessions kicked while it
// waits (see maxIdleWorkers). It exits when none came within workerIdle,
// when enough others wait, or when the runtime closes.
func (r *Runtime) worker(sess *session) {
	defer r.wg.Done()
	var timer *time.Timer
	for {
		r.work(sess)
		if r.idleWorkers.Add(1) > maxIdleWorkers {
			r.idleWorkers.Add(-1)
			return
		}
		if timer == nil {
			timer = time.NewTimer(workerIdle)
			defer timer.Stop()
		} else {
			timer.Reset(workerIdle)
		}
		select {
		case sess = <-r.idle:
			r.idleWorkers.Add(-1)
			timer.Stop()
		case <-timer.C:
			r.idleWorkers.Add(-1)
			return
		case <-r.quit:
			r.idleWorkers.Add(-1)
			return
		}
	}
}

// work runs a session's queue in order while the node holds the
// session's lease, then returns.
func (r *Runtime) work(sess *session) {
	for {
		if !r.own(sess) {
			return
		}
		q, ok := r.next(sess)
		if !ok {
			return
		}
		if !r.gate.wait(r.ctx) {
			continue
		}
		select {
		case r.sem <- struct{}{}:
		case <-r.ctx.Done():
			continue
		}
		end, err := r.process(sess, q)
		<-r.sem
		if r.fenced(sess, err) {
			continue // own takes the lease again, or ends the worker
		}
		if err != nil {
			r.failed(sess, q, err)
			continue
		}
		sess.mu.Lock()
		sess.queue = sess.queue[1:]
		empty := len(sess.queue) == 0
		sess.mu.Unlock()
		// A session whose queue is empty is idle before its waiters hear
		// of the end, so that one closed right after its reply is not busy.
		idle := empty && r.release(sess)
		r.ended(sess, q.item, end)
		r.notify(q.item.ID, end)
		if idle {
			return
		}
	}
}

// next returns the item at the head of sess's queue; ok is false, and the
// worker is done, when there is none or the runtime is closing: the
// running turn finished, and what is queued waits in the inbox for the
// next start.
func (r *Runtime) next(sess *session) (q queued, ok bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if len(sess.queue) == 0 || r.ctx.Err() != nil || r.closing.Load() || r.paused(sess) && !sess.stopped {
		sess.working = false
		return queued{}, false
	}
	return sess.queue[0], true
}

// ended calls Options.Ended for an item whose end is a turn_end: every
// item but a reset and a silent message, which end with their one event
// unless they were refused (a refusal is a turn_end with an error). A
// crash before the call loses it: the end is in the log.
func (r *Runtime) ended(sess *session, it store.InboxItem, end event.TurnEndData) {
	if it.Kind == event.Reset && end.Status == event.StatusDone && r.o.Cleared != nil {
		r.o.Cleared(sess.s)
	}
	if r.o.Ended == nil {
		return
	}
	if (it.Kind == event.Reset || it.Silent) && end.Status == event.StatusDone {
		return
	}
	r.o.Ended(sess.s, it, end)
}

// failed deals with an item that could not be processed: it is dropped if
// its input never became durable, left for the next start if the runtime
// is stopping, and otherwise retried after a pause.
func (r *Runtime) failed(sess *session, q queued, err error) {
	if q.durable != nil && q.durable() != nil {
		// The input never became durable and its sender was told so.
		sess.mu.Lock()
		sess.queue = sess.queue[1:]
		r.setConv(sess, nil)
		sess.mu.Unlock()
		return
	}
	if errors.Is(err, engine.ErrShutdown) || r.ctx.Err() != nil {
		return // left for the next start
	}
	r.log.Error("turn failed; will retry", "session", sess.s.Address(), "turn", q.item.ID, "err", err)
	// The log could not be written. Keep the item and retry after a pause
	// rather than lose or reorder it; the retry resumes from the log.
	select {
	case <-time.After(time.Second):
	case <-r.ctx.Done():
	}
	sess.mu.Lock()
	sess.queue[0].recovered = true
	r.setConv(sess, nil)
	sess.mu.Unlock()
}

// process handles one inbox item and returns how it ended; the caller
// tells the waiters. Resets, silent messages and inputs that can no longer
// run end without the engine.
func (r *Runtime) process(sess *session, q queued) (event.TurnEndData, error) {
	it := q.item
	done := event.TurnEndData{Status: event.StatusDone}
	switch {
	case sess.isStopped():
		return r.refuse(sess, it.ID, StoppedReason, store.StateClosed)
	case it.Kind == event.Reset:
		return r.finish(sess, it.ID, event.Reset, event.MarkerData{Name: "reset", Reason: it.Text}, "", done)
	case it.Silent:
		d := event.InputData{Text: it.Text, Source: it.Source, Origin: it.Origin, Silent: true, IdempotencyKey: it.IdempotencyKey, Images: it.Images, Hops: it.Hops}
		return r.finish(sess, it.ID, event.SystemMessage, d, "", done)
	case sess.state() == store.StateClosed:
		// Closed after this input was accepted: end it rather than reopen.
		return r.refuse(sess, it.ID, ClosedReason, store.StateClosed)
	}
	def, ok := r.o.Agents.Get(sess.s.Agent)
	if !ok {
		// The agent's file was removed after the input was accepted: end the
		// turn with an error rather than lose the input silently.
		return r.refuse(sess, it.ID, fmt.Sprintf("agent %q is no longer defined", sess.s.Agent), "")
	}
	t, err := r.newTurn(sess, q, def)
	if err != nil {
		return event.TurnEndData{}, err
	}
	return r.runTurn(sess, t)
}

// finish completes inbox item id without the engine: an event of kind with
// payload is logged with the item's completion (and the session's new
// state, if not ""), in one batch, and the item ends as end.
func (r *Runtime) finish(sess *session, id int64, kind event.Kind, payload any, state string, end event.TurnEndData) (event.TurnEndData, error) {
	ev := event.New(sess.s.ID, id, kind, payload)
	b := &store.Batch{Session: sess.s.ID, Events: []event.Event{ev}, Done: []int64{id}, State: state, Epoch: r.epochOf(sess)}
	if err := r.commit(r.ctx, sess, b); err != nil {
		return event.TurnEndData{}, err
	}
	return end, nil
}

// refuse ends the turn of an accepted input with an error, without the
// engine.
func (r *Runtime) refuse(sess *session, id int64, reason, state string) (event.TurnEndData, error) {
	end := event.TurnEndData{Status: event.StatusError, Reason: reason}
	return r.finish(sess, id, event.TurnEnd, end, state, end)
}

// newTurn builds the turn of q for the engine: its log, its context (for a
// turn resumed after a restart, without its own events) and the agent's
// spending today.
func (r *Runtime) newTurn(sess *session, q queued, def *agent.Definition) (*engine.Turn, error) {
	ctx, it := r.ctx, q.item
	t := &engine.Turn{Log: turnLog{r, sess}, ID: it.ID, Session: sess.s, Agent: def, Item: it, Durable: q.durable, Recovered: q.recovered}
	if q.recovered {
		prior, err := r.st.TurnEvents(ctx, sess.s.ID, it.ID)
		if err != nil {
			return nil, err
		}
		t.Prior = prior
	}
	var err error
	if len(t.Prior) > 0 {
		err = r.resumedContext(ctx, sess, t)
	} else {
		t.Context, t.Marks, t.Tokens, t.Skills, err = r.context(ctx, sess)
	}
	if err != nil {
		return nil, err
	}
	if err := r.pay(ctx, sess, t); err != nil {
		return nil, err
	}
	return t, nil
}

// pay sets who pays for t: its account and payer (Options.Accounts), and
// what its payer spent today, for the day budget. The day limit is the
// tighter of the agent's own and its payer's (a sub-agent is paid by its
// parent's day), held against what the payer spent.
func (r *Runtime) pay(ctx context.Context, sess *session, t *engine.Turn) error {
	def := t.Agent
	if r.o.Accounts != nil {
		a, payer, err := r.o.Accounts.For(ctx, sess.s, t.ID, def, def.Budgets)
		if err != nil {
			return fmt.Errorf("runtime: the account of turn %d: %w", t.ID, err)
		}
		t.Account, t.Payer = a, payer
	}
	payer, limit := def.ID, def.Budgets.MaxUSDPerDay
	if t.Payer != "" && t.Payer != def.ID {
		payer = t.Payer
		if p, ok := r.o.Agents.Get(payer); ok && p.Budgets.MaxUSDPerDay > 0 && (limit <= 0 || p.Budgets.MaxUSDPerDay < limit) {
			limit = p.Budgets.MaxUSDPerDay
		}
	}
	if limit <= 0 {
		return nil
	}
	y, m, d := time.Now().UTC().Date()
	u, err := r.st.UsageSince(ctx, payer, time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
	if err != nil {
		return err
	}
	t.SpentToday = u.CostUSD
	if limit != def.Budgets.MaxUSDPerDay {
		own := *def // as the engine tightens a definition's budgets for one input
		own.Budgets.MaxUSDPerDay = limit
		t.Agent = &own
	}
	return nil
}

// resumedContext sets the context of a turn resumed with its prior events
// from the log: the session's context up to the turn's first event. The
// cached context is not used: it may hold the turn's own events.
func (r *Runtime) resumedContext(ctx context.Context, sess *session, t *engine.Turn) error {
	evs, err := r.st.ContextEvents(ctx, sess.s.ID)
	if err != nil {
		return fmt.Errorf("runtime: load context: %w", err)
	}
	cut := len(evs)
	for cut > 0 && evs[cut-1].Seq >= t.Prior[0].Seq {
		cut--
	}
	var c engine.Conversation
	c.Add(engine.FromSummary(evs[:cut])...)
	t.Context, t.Marks, t.Skills = c.Messages(), c.Marks(), c.Skills()
	return nil
}

// runTurn has the engine run (or compact) t, cancellable by Cancel and by
// an interrupting input while it runs.
func (r *Runtime) runTurn(sess *session, t *engine.Turn) (event.TurnEndData, error) {
	run := r.o.Engine.Run
	if t.Item.Kind == event.CompactRequest {
		c, ok := r.o.Engine.(Compactor)
		if !ok {
			return event.TurnEndData{}, fmt.Errorf("runtime: this engine cannot compact")
		}
		run = c.Compact
	}
	tctx, cancel := context.WithCancelCause(r.ctx)
	if r.shared() {
		// The writes its tools make to the session's log (working
		// memory) are fenced by the lease as its own batches are.
		tctx = store.WithEpoch(tctx, sess.s.ID, r.epochOf(sess))
	}
	sess.mu.Lock()
	sess.cancel, sess.turn = cancel, t.ID
	sess.mu.Unlock()
	r.bus.Publish(event.Event{Session: sess.s.ID, Turn: t.ID, Kind: event.TurnStart, Time: time.Now().UTC()})
	// The store sees the session active only if the turn writes before it
	// ends; watchers see it at once.
	r.publishState(sess, t.ID, store.StateActive)
	end, err := run(tctx, t)
	cancel(nil)
	sess.mu.Lock()
	sess.cancel, sess.turn = nil, 0
	sess.mu.Unlock()
	if err != nil {
		return event.TurnEndData{}, err
	}
	return end, nil
}
