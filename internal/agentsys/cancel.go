package agentsys

import (
	"context"
	"errors"
	"fmt"

	"agentd/internal/event"
	"agentd/internal/store"
)

// Stop stops the agent id (an instance id or a permanent agent's name)
// and its sub-agents, deepest first, for reason, by whom; it returns the
// ids it stopped. Each stopped agent's running turn is cancelled, its
// queued inputs refused and its session closed; it reports its stop to
// its parent unless that parent is stopped with it. Background agents it
// started are not followed. An agent that has ended is ErrEnded.
func (s *System) Stop(ctx context.Context, id, reason, by string) ([]string, error) {
	in, err := s.instance(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("agentsys: stop: %w", err)
	}
	if store.AgentEnded(in.State) {
		return nil, fmt.Errorf("agentsys: stop: %w: %s is %s", ErrEnded, id, in.State)
	}
	return s.stopTree(ctx, []store.Instance{in}, reason, by)
}

// stopChildren stops the live sub-agents of an instance that ended (its
// own report is not theirs to skip: they report to it, and its closed
// session refuses them).
func (s *System) stopChildren(ctx context.Context, in store.Instance, reason, by string) ([]string, error) {
	kids, err := s.children(ctx, in.Agent, func(c store.Instance) bool { return true })
	if err != nil || len(kids) == 0 {
		return nil, err
	}
	return s.stopTree(ctx, kids, reason, by)
}

// stopTurnChildren stops the live sub-agents the turn of agentID started
// (the turn was cancelled).
func (s *System) stopTurnChildren(ctx context.Context, agentID string, turn int64) error {
	kids, err := s.children(ctx, agentID, func(c store.Instance) bool { return c.OriginTurn == turn })
	if err != nil || len(kids) == 0 {
		return err
	}
	_, err = s.stopTree(ctx, kids, "the turn that started it was cancelled", agentID)
	return err
}

// children returns the live sub-agents of agentID that keep.
func (s *System) children(ctx context.Context, agentID string, keep func(store.Instance) bool) ([]store.Instance, error) {
	var out []store.Instance
	f := store.AgentFilter{Parent: agentID, Type: store.InstanceSubagent, Live: true, Limit: store.MaxInstanceLimit}
	for {
		rows, next, err := s.st.Instances(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if keep(r) {
				out = append(out, r)
			}
		}
		if next == "" {
			return out, nil
		}
		f.Before = next
	}
}

// descendants returns the instances below agentID, breadth first: the
// live sub-agents only (those a stop follows) if live, else every
// instance started by one of them.
func (s *System) descendants(ctx context.Context, agentID string, live bool) ([]store.Instance, error) {
	var out []store.Instance
	seen := map[string]bool{agentID: true}
	queue := []string{agentID}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		f := store.AgentFilter{Parent: parent, Live: live, Limit: store.MaxInstanceLimit}
		if live {
			f.Type = store.InstanceSubagent
		}
		for {
			rows, next, err := s.st.Instances(ctx, f)
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				if !seen[r.Agent] {
					seen[r.Agent] = true
					out = append(out, r)
					queue = append(queue, r.Agent)
				}
			}
			if next == "" {
				break
			}
			f.Before = next
		}
	}
	return out, nil
}

// stopTree stops roots and their live sub-agents, deepest first.
func (s *System) stopTree(ctx context.Context, roots []store.Instance, reason, by string) ([]string, error) {
	all := append([]store.Instance(nil), roots...)
	stopping := map[string]bool{}
	for _, r := range roots {
		stopping[r.Agent] = true
		below, err := s.descendants(ctx, r.Agent, true)
		if err != nil {
			return nil, fmt.Errorf("agentsys: stop %s: %w", r.ID, err)
		}
		for _, d := range below {
			if !stopping[d.Agent] {
				stopping[d.Agent] = true
				all = append(all, d)
			}
		}
	}
	var stopped []string
	var errs []error
	for i := len(all) - 1; i >= 0; i-- {
		in := all[i]
		ok, err := s.stopOne(ctx, in, reason, by, stopping[in.Parent])
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			stopped = append(stopped, in.ID)
		}
	}
	return stopped, errors.Join(errs...)
}

// stopOne stops one instance: its row first (so the supervisor, seeing
// its cancelled turn end, finds it stopped), its log's event, then its
// session. It reports the stop unless its parent is stopped with it.
func (s *System) stopOne(ctx context.Context, in store.Instance, reason, by string, parentStopping bool) (bool, error) {
	moved, err := s.st.SetInstanceState(ctx, in.ID, store.AgentStopped, stopText(reason, by), 0)
	if err != nil || !moved {
		return false, err
	}
	if parentStopping && in.Report != "" {
		// Before its turn is cancelled, so that the supervisor, seeing
		// the cancelled end, finds nothing to report.
		if _, err := s.st.RecordReport(ctx, in.ID, "not reported: its parent was stopped with it"); err != nil {
			return true, err
		}
	}
	addr := mainSession(in.Agent)
	ev := event.New(0, 0, event.Agent, event.AgentData{Op: event.AgentStopped, ID: in.ID, Type: in.Type, Parent: in.Parent, Reason: stopText(reason, by)})
	if err := s.rt.Record(ctx, addr, ev); err != nil {
		return true, fmt.Errorf("agentsys: stop %s: %w", in.ID, err)
	}
	if err := s.rt.Stop(ctx, addr, stopText(reason, by)); err != nil && !errors.Is(err, store.ErrNotFound) {
		return true, fmt.Errorf("agentsys: stop %s: %w", in.ID, err)
	}
	if parentStopping {
		return true, nil
	}
	if in, err = s.st.Instance(ctx, in.ID); err != nil {
		return true, err
	}
	return true, s.report(ctx, in)
}

// stopText says why and by whom an agent was stopped.
func stopText(reason, by string) string {
	switch {
	case reason == "" && by == "":
		return "stopped"
	case by == "":
		return reason
	case reason == "":
		return "by " + by
	}
	return reason + " (by " + by + ")"
}
