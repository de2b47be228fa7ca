package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"agentd/internal/event"
	"agentd/internal/netguard"
	"agentd/internal/secret"
	"agentd/internal/store"
)

// Manager runs the connector rows of this node: one instance per enabled
// row, each receiving from its platform, and delivering its replies
// through the outbox. It is the integration type's connector arm (Type),
// the runtime's Ended hook's connector side, and what the gateway asks
// (gateway.Connectors, OutboxDecider, Pairings).
//
// Lock order: Manager.mu (instances, conversations) → an instance's mu
// (state, streamers) → a limiter's mu (leaf). No lock is held while a
// platform or the store is called.
type Manager struct {
	st        Store
	contacts  Contacts
	sessions  Sessions
	events    Events
	platforms map[string]Factory
	o         Options
	log       *slog.Logger

	ctx    context.Context // ends at Close: every instance's run
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	started bool                 // Start ran: instances run as they are activated
	closed  bool                 // Close ran
	insts   map[string]*instance // by row name
	convs   map[int64]convRef    // session id → its chat
	chats   map[chatKey]int64    // and back
}

type chatKey struct{ connector, chat string }

// Options configure a Manager.
type Options struct {
	// Commands route /name lines to command extensions; nil: none.
	Commands Commands
	// Lead makes one node run each connector; nil: this node runs them
	// all (one node on SQLite).
	Lead Leader
	// Agents are the definitions a row's agent is checked against; nil:
	// not checked.
	Agents Agents
	// Secrets resolve the tokens; default secret.NewResolver("", nil)
	// (environment variables only).
	Secrets *secret.Resolver
	// Guard is the SSRF guard every platform call dials through; default
	// netguard.New(nil).
	Guard *netguard.Guard
	// Logger; default discard.
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// SweepEvery is how often the sweep looks for turns whose reply has
	// no outbox row; default 5s.
	SweepEvery time.Duration
	// PollEvery is how often the outbox worker looks for due rows when
	// nothing woke it; default 1s.
	PollEvery time.Duration
	// StateDir is the directory (the data directory) under which each
	// connector keeps its resume point, connectors/<name>.resume (0600);
	// "": none kept, a restarted platform starts a new session.
	StateDir string
	// RetryEvery is how long a connector waits before trying again after
	// its token was missing or its platform stopped; default 30s.
	RetryEvery time.Duration
}

// convRef is the chat a session's replies go to.
type convRef struct {
	connector string
	chat      Chat
}

// New returns a Manager over st; the platforms are the factories by
// platform name (the schema's platform enum).
func New(st Store, contacts Contacts, sessions Sessions, events Events, platforms map[string]Factory, o *Options) *Manager {
	if o == nil {
		o = &Options{}
	}
	m := &Manager{st: st, contacts: contacts, sessions: sessions, events: events, platforms: platforms, o: *o,
		insts: map[string]*instance{}, convs: map[int64]convRef{}, chats: map[chatKey]int64{}}
	if m.o.Secrets == nil {
		m.o.Secrets = secret.NewResolver("", nil)
	}
	if m.o.Guard == nil {
		m.o.Guard = netguard.New(nil)
	}
	if m.log = m.o.Logger; m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.o.Now == nil {
		m.o.Now = time.Now
	}
	if m.o.SweepEvery <= 0 {
		m.o.SweepEvery = 5 * time.Second
	}
	if m.o.PollEvery <= 0 {
		m.o.PollEvery = time.Second
	}
	if m.o.RetryEvery <= 0 {
		m.o.RetryEvery = 30 * time.Second
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Platforms are the platform names this node knows, sorted.
func (m *Manager) Platforms() []string { return slices.Sorted(maps.Keys(m.platforms)) }

// Start runs the connectors activated so far, and those activated from
// now on at once. The app calls it once the runtime and the agent system
// run: a message received before would find no one to take it.
func (m *Manager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return
	}
	m.started = true
	for _, in := range m.insts {
		m.wg.Go(func() { in.run(m.ctx) })
	}
}

// Close stops every instance (a send in flight gets a few seconds to
// finish) and waits for them. Undelivered replies stay in the outbox.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true // no instance starts any more
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// Ended is the runtime's hook at a turn's end, once its turn_end is
// durable: a turn of a chat's session hands its reply to that connector's
// worker. It never blocks: when the worker's queue is full the sweep
// finds the turn.
func (m *Manager) Ended(s store.Session, it store.InboxItem, end event.TurnEndData) {
	m.mu.RLock()
	c, ok := m.convs[s.ID]
	in := m.insts[c.connector]
	m.mu.RUnlock()
	if !ok || in == nil {
		return
	}
	select {
	case in.ended <- ended{session: s.ID, turn: it.ID, end: end, chat: c.chat}:
	default:
	}
}

// remember maps a session to its chat.
func (m *Manager) remember(session int64, c convRef) {
	m.mu.Lock()
	m.convs[session] = c
	m.chats[chatKey{c.connector, c.chat.Key()}] = session
	m.mu.Unlock()
}

// conv returns the chat of a session.
func (m *Manager) conv(session int64) (convRef, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c, ok := m.convs[session]
	return c, ok
}

func (m *Manager) inst(name string) *instance {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.insts[name]
}

// Webhook returns the handler of connector name when it receives over
// HTTP (a webhook mode) and runs here.
func (m *Manager) Webhook(name string) (http.Handler, bool) {
	in := m.inst(name)
	if in == nil {
		return nil, false
	}
	wh, ok := in.platform().(Webhook)
	if !ok {
		return nil, false
	}
	return http.HandlerFunc(wh.ServeWebhook), true
}

// ErrUnknown: no connector of that name.
var ErrUnknown = errors.New("connector: no such connector")

// Retry moves a failed reply of connector back to pending (dismiss: marks
// it seen instead), writing a delivery event (retried) into its session.
func (m *Manager) Retry(ctx context.Context, connector string, outbox int64, dismiss bool) (store.OutboxItem, error) {
	rows, err := m.st.Outbox(ctx, store.OutboxFilter{Connector: connector, State: store.OutFailed, Before: outbox + 1, Limit: 1})
	if err != nil {
		return store.OutboxItem{}, fmt.Errorf("connector: retry: %w", err)
	}
	if len(rows) == 0 || rows[0].ID != outbox {
		return store.OutboxItem{}, fmt.Errorf("connector: retry %s %d: %w", connector, outbox, store.ErrNotFound)
	}
	it, err := m.st.AckOutbox(ctx, outbox, !dismiss)
	if err != nil {
		return it, fmt.Errorf("connector: retry: %w", err)
	}
	if !dismiss {
		platform := ""
		if in := m.inst(connector); in != nil {
			platform = in.spec.Platform
			in.wake()
		}
		m.record(ctx, it, event.DeliveryData{Op: event.DeliveryRetried, Connector: connector, Platform: platform,
			Turn: it.Turn, Outbox: it.ID, Tries: rows[0].Tries})
	}
	return it, nil
}

// notice puts a connector's own message to a chat in the outbox: it is
// delivered like a reply (retried, by whichever node runs the connector)
// and a restart finds it. session is 0 for a chat that has none yet (a
// person just approved, /help before a first message).
func (m *Manager) notice(ctx context.Context, connector string, c Chat, session int64, text string) error {
	_, _, err := m.st.OpenOutbox(ctx, store.OutboxItem{Connector: connector, Chat: c.Key(), SessionID: session,
		Kind: store.OutNotice, State: store.OutPending, Text: text, SendingPart: -1, NextAt: m.o.Now()})
	if err != nil {
		return fmt.Errorf("connector: %s: notice: %w", connector, err)
	}
	if in := m.inst(connector); in != nil {
		in.wake()
	}
	return nil
}

// record writes a delivery event into the session of it (none for a
// notice of no session); a failure to is logged.
func (m *Manager) record(ctx context.Context, it store.OutboxItem, d event.DeliveryData) {
	if it.SessionID == 0 {
		return
	}
	s, err := m.st.SessionByID(ctx, it.SessionID)
	if err == nil {
		err = m.sessions.Record(ctx, s.Agent+"/"+s.Key, event.New(s.ID, it.Turn, event.Delivery, d))
	}
	if err != nil {
		m.log.Warn("connector: delivery event not written", "connector", it.Connector, "outbox", it.ID, "op", d.Op, "err", err)
	}
}
