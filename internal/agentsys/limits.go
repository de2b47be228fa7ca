package agentsys

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/store"
)

// limits are the store's limits on an instance started by caller (nil: a
// person): the node's, with the caller's own agents.max_children.
func (s *System) limits(caller *agent.Definition) store.InstanceLimits {
	l := store.InstanceLimits{MaxDepth: s.cfg.MaxDepth, MaxChildren: s.cfg.MaxChildren, MaxLive: s.cfg.MaxLive}
	if caller != nil && caller.Agents.MaxChildren > 0 {
		l.MaxChildren = caller.Agents.MaxChildren
	}
	return l
}

// checkHops refuses a message or start whose input would carry more than
// agents.max_hops hops, logging the guard in the caller's session.
func (s *System) checkHops(ctx context.Context, session string, turn int64, hops int, target string) error {
	if hops <= s.cfg.MaxHops {
		return nil
	}
	s.guard(ctx, session, turn, event.AgentData{Op: event.AgentGuard, Guard: "max_hops", Limit: s.cfg.MaxHops, Value: hops,
		Target: target, Reason: fmt.Sprintf("a chain of agent messages is at most %d hops long (agents.max_hops)", s.cfg.MaxHops)})
	return fmt.Errorf("%w: %d hops is past agents.max_hops %d", ErrHops, hops, s.cfg.MaxHops)
}

// limitGuard logs a store limit's refusal (store.ErrLimit, whose text
// names the limit and its value) in the caller's session.
func (s *System) limitGuard(ctx context.Context, session string, turn int64, err error, target string) {
	name, limit := limitOf(err)
	s.guard(ctx, session, turn, event.AgentData{Op: event.AgentGuard, Guard: name, Limit: limit, Value: limit + 1,
		Target: target, Reason: limitError(err).Error()})
}

// limitOf reads the limit a store.ErrLimit names ("max_children 8").
func limitOf(err error) (string, int) {
	msg := err.Error()
	i := strings.LastIndex(msg, store.ErrLimit.Error()+": ")
	if i < 0 {
		return "limit", 0
	}
	name, n, _ := strings.Cut(msg[i+len(store.ErrLimit.Error())+2:], " ")
	v, _ := strconv.Atoi(n)
	return name, v
}

// limitError is a store's limit refusal (store.ErrLimit) as the System
// says it to whoever asked: the limit and its value, without the store's
// own words (its driver, the id of the instance it did not make); any
// other error is err.
func limitError(err error) error {
	if !isLimit(err) {
		return err
	}
	if name, limit := limitOf(err); limit > 0 {
		return fmt.Errorf("%w: %s %d", store.ErrLimit, name, limit)
	}
	return err
}

// guard logs a guard's refusal in session (a turn's, whose epoch ctx
// carries); without a recorder or a session it is not logged.
func (s *System) guard(ctx context.Context, session string, turn int64, d event.AgentData) {
	if s.o.Recorder == nil || session == "" {
		return
	}
	if err := s.o.Recorder.RecordAgent(ctx, session, turn, d); err != nil {
		s.log.Warn("agent guard event", "session", session, "guard", d.Guard, "err", err)
	}
}

// isLimit reports whether err is a store limit's refusal.
func isLimit(err error) bool { return errors.Is(err, store.ErrLimit) }
