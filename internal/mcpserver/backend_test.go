package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"agentd/internal/event"
	"agentd/internal/mcpserver"
)

// fakeBackend is an in-memory agentd: every ask appends input, text and
// turn_end events to the session's log. Some messages act differently:
//
//	"fail"       the message cannot be submitted (status "", an error)
//	"budget..."  the turn stops on a budget, with a partial reply
//	"block"      the turn waits until its ctx ends
type fakeBackend struct {
	mu        sync.Mutex
	agents    []mcpserver.Agent
	agentsErr error
	logs      map[string][]event.Event
	blocked   chan struct{} // closed when a "block" ask has started, if not nil
}

var base = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newFake(agents ...mcpserver.Agent) *fakeBackend {
	return &fakeBackend{agents: agents, logs: map[string][]event.Event{}}
}

func (f *fakeBackend) setAgents(agents ...mcpserver.Agent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.agents = agents
}

func (f *fakeBackend) Agents(ctx context.Context) ([]mcpserver.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.agentsErr != nil {
		return nil, f.agentsErr
	}
	return slices.Clone(f.agents), nil
}

func (f *fakeBackend) known(id string) bool {
	return slices.ContainsFunc(f.agents, func(a mcpserver.Agent) bool { return a.ID == id })
}

func (f *fakeBackend) appendLocked(addr string, kind event.Kind, payload any) {
	log := f.logs[addr]
	e := event.New(1, 1, kind, payload)
	e.Seq = int64(len(log) + 1)
	e.Turn = int64(len(log)/3 + 1)
	e.Time = base.Add(time.Duration(e.Seq) * time.Second)
	f.logs[addr] = append(log, e)
}

func (f *fakeBackend) Ask(ctx context.Context, agentID, key, text string) (string, string, error) {
	f.mu.Lock()
	if !f.known(agentID) {
		f.mu.Unlock()
		return "", "", fmt.Errorf("unknown agent %q", agentID)
	}
	if text == "fail" {
		f.mu.Unlock()
		return "", "", errors.New("inbox is full")
	}
	if text == "block" {
		ch := f.blocked
		f.mu.Unlock()
		if ch != nil {
			close(ch)
		}
		<-ctx.Done()
		return "", "", ctx.Err()
	}
	defer f.mu.Unlock()
	addr := agentID + "/" + key
	f.appendLocked(addr, event.Input, event.InputData{Text: text, Source: "mcp"})
	if strings.HasPrefix(text, "budget") {
		f.appendLocked(addr, event.Text, event.TextData{Text: "partial"})
		f.appendLocked(addr, event.TurnEnd, event.TurnEndData{Status: event.StatusBudget, Budget: "steps", Reply: "partial"})
		return "partial", event.StatusBudget, errors.New("step budget of 3 exhausted")
	}
	reply := agentID + " heard: " + text
	f.appendLocked(addr, event.Text, event.TextData{Text: reply})
	f.appendLocked(addr, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: reply})
	return reply, event.StatusDone, nil
}

func (f *fakeBackend) Sessions(ctx context.Context, agentID string, limit int) ([]mcpserver.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []mcpserver.Session
	for addr, log := range f.logs {
		if agentID != "" && !strings.HasPrefix(addr, agentID+"/") {
			continue
		}
		last := log[len(log)-1]
		out = append(out, mcpserver.Session{Address: addr, State: "idle", UpdatedAt: last.Time, LastSeq: last.Seq})
	}
	slices.SortFunc(out, func(a, b mcpserver.Session) int { return strings.Compare(a.Address, b.Address) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (f *fakeBackend) Events(ctx context.Context, addr string, after int64, limit int) ([]event.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	log, ok := f.logs[addr]
	if !ok {
		return nil, fmt.Errorf("session %s not found", addr)
	}
	var out []event.Event
	for _, e := range log {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}
