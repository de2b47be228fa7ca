package agentsys

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
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

// Ask sends req.Question to req.Target's session for the caller's session
// (askKey: "ask:<caller>" from its main session) and waits
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
	addr := t.agent + "/" + askKey(req.Caller, req.CallerSession)
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
// may reach it and that the message's hops are within the limit. A
// refusal names only what the caller named.
func (s *System) reach(ctx context.Context, callerID, session string, turn int64, hops int, name string) (*agent.Definition, target, error) {
	caller, ok := s.definition(callerID)
	if !ok {
		return nil, target{}, fmt.Errorf("%w: %s (the caller)", ErrNotFound, callerID)
	}
	if err := s.checkHops(ctx, session, turn, hops+1, name); err != nil {
		return caller, target{}, err
	}
	var t target
	var err error
	if name == "" {
		t, err = s.foreground(ctx, caller)
	} else {
		t, err = s.resolve(ctx, name)
	}
	if err != nil {
		return caller, t, err
	}
	if !s.mayReach(ctx, caller, t) {
		return caller, target{}, fmt.Errorf("%w: %s may not reach %s (not its parent or child; agents.targets)", ErrReach, callerID, name)
	}
	if t.in != nil && store.AgentEnded(t.in.State) {
		return caller, t, fmt.Errorf("%w: %s is %s", ErrEnded, t.agent, t.in.State)
	}
	return caller, t, nil
}

// errNoForeground refuses a message with no target when no person's
// conversation is in the caller's reach; it names none.
var errNoForeground = fmt.Errorf("%w: no user agent in reach to send to (most-recent-foreground)", ErrNotFound)

// foreground is the target of a message with no target (the
// most-recent-foreground strategy): for an agent that is a person's
// conversation or works below one, that conversation; for any other, the
// user agent active last, if the caller may reach it. Another person's
// conversation is never picked, and a refusal does not say which it was.
func (s *System) foreground(ctx context.Context, caller *agent.Definition) (target, error) {
	p, ok, err := s.person(ctx, caller)
	if err != nil {
		return target{}, err
	}
	var in store.Instance
	if ok {
		in, err = s.instance(ctx, p.ID) // fresh: its state matters
	} else {
		in, err = s.st.MostRecent(ctx, store.InstanceUser)
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, ErrNotFound) {
		return target{}, errNoForeground
	} else if err != nil {
		return target{}, err
	}
	t, err := s.targetOf(in)
	if err != nil || !s.mayReach(ctx, caller, t) {
		return target{}, errNoForeground
	}
	return t, nil
}

// resolve finds the agent a name means: "#tag" the one agent of that tag,
// an instance id, or an agent id or a permanent agent's name.
func (s *System) resolve(ctx context.Context, name string) (target, error) {
	if strings.HasPrefix(name, "#") {
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

// mayReach reports whether caller may message, ask, inspect or stop t:
// itself, its parent, its children, the agents its agents.targets names,
// and people's conversations (user and swarm agents) of its own template
// or of a template its agents.targets names — unless the caller is a
// person's conversation or works below one: a person's conversation is
// reached by the agents working for that person, not by another person's
// because both came from one template.
func (s *System) mayReach(ctx context.Context, caller *agent.Definition, t target) bool {
	switch {
	case caller.ID == t.agent,
		caller.Parent != "" && caller.Parent == t.agent,
		t.in != nil && t.in.Parent == caller.ID,
		s.targeted(caller, t):
		return true
	case t.in == nil || !behaviours[t.in.Type].person:
		return false
	case caller.Template == "" || caller.Template != t.in.Template:
		if !s.targetedTemplate(caller, t.in.Template) {
			return false
		}
	}
	_, forPerson, err := s.person(ctx, caller)
	return err == nil && !forPerson
}

// targeted reports whether caller's agents.targets names t: a glob that
// matches its agent id (or its instance's id), or "#tag" of a tag it has.
// A template's name does not name its instances, nor a label the agent.
func (s *System) targeted(caller *agent.Definition, t target) bool {
	for _, g := range caller.Agents.Targets {
		if tag, ok := strings.CutPrefix(g, "#"); ok {
			if s.o.Tags != nil && slices.Contains(s.o.Tags.Tagged(tag), t.agent) {
				return true
			}
			continue
		}
		if globs([]string{g}, t.agent) || t.in != nil && globs([]string{g}, t.in.ID) {
			return true
		}
	}
	return false
}

// targetedTemplate reports whether caller's agents.targets names template
// by a glob (not a tag): the people's conversations made from it.
func (s *System) targetedTemplate(caller *agent.Definition, template string) bool {
	for _, g := range caller.Agents.Targets {
		if !strings.HasPrefix(g, "#") && template != "" && globs([]string{g}, template) {
			return true
		}
	}
	return false
}

// person returns the conversation of the person caller works for: the
// caller itself if it is a user or swarm instance, else the root of its
// tree if that is one (ok false: none). A failed read is an error, so
// that the callers fail closed.
func (s *System) person(ctx context.Context, caller *agent.Definition) (store.Instance, bool, error) {
	if !store.IsInstanceID(caller.ID) {
		return store.Instance{}, false, nil
	}
	in, err := s.row(ctx, caller.ID)
	if err != nil {
		return in, false, fmt.Errorf("the row of %s: %w", caller.ID, err)
	}
	if in.Root != "" && in.Root != in.Agent && store.IsInstanceID(in.Root) {
		if in, err = s.row(ctx, in.Root); err != nil {
			return in, false, fmt.Errorf("the row of %s: %w", caller.ID, err)
		}
	}
	return in, behaviours[in.Type].person, nil
}

// askSession is the key of the callee's session for the questions
// from caller's main session.
func askSession(caller string) string { return "ask:" + caller }

// maxAskKey bounds the caller's session key an ask's session key holds
// as it is; a longer one is held as its hash (an address is at most 512
// bytes).
const maxAskKey = 128

// askKey is the key of the callee's session for the questions asked from
// the caller's session callerSession: askSession(caller) from its main
// session, "ask:<caller>:<its key>" from another (an agent id has no
// ":"), so that two conversations of one caller — two people's — never
// share the callee's conversation.
func askKey(caller, callerSession string) string {
	agentID, key, _ := cutAddress(callerSession)
	switch {
	case callerSession == "" || agentID == caller && key == "main":
		return askSession(caller)
	case agentID == caller && len(key) <= maxAskKey:
		return askSession(caller) + ":" + key
	}
	sum := sha256.Sum256([]byte(callerSession))
	return askSession(caller) + ":" + hex.EncodeToString(sum[:16])
}
