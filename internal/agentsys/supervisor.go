package agentsys

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// ended is a turn end the runtime told the System of.
type ended struct {
	sess     store.Session
	item     store.InboxItem
	end      event.TurnEndData
	children bool // the turn started sub-agents here
	// refused is a report that its parent's session accepted and then
	// refused at its turn's start (item.Origin is the child).
	refused bool
	// recheck asks for the instance of sess.Agent to be settled again
	// after the report of a sub-agent of it was recorded (a silent one
	// starts no turn): sess and end are then read from the store.
	recheck bool
}

// supervisor finishes the instances whose turns end: it moves their
// states, closes a task's session when its work is done, reports its end
// to its parent once, and stops the sub-agents of a cancelled turn. It is
// one goroutine (Run) fed by Ended through a buffered channel; an end the
// channel has no room for is found by the periodic sweep.
type supervisor struct {
	s     *System
	ch    chan ended
	stop  chan struct{}
	retry map[string]ended // sessions to close again: they were busy (Run's own)
	lead  store.Lead       // held while this node sweeps (Run's own)

	mu     sync.Mutex // guards closed and wg's Add
	closed bool
	wg     sync.WaitGroup
}

// Supervisor tuning.
const (
	endedBuffer = 4096
	// busyRetry is how soon a session that was busy when its task ended
	// is closed again.
	busyRetry = 100 * time.Millisecond
)

func newSupervisor(s *System) *supervisor {
	return &supervisor{s: s, ch: make(chan ended, endedBuffer), stop: make(chan struct{}), retry: make(map[string]ended)}
}

// Ended is the runtime's hook, called after a turn's end is durable with
// no runtime lock held. It does not block: the end goes to the
// supervisor, or is dropped for the sweep to find. A turn of an agent
// that is not an instance and started no sub-agents is skipped at once.
func (s *System) Ended(sess store.Session, it store.InboxItem, end event.TurnEndData) {
	children := s.startedChildren(it.ID)
	if !children {
		s.ledger.drop(accountKey(sess.ID, it.ID))
	}
	mine := store.IsInstanceID(sess.Agent) && sess.Key == "main" && !it.Silent
	refused := refusedReport(it, end)
	if !mine && !refused && !(children && end.Status == event.StatusCancelled) {
		return
	}
	select {
	case s.sup.ch <- ended{sess: sess, item: it, end: end, children: children, refused: refused}:
	default:
		s.log.Warn("agent supervisor busy: the sweep will finish the turn's agent", "session", sess.Agent+"/"+sess.Key)
	}
}

// refusedReport reports whether it is an agent's report that its session
// accepted and then refused at its turn's start, without taking it in:
// the session was stopped or closed meanwhile.
func refusedReport(it store.InboxItem, end event.TurnEndData) bool {
	return it.Source == reportSource && store.IsInstanceID(it.Origin) && refusedAtStart(end)
}

// refusedAtStart reports whether end is that of an input its session
// accepted and then refused before its turn, stopped or closed.
func refusedAtStart(end event.TurnEndData) bool {
	return end.Status == event.StatusError && (end.Reason == runtime.StoppedReason || end.Reason == runtime.ClosedReason)
}

// Run runs the supervisor until ctx ends or Close: it sweeps at once,
// then handles turn ends as they come and sweeps every Options.Sweep.
func (s *System) Run(ctx context.Context) error {
	p := s.sup
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	defer func() {
		if p.lead != nil {
			p.lead.Release()
			p.lead = nil
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	p.sweep(ctx, true)
	tick := time.NewTicker(s.o.Sweep)
	defer tick.Stop()
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-p.ch:
			p.handle(ctx, e)
		case <-tick.C:
			p.sweep(ctx, false)
		case <-again:
			again = nil
			retry := p.retry
			p.retry = make(map[string]ended)
			for _, e := range retry {
				p.handle(ctx, e)
			}
		}
		if again == nil && len(p.retry) > 0 {
			again = time.After(busyRetry)
		}
	}
}

// Close stops the supervisor and waits for it.
func (s *System) Close() error {
	p := s.sup
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.stop)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// handle acts on one turn end.
func (p *supervisor) handle(ctx context.Context, e ended) {
	s := p.s
	if e.refused {
		// The child's report may be recorded as delivered (its submit was
		// accepted), or not yet: either way it was refused.
		if _, err := s.st.RecordRefusal(ctx, e.item.Origin, "report refused: "+e.end.Reason); err != nil && ctx.Err() == nil {
			s.log.Warn("record a refused report", "agent", e.item.Origin, "err", err)
		}
		if e.item.Silent {
			return
		}
	}
	if e.children && e.end.Status == event.StatusCancelled {
		if err := s.stopTurnChildren(ctx, e.sess.Agent, e.item.ID); err != nil {
			s.log.Warn("stop the sub-agents of a cancelled turn", "session", e.sess.Agent+"/"+e.sess.Key, "turn", e.item.ID, "err", err)
		}
	}
	if !store.IsInstanceID(e.sess.Agent) || e.sess.Key != "main" {
		return
	}
	if e.recheck {
		var ok bool
		if e, ok = s.lastEnded(ctx, e.sess.Agent); !ok {
			return
		}
	}
	busy, err := s.settle(ctx, e.sess, e.end)
	switch {
	case busy:
		p.retry[e.sess.Agent] = e
	case err != nil && ctx.Err() == nil:
		s.log.Warn("finish agent", "agent", e.sess.Agent, "err", err)
	}
}

// lastEnded is the last turn end of agentID's main session, as the hook
// would have handed it; ok is false if there is none (yet) or it cannot
// be read (the sweep finds it again).
func (s *System) lastEnded(ctx context.Context, agentID string) (e ended, ok bool) {
	sess, err := s.st.SessionByAddress(ctx, agentID, "main")
	if err != nil {
		return ended{}, false
	}
	end, ok, err := s.lastEnd(ctx, sess)
	if err != nil || !ok {
		return ended{}, false
	}
	return ended{sess: sess, end: end}, true
}

// recheck hands the supervisor in's parent to settle again, in's report
// being recorded: a task that waited for it may finish now. A full
// channel drops it for the sweep.
func (s *System) recheck(in store.Instance) {
	if !store.IsInstanceID(in.Parent) || in.ReportTo != mainSession(in.Parent) {
		return
	}
	select {
	case s.sup.ch <- ended{sess: store.Session{Agent: in.Parent, Key: "main"}, recheck: true}:
	default:
	}
}

// sweep looks for the work turn ends did not bring (a full channel, a
// crash): it is Recover's, all of it at start.
func (p *supervisor) sweep(ctx context.Context, all bool) {
	p.s.ledger.sweep()
	ok, fresh := p.leads(ctx)
	if !ok {
		return
	}
	all = all || fresh // a node that just took the lead makes a full pass
	if err := p.s.recoverOnce(ctx, all); err != nil && ctx.Err() == nil {
		p.s.log.Warn("agent sweep", "err", err)
	}
}

// leads reports whether this node sweeps: always without Options.Lead,
// else while it holds the lead, which it tries to take; fresh reports
// that it has just taken it.
func (p *supervisor) leads(ctx context.Context) (ok, fresh bool) {
	if p.s.o.Lead == nil {
		return true, false
	}
	if p.lead != nil {
		select {
		case <-p.lead.Lost():
			p.lead = nil
		default:
			return true, false
		}
	}
	l, err := p.s.o.Lead.TryLead(ctx, LeadRole)
	if err != nil && ctx.Err() == nil {
		p.s.log.Warn("agent sweep: lead", "err", err)
	}
	p.lead = l
	return l != nil, l != nil
}

// settle moves the instance of sess on after a turn of it ended with end:
// running while non-silent input waits, or while a task that ended done
// has sub-agents whose reports to it have not been recorded (it would
// refuse them closed; each recorded report settles it again: recheck);
// else idle, or, for a task, done or failed (its session closed, its end
// reported). busy reports that the session could not be closed yet (its
// worker still holds it).
func (s *System) settle(ctx context.Context, sess store.Session, end event.TurnEndData) (busy bool, err error) {
	in, err := s.st.Instance(ctx, sess.Agent)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	b := behaviours[in.Type]
	if store.AgentEnded(in.State) {
		return false, s.endOf(ctx, in)
	}
	// A task that ended done waits for its sub-agents' reports (one that
	// failed does not: endOf stops them). Read before its inbox: a report
	// is in the inbox before it is recorded, so a report recorded by
	// now is among the pending items read next.
	if b.closesWhenDone && end.Status == event.StatusDone && sess.State != store.StateClosed {
		if waits, err := s.awaitsReports(ctx, in); err != nil || waits {
			if err == nil {
				_, err = s.st.SetInstanceState(ctx, in.ID, store.AgentRunning, "", 0)
			}
			return false, err
		}
	}
	pending, err := s.st.Pending(ctx, sess.ID)
	if err != nil {
		return false, err
	}
	for _, it := range pending {
		if !it.Silent {
			_, err := s.st.SetInstanceState(ctx, in.ID, store.AgentRunning, "", 0)
			return false, err
		}
	}
	if !b.closesWhenDone {
		_, err := s.st.SetInstanceState(ctx, in.ID, store.AgentIdle, "", 0)
		return false, err
	}
	if sess.State != store.StateClosed { // closed already: a crash came before its row ended
		if err := s.rt.CloseSession(ctx, mainSession(in.Agent)); errors.Is(err, runtime.ErrBusy) {
			return true, nil
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
	}
	state, result := store.AgentDone, end.Reply
	if end.Status != event.StatusDone {
		state, result = store.AgentFailed, failure(end)
	}
	if _, err := s.st.SetInstanceState(ctx, in.ID, state, result, 0); err != nil {
		return false, err
	}
	if in, err = s.st.Instance(ctx, in.ID); err != nil {
		return false, err
	}
	return false, s.endOf(ctx, in)
}

// awaitsReports reports whether in has a sub-agent that reports to its
// main session and has not ended, or whose report is not recorded yet.
func (s *System) awaitsReports(ctx context.Context, in store.Instance) (bool, error) {
	addr := mainSession(in.Agent)
	f := store.AgentFilter{Parent: in.Agent, Limit: store.MaxInstanceLimit}
	for {
		rows, next, err := s.st.Instances(ctx, f)
		if err != nil {
			return false, err
		}
		for _, c := range rows {
			if c.Report != "" && c.ReportTo == addr && (!store.AgentEnded(c.State) || c.ReportedAt.IsZero()) {
				return true, nil
			}
		}
		if next == "" {
			return false, nil
		}
		f.Before = next
	}
}

// failure says why a turn that did not end done failed.
func failure(end event.TurnEndData) string {
	switch {
	case end.Reason != "" && end.Budget != "":
		return fmt.Sprintf("%s (%s): %s", end.Status, end.Budget, end.Reason)
	case end.Reason != "":
		return end.Status + ": " + end.Reason
	}
	return end.Status
}

// endOf does what follows an instance's end: its report, and the stop of
// its sub-agents if it failed or was stopped.
func (s *System) endOf(ctx context.Context, in store.Instance) error {
	err := s.report(ctx, in)
	if in.State != store.AgentDone {
		if _, serr := s.stopChildren(ctx, in, "its parent "+in.ID+" "+in.State, in.ID); serr != nil {
			err = errors.Join(err, serr)
		}
	}
	return err
}
