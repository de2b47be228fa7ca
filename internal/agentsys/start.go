package agentsys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Sources of the inputs the System submits.
const (
	sourceAgent = "agent" // a message or task from an agent
	sourceAPI   = "api"   // a task a person started
	startKey    = "start" // the idempotency key of an instance's first input
)

// Start starts a background agent or sub-agent from req.Template and
// returns its instance once its first input is durable (the agent runs in
// the background). A request made again (same caller session and call,
// or same Key) returns the same instance, started once.
func (s *System) Start(ctx context.Context, req StartRequest) (store.Instance, error) {
	if req.Prompt == "" {
		return store.Instance{}, fmt.Errorf("agentsys: start: %w: an empty prompt", store.ErrInvalid)
	}
	var caller *agent.Definition
	hops := req.Hops + 1
	if req.Caller != "" {
		var ok bool
		if caller, ok = s.definition(req.Caller); !ok {
			return store.Instance{}, fmt.Errorf("agentsys: start: %w: %s (the caller)", ErrNotFound, req.Caller)
		}
		if err := s.checkHops(ctx, req.CallerSession, req.Turn, hops, req.Template); err != nil {
			return store.Instance{}, fmt.Errorf("agentsys: start: %w", err)
		}
		// A detached agent spends outside the caller's turn budget and
		// children: its definition must say it may make one.
		if req.Detached && !caller.Agents.Detach {
			return store.Instance{}, fmt.Errorf("agentsys: start: %w: %s may not start a detached agent (agents.detach is false); start a sub-agent", ErrReach, caller.ID)
		}
	}
	tpl, err := s.template(req.Template, caller)
	if err != nil {
		return store.Instance{}, fmt.Errorf("agentsys: start: %w", err)
	}
	in, err := s.newTask(ctx, req, caller, tpl, hops)
	if err != nil {
		return store.Instance{}, fmt.Errorf("agentsys: start %s: %w", tpl.ID, err)
	}
	got, created, err := s.st.CreateInstance(ctx, in, s.limits(caller))
	if err != nil {
		if isLimit(err) && caller != nil {
			s.limitGuard(ctx, req.CallerSession, req.Turn, err, tpl.ID)
		}
		return store.Instance{}, fmt.Errorf("agentsys: start %s: %w", tpl.ID, limitError(err))
	}
	s.remember(got)
	if created && got.Type == store.InstanceSubagent {
		s.noteTurn(got.OriginTurn)
	}
	if got.State != store.AgentStarting {
		return got, nil // started before: a re-run of the same call
	}
	return s.launch(ctx, got, req.Budgets)
}

// template returns the definition an instance is started from: id, or
// the caller's own template. An instance is no template; a caller may
// start only what its agents.templates allows (left out: its own).
func (s *System) template(id string, caller *agent.Definition) (*agent.Definition, error) {
	own := ""
	if caller != nil {
		own = caller.ID
		if caller.Template != "" {
			own = caller.Template
		}
	}
	if id == "" {
		id = own
	}
	if id == "" {
		return nil, fmt.Errorf("%w: no template named", ErrNotTemplate)
	}
	tpl, ok := s.definition(id)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: %s (no definition of that id to start from)", ErrNotFound, id)
	case tpl.Template != "" || store.IsInstanceID(tpl.ID):
		return nil, fmt.Errorf("%w: %s is a dynamic agent", ErrNotTemplate, id)
	case caller != nil && !mayStart(caller, own, id):
		return nil, fmt.Errorf("%w: %s may not start %s (agents.templates)", ErrReach, caller.ID, id)
	}
	return tpl, nil
}

// mayStart reports whether caller (whose own template is own) may start
// an instance of id.
func mayStart(caller *agent.Definition, own, id string) bool {
	if caller.Agents.Templates == nil {
		return id == own
	}
	return globs(caller.Agents.Templates, id)
}

// globs reports whether one of patterns matches s (path.Match).
func globs(patterns []string, s string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, s); ok {
			return true
		}
	}
	return false
}

// newTask builds the row of a task req starts.
func (s *System) newTask(ctx context.Context, req StartRequest, caller *agent.Definition, tpl *agent.Definition, hops int) (store.Instance, error) {
	in := store.Instance{ID: s.ids.next(), Type: store.InstanceSubagent, Template: tpl.ID, Name: req.Name,
		Parent: req.Caller, Task: req.Prompt, Hops: hops, State: store.AgentStarting, OriginTurn: req.Turn,
		OriginCall: req.CallID, Report: req.Report, ReportTo: req.ReportTo, Payer: tpl.ID}
	if caller == nil || req.Detached {
		in.Type = store.InstanceBackground
	}
	if caller == nil {
		key := req.Key
		if key == "" {
			key = in.ID
		}
		in.Descriptor = APIDescriptor(key).String()
		if in.Report == "" && in.ReportTo != "" {
			in.Report = store.ReportLoud
		}
		return in, keepBudgets(&in, req.Budgets)
	}
	call := req.CallID
	if call == "" {
		call = in.ID
	}
	in.Descriptor = TaskDescriptor(req.CallerSession, call).String()
	in.ReportTo = req.CallerSession
	if in.Report == "" {
		in.Report = store.ReportLoud
	}
	if in.Type == store.InstanceSubagent {
		if err := s.lineage(ctx, &in, req, caller); err != nil {
			return in, err
		}
	}
	return in, nil
}

// lineage sets a sub-agent's payer and account: its caller's payer, and
// the account of the caller's turn (itself a sub-agent's lineage's).
func (s *System) lineage(ctx context.Context, in *store.Instance, req StartRequest, caller *agent.Definition) error {
	in.Payer, in.TurnLimit = req.Caller, caller.Budgets.MaxUSDPerTurn
	if store.IsInstanceID(req.Caller) {
		p, err := s.row(ctx, req.Caller)
		if err != nil {
			return err
		}
		if p.Payer != "" {
			in.Payer = p.Payer
		}
		if p.Account != "" {
			in.Account, in.TurnLimit = p.Account, p.TurnLimit
			return nil
		}
	}
	agentID, key, _ := cutAddress(req.CallerSession)
	sess, err := s.st.SessionByAddress(ctx, agentID, key)
	if err != nil {
		return fmt.Errorf("caller session %s: %w", req.CallerSession, err)
	}
	in.Account = accountKey(sess.ID, req.Turn)
	if l, ok := s.ledger.limit(in.Account); ok {
		in.TurnLimit = l
	}
	return nil
}

// keepBudgets keeps b on a person's task row: the row is written before
// its first input, and a recovery that submits an input a crash lost
// submits it with them (keptBudgets).
func keepBudgets(in *store.Instance, b *agent.Budgets) error {
	if b == nil {
		return nil
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return err
	}
	in.Budgets = string(raw)
	return nil
}

// keptBudgets returns the budgets keepBudgets kept on in (nil: none).
func keptBudgets(in store.Instance) (*agent.Budgets, error) {
	if in.Budgets == "" {
		return nil, nil
	}
	var b agent.Budgets
	if err := json.Unmarshal([]byte(in.Budgets), &b); err != nil {
		return nil, fmt.Errorf("agentsys: budgets of %s: %w", in.ID, err)
	}
	return &b, nil
}

// launch writes a started instance's first event and input, and marks it
// running. Each step is safe to repeat: the event is written only to an
// empty log, the input once by its key.
func (s *System) launch(ctx context.Context, in store.Instance, budgets *agent.Budgets) (store.Instance, error) {
	addr := mainSession(in.Agent)
	sess, err := s.st.SessionByAddress(ctx, in.Agent, "main")
	if errors.Is(err, store.ErrNotFound) || (err == nil && sess.LastSeq == 0) {
		ev := event.New(0, 0, event.Agent, event.AgentData{Op: event.AgentStarted, ID: in.ID, Type: in.Type, Parent: in.Parent,
			Reason: in.Descriptor})
		if err := s.rt.Record(ctx, addr, ev); err != nil {
			return in, fmt.Errorf("agentsys: start %s: %w", in.ID, err)
		}
	} else if err != nil {
		return in, fmt.Errorf("agentsys: start %s: %w", in.ID, err)
	}
	input := runtime.Input{Session: addr, Text: in.Task, Source: sourceAgent, Origin: in.Parent, Hops: in.Hops,
		IdempotencyKey: startKey}
	if in.Parent == "" {
		input.Source = sourceAPI
	}
	if budgets != nil {
		if input.Options, err = json.Marshal(engine.LifecycleOptions{Budgets: budgets}); err != nil {
			return in, err
		}
	}
	rc, err := s.rt.Submit(ctx, input)
	if err != nil {
		return in, fmt.Errorf("agentsys: start %s: %w", in.ID, err)
	}
	if _, err := s.st.SetInstanceState(ctx, in.ID, store.AgentRunning, "", rc.Turn); err != nil {
		return in, fmt.Errorf("agentsys: start %s: %w", in.ID, err)
	}
	if cur, err := s.st.Instance(ctx, in.ID); err == nil {
		return cur, nil
	}
	in.State, in.Turn = store.AgentRunning, rc.Turn
	return in, nil
}

// noteTurn counts a sub-agent started by turn (so that the turn's
// cancellation is known to stop it without a store read for every turn).
func (s *System) noteTurn(turn int64) {
	if turn == 0 {
		return
	}
	s.mu.Lock()
	s.turns[turn]++
	s.mu.Unlock()
}

// startedChildren reports whether turn started sub-agents on this node,
// and forgets it.
func (s *System) startedChildren(turn int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.turns[turn]
	delete(s.turns, turn)
	return n > 0
}
