package connector

import (
	"context"
	"maps"
	"slices"
	"time"

	"agentd/internal/gateway"
	"agentd/internal/store"
)

// figures are an instance's state and counters since it started on this
// node, guarded by the instance's mu.
type figures struct {
	state, bot   string
	since        time.Time
	lastErr      string
	lastErrAt    time.Time
	rateUntil    time.Time
	received     uint64
	delivered    uint64
	retried      uint64
	failed       uint64
	edits        uint64
	refused      map[string]uint64
	refusedChats []string // the last group chats refused, newest last
}

// maxRefusedChats is how many refused group chats a connector lists.
const maxRefusedChats = 10

func newFigures(now time.Time) figures {
	return figures{state: StateConnecting, since: now, refused: map[string]uint64{}}
}

// setState records the connection's state (err already redacted by the
// platform, redacted again here).
func (in *instance) setState(state, bot string, err error) {
	now := in.m.o.Now()
	var msg string
	if err != nil {
		msg = in.redact(err.Error())
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.fig.state != state {
		in.fig.state, in.fig.since = state, now
	}
	if bot != "" {
		in.fig.bot = bot
	}
	if msg != "" {
		in.fig.lastErr, in.fig.lastErrAt = msg, now
	}
}

// count adds to a counter.
func (in *instance) count(f func(*figures)) {
	in.mu.Lock()
	f(&in.fig)
	in.mu.Unlock()
}

// refuse counts a refused message, and remembers a refused group chat.
func (in *instance) refuse(reason string, c Chat) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.fig.refused[reason]++
	if reason != RefusedGroup || slices.Contains(in.fig.refusedChats, c.ID) {
		return
	}
	in.m.log.Info("connector: a group chat not allowed wrote; add its id to groups.allow to talk there",
		"connector", in.name, "chat", c.ID)
	in.fig.refusedChats = append(in.fig.refusedChats, c.ID)
	if len(in.fig.refusedChats) > maxRefusedChats {
		in.fig.refusedChats = in.fig.refusedChats[1:]
	}
}

// failure records an error of a delivery (redacted).
func (in *instance) failure(msg string) {
	now := in.m.o.Now()
	in.mu.Lock()
	in.fig.lastErr, in.fig.lastErrAt = msg, now
	in.mu.Unlock()
}

// List returns every connector's state on this node, by name.
func (m *Manager) List(ctx context.Context) []gateway.ConnectorState {
	m.mu.RLock()
	names := slices.Sorted(maps.Keys(m.insts))
	m.mu.RUnlock()
	out := make([]gateway.ConnectorState, 0, len(names))
	for _, n := range names {
		if st, ok := m.Get(ctx, n); ok {
			out = append(out, st)
		}
	}
	return out
}

// Get returns one connector's state, with its queue read from the store.
func (m *Manager) Get(ctx context.Context, name string) (gateway.ConnectorState, bool) {
	in := m.inst(name)
	if in == nil {
		return gateway.ConnectorState{}, false
	}
	s := in.spec
	in.mu.Lock()
	f := in.fig
	st := gateway.ConnectorState{Name: name, Platform: s.Platform, Agent: s.Agent, Mode: s.Mode, DMPolicy: s.DMPolicy,
		State: f.state, Since: f.since, Bot: f.bot, LastError: f.lastErr, LastErrorAt: f.lastErrAt,
		RateLimitedUntil: f.rateUntil, Received: f.received, Delivered: f.delivered, Retried: f.retried,
		FailedTotal: f.failed, Edits: f.edits, Refused: maps.Clone(f.refused), RefusedChats: slices.Clone(f.refusedChats)}
	in.mu.Unlock()
	if st.Mode == "" {
		st.Mode = defaultMode(s.Platform)
	}
	if st.RateLimitedUntil.Before(m.o.Now()) {
		st.RateLimitedUntil = time.Time{}
	}
	if len(st.Refused) == 0 {
		st.Refused = nil
	}
	st.Queue, st.Oldest, _ = m.st.OutboxDepth(ctx, name)
	if failed, err := m.st.Outbox(ctx, store.OutboxFilter{Connector: name, State: store.OutFailed, Limit: 1000}); err == nil {
		for _, it := range failed {
			if !it.Acked {
				st.Failed++
			}
		}
	}
	if ps, err := m.st.Pairings(ctx, name, store.PairPending); err == nil {
		now := m.o.Now()
		for _, p := range ps {
			if p.ExpiresAt.After(now) {
				st.PairingsPending++
			}
		}
	}
	return st, true
}
