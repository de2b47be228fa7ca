package agentsys

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// target is an agent a message or question is for.
type target struct {
	agent string // the registry id its sessions run under
	def   *agent.Definition
	in    *store.Instance // its instance, if it is one
}

// Send submits a system message to req.Target and returns the receipt and
// the target's session address. The message's key is the caller's session
// and tool call, so a re-run call delivers it once.
func (s *System) Send(ctx context.Context, req SendRequest) (runtime.Receipt, string, error) {
	if strings.TrimSpace(req.Text) == "" {
		return runtime.Receipt{}, "", fmt.Errorf("agentsys: send: %w: an empty message", store.ErrInvalid)
	}
	_, t, err := s.reach(ctx, req.Caller, req.CallerSession, req.Turn, req.Hops, req.Target)
	if err != nil {
		return runtime.Receipt{}, "", fmt.Errorf("agentsys: send: %w", err)
	}
	addr := mainSession(t.agent)
	in := runtime.Input{Session: addr, Text: req.Text, Source: sourceAgent, System: true, Silent: req.Silent,
		Origin: req.Caller, Hops: req.Hops + 1}
	if req.CallID != "" {
		in.IdempotencyKey = "msg:" + req.CallerSession + ":" + req.CallID
	}
	rc, err := s.rt.Submit(ctx, in)
	if err != nil {
		return rc, addr, fmt.Errorf("agentsys: send to %s: %w", t.agent, err)
	}
	return rc, addr, nil
}

// Ask sends req.Question to req.Target's session "ask:<caller>" and waits
// for the answer, at most the smaller of req.Timeout and
// agents.ask_timeout (and ctx's deadline). A question not answered in
// time is cancelled; it stays in that session's log.
func (s *System) Ask(ctx context.Context, req AskRequest) (AskResult, error) {
	if strings.TrimSpace(req.Question) == "" {
		return AskResult{}, fmt.Errorf("agentsys: ask: %w: an empty question", store.ErrInvalid)
	}
	_, t, err := s.reach(ctx, req.Caller, req.CallerSession, req.Turn, req.Hops, req.Target)
	if err != nil {
		return AskResult{}, fmt.Errorf("agentsys: ask: %w", err)
	}
	wait := s.cfg.AskTimeout.D()
	if req.Timeout > 0 && req.Timeout < wait {
		wait = req.Timeout
	}
	addr := t.agent + "/" + askSession(req.Caller)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	in := runtime.Input{Session: addr, Text: req.Question, Source: sourceAgent, Origin: req.Caller, Hops: req.Hops + 1}
	if req.CallID != "" {
		in.IdempotencyKey = "ask:" + req.CallID
	}
	rc, end, err := s.rt.Send(wctx, in)
	if err != nil {
		if rc.Turn != 0 && wctx.Err() != nil {
			s.rt.CancelRunning(rc.SessionID, rc.Turn)
			return AskResult{Session: addr}, fmt.Errorf("agentsys: ask %s: no answer within %s; the question stays in session %s: %w",
				t.agent, wait, addr, context.DeadlineExceeded)
		}
		return AskResult{Session: addr}, fmt.Errorf("agentsys: ask %s: %w", t.agent, err)
	}
	return AskResult{Answer: end.Reply, Status: end.Status, CostUSD: end.CostUSD, Session: addr}, nil
}

// reach resolves a message's target for caller and checks that the caller
// may reach it and that the message's hops are within the limit.
func (s *System) reach(ctx context.Context, callerID, session string, turn int64, hops int, name string) (*agent.Definition, target, error) {
	caller, ok := s.definition(callerID)
	if !ok {
		return nil, target{}, fmt.Errorf("caller %w: %s", ErrNotFound, callerID)
	}
	if err := s.checkHops(ctx, session, turn, hops+1, name); err != nil {
		return caller, target{}, err
	}
	t, err := s.resolve(ctx, name)
	if err != nil {
		return caller, t, err
	}
	if !s.mayReach(ctx, caller, t) {
		return caller, t, fmt.Errorf("%w: %s may not reach %s (not its parent or child; agents.targets)", ErrReach, callerID, t.agent)
	}
	if t.in != nil && store.AgentEnded(t.in.State) {
		return caller, t, fmt.Errorf("%w: %s is %s", ErrEnded, t.agent, t.in.State)
	}
	return caller, t, nil
}

// resolve finds the agent a name means: "" the most recent user agent
// (most-recent-foreground), "#tag" the one agent of that tag, an instance
// id, or an agent id or a permanent agent's name.
func (s *System) resolve(ctx context.Context, name string) (target, error) {
	switch {
	case name == "":
		in, err := s.st.MostRecent(ctx, store.InstanceUser)
		if errors.Is(err, store.ErrNotFound) {
			return target{}, fmt.Errorf("%w: no user agent to send to (most-recent-foreground)", ErrNotFound)
		} else if err != nil {
			return target{}, err
		}
		return s.targetOf(in)
	case strings.HasPrefix(name, "#"):
		var ids []string
		if s.o.Tags != nil {
			ids = s.o.Tags.Tagged(name[1:])
		}
		switch len(ids) {
		case 0:
			return target{}, fmt.Errorf("%w: no agent is tagged %s", ErrNotFound, name)
		case 1:
			name = ids[0]
		default:
			return target{}, fmt.Errorf("%w: %d agents are tagged %s (%s): name one", ErrNotFound, len(ids), name, strings.Join(ids, ", "))
		}
	}
	if store.IsInstanceID(name) {
		in, err := s.instance(ctx, name)
		if err == nil {
			return s.targetOf(in)
		}
		if !errors.Is(err, ErrNotFound) {
			return target{}, err
		}
	}
	def, ok := s.definition(name)
	if !ok {
		return target{}, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	t := target{agent: def.ID, def: def}
	if def.Type == agent.TypePermanent {
		if in, err := s.st.InstanceByAgent(ctx, def.ID); err == nil {
			t.in = &in
		}
	}
	return t, nil
}

// targetOf is the target of an instance (fresh from the store: its state
// matters).
func (s *System) targetOf(in store.Instance) (target, error) {
	def, ok := s.definition(in.Agent)
	if !ok {
		return target{}, fmt.Errorf("%w: %s (its template %s is gone)", ErrNotFound, in.ID, in.Template)
	}
	return target{agent: in.Agent, def: def, in: &in}, nil
}

// mayReach reports whether caller may message, ask, inspect or stop t: its
// parent, its children, what its agents.targets allow, and the user
// agents of its own template.
func (s *System) mayReach(ctx context.Context, caller *agent.Definition, t target) bool {
	if caller.ID == t.agent {
		return true
	}
	if caller.Parent != "" && caller.Parent == t.agent {
		return true
	}
	if t.in != nil && t.in.Parent == caller.ID {
		return true
	}
	names := []string{t.agent}
	if t.in != nil {
		names = append(names, t.in.ID, t.in.Name, t.in.Template)
	}
	for _, n := range names {
		if n != "" && globs(caller.Agents.Targets, n) {
			return true
		}
	}
	if t.in != nil && t.in.Type == store.InstanceUser && caller.Template != "" && caller.Template == t.in.Template {
		return true
	}
	return false
}

// askSession is the key of the session of an ask from caller.
func askSession(caller string) string { return "ask:" + caller }
