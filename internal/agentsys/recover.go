package agentsys

import (
	"context"
	"errors"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
)

// startingFor is how long an instance may stay starting before recovery
// submits its first input itself (the tool call that made it is normally
// re-run, and submits it, first).
const startingFor = 10 * time.Second

// Recover closes the windows a crash leaves open: instances started
// without their first input get it (with the budgets its start kept); tasks
// whose last turn ended but that were not finished are finished; ended
// instances whose report was not recorded report (the parent's inbox takes
// a report once); live sub-agents of a turn that was cancelled are
// stopped; permanent agents an agent wrote get their instance. Run it
// after the runtime starts; the supervisor's sweep does the same but for
// the last, cheaply, every Options.Sweep (a turn end the hook could not
// hand it is a crash's window too).
func (s *System) Recover(ctx context.Context) error { return s.recoverOnce(ctx, true) }

// recoverOnce is one pass of recovery; all adds the check only a crash
// makes needed (permanent agents' instances) and looks at every running
// instance, not only those quiet for a sweep's time.
func (s *System) recoverOnce(ctx context.Context, all bool) error {
	var errs []error
	open, err := s.st.OpenInstances(ctx)
	if err != nil {
		return err
	}
	now := s.o.Now()
	cancelled := map[int64]bool{} // origin turns read in this pass → ended cancelled
	for _, in := range open {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case in.State == store.AgentStarting && now.Sub(in.CreatedAt) >= startingFor:
			if err := s.relaunch(ctx, in); err != nil {
				errs = append(errs, err)
			}
		case in.State == store.AgentRunning && (all || now.Sub(in.UpdatedAt) >= s.o.Sweep):
			if err := s.settleQuiet(ctx, in); err != nil {
				errs = append(errs, err)
			}
		}
		if in.Type == store.InstanceSubagent && in.OriginTurn != 0 {
			if err := s.stopIfTurnCancelled(ctx, in, cancelled); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if all {
		if err := s.recoverPermanents(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	unreported, err := s.st.UnreportedInstances(ctx, 0)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, in := range unreported {
		if err := s.endOf(ctx, in); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// relaunch submits the first input of an instance a crash left starting,
// with the budgets its start tightened.
func (s *System) relaunch(ctx context.Context, in store.Instance) error {
	b, err := keptBudgets(in)
	if err != nil {
		return err
	}
	_, err = s.launch(ctx, in, b)
	return err
}

// settleQuiet settles a running instance whose session has nothing
// pending and whose last turn has ended (the end's hook was lost).
func (s *System) settleQuiet(ctx context.Context, in store.Instance) error {
	sess, err := s.st.SessionByAddress(ctx, in.Agent, "main")
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	pending, err := s.st.Pending(ctx, sess.ID)
	if err != nil || len(pending) > 0 {
		return err
	}
	end, ok, err := s.lastEnd(ctx, sess)
	if err != nil || !ok {
		return err
	}
	_, err = s.settle(ctx, sess, end)
	return err
}

// lastEnd returns the end of the last turn in sess's log.
func (s *System) lastEnd(ctx context.Context, sess store.Session) (event.TurnEndData, bool, error) {
	const tail = 64
	var end event.TurnEndData
	found := false
	after := max(0, sess.LastSeq-tail)
	for {
		evs, err := s.st.Events(ctx, sess.ID, after, tail)
		if err != nil {
			return end, false, err
		}
		for _, ev := range evs {
			if ev.Kind == event.TurnEnd {
				var d event.TurnEndData
				if err := ev.Decode(&d); err == nil {
					end, found = d, true
				}
			}
		}
		if len(evs) < tail {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	if !found && sess.LastSeq > tail {
		// The last end is further back than the tail: read from the start.
		return s.lastEndFrom(ctx, sess.ID)
	}
	return end, found, nil
}

// lastEndFrom reads a whole log for its last turn end.
func (s *System) lastEndFrom(ctx context.Context, session int64) (event.TurnEndData, bool, error) {
	var end event.TurnEndData
	found := false
	for after := int64(0); ; {
		evs, err := s.st.Events(ctx, session, after, 500)
		if err != nil || len(evs) == 0 {
			return end, found, err
		}
		for _, ev := range evs {
			var d event.TurnEndData
			if ev.Kind == event.TurnEnd && ev.Decode(&d) == nil {
				end, found = d, true
			}
		}
		after = evs[len(evs)-1].Seq
	}
}

// stopIfTurnCancelled stops a live sub-agent whose starting turn ended
// cancelled: a crash came between the cancel and the stop, or the turn's
// end never reached the supervisor (its channel was full). cancelled
// holds the ends this pass has read, by turn.
func (s *System) stopIfTurnCancelled(ctx context.Context, in store.Instance, cancelled map[int64]bool) error {
	is, known := cancelled[in.OriginTurn]
	if !known {
		done, cancel := context.WithCancel(ctx)
		cancel() // read the end from the store; do not wait
		end, err := s.rt.Wait(done, in.OriginTurn)
		is = err == nil && end.Status == event.StatusCancelled
		if err == nil { // a turn still running is read again next pass
			cancelled[in.OriginTurn] = is
		}
	}
	if !is {
		return nil
	}
	_, err := s.stopTree(ctx, []store.Instance{in}, "the turn that started it was cancelled", in.Parent)
	return err
}
