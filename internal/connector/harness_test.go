package connector

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// testToken is the bot token the rigs' environment holds.
const testToken = "123456:AAE-secret-bot-token"

// rig is a connector Manager over a testkit runtime on SQLite, the agent
// system, a scripted platform and a model tests can gate.
type rig struct {
	t      testing.TB
	k      *testkit.Kit
	sys    *agentsys.System
	model  *testkit.Model
	p      *fakePlatform
	m      *Manager
	st     Store // what the Manager uses (a wrapper in crash tests)
	logs   *syncBuffer
	clock  *testClock
	hooked atomic.Pointer[Manager]
	noHook bool
	ends   atomic.Int64 // the Ended hook's calls, counted once the Manager has had them
	sweep  time.Duration
	now    func() time.Time
	cmds   Commands
	agents Contacts // what the Manager contacts (r.sys, maybe wrapped)
	// factory makes the platform the next start gives the Manager (r.p's
	// unless a test sets it).
	factory Factory
}

type rigOptions struct {
	clock  bool // the Manager's clock is the rig's, moved by the test
	caps   Caps
	noHook bool // the runtime's Ended hook is lost (a crash before it)
	wrap   func(Store) Store
	cmds   Commands
	sweep  time.Duration // the Manager's SweepEvery; default 20ms
	// agents wraps the agent system the Manager contacts.
	agents func(*agentsys.System) Contacts
}

// contactOnly is an agent system that can only Contact (no
// ContactSessions): a chat's conversation is recorded after its first
// message is submitted.
type contactOnly struct{ Contacts }

type defs struct {
	d   testkit.Agents
	sys *atomic.Pointer[agentsys.System]
}

func (a defs) Get(id string) (*agent.Definition, bool) {
	if d, ok := a.d[id]; ok {
		return d, true
	}
	if sys := a.sys.Load(); sys != nil {
		return sys.Definition(id)
	}
	return nil, false
}

// testClock is a clock that moves only when told to.
type testClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.at = c.at.Add(d)
	c.mu.Unlock()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRig(t testing.TB, o *rigOptions) *rig {
	t.Helper()
	if o == nil {
		o = &rigOptions{}
	}
	r := &rig{t: t, model: testkit.NewModel(), p: newFakePlatform(o.caps), logs: &syncBuffer{}, noHook: o.noHook,
		clock: &testClock{at: time.Now()}, now: time.Now, cmds: o.cmds, sweep: cmp.Or(o.sweep, 20*time.Millisecond)}
	if o.clock {
		r.now = r.clock.Now
	}
	var sys atomic.Pointer[agentsys.System]
	desk := testkit.Agent("desk")
	desk.Type = agent.TypeSwarm
	worker := testkit.Agent("worker")
	worker.Type = agent.TypeBackground
	ds := defs{d: testkit.Agents{"assistant": testkit.Agent("assistant"), "desk": desk, "worker": worker}, sys: &sys}
	r.k = testkit.New(t, &testkit.Options{Model: r.model, Agents: ds, Runtime: func(ro *runtime.Options) {
		ro.Ended = func(s store.Session, it store.InboxItem, end event.TurnEndData) {
			if m := r.hooked.Load(); m != nil && !r.noHook {
				m.Ended(s, it, end)
			}
			r.ends.Add(1)
		}
	}})
	r.sys = agentsys.New(r.k.Store, r.k.Runtime, &agentsys.Options{Agents: ds, Sweep: time.Hour})
	sys.Store(r.sys)
	r.agents = r.sys
	if o.agents != nil {
		r.agents = o.agents(r.sys)
	}
	r.st = r.k.Store
	if o.wrap != nil {
		r.st = o.wrap(r.k.Store)
	}
	r.start()
	return r
}

// start makes a fresh Manager (a restart of the connectors) over the same
// store, runtime and platform.
func (r *rig) start() {
	if r.factory == nil {
		r.factory = r.p.factory
	}
	r.m = New(r.st, r.agents, r.k.Runtime, r.k.Bus, map[string]Factory{"fake": r.factory}, &Options{
		Agents:     defs{d: testkit.Agents{"assistant": testkit.Agent("assistant")}, sys: new(atomic.Pointer[agentsys.System])},
		Secrets:    secret.NewResolver("", &secret.Options{LookupEnv: func(n string) (string, bool) { return testToken, n == "FAKE_TOKEN" }}),
		Logger:     slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:        r.now,
		Commands:   r.cmds,
		PollEvery:  5 * time.Millisecond,
		SweepEvery: r.sweep,
		RetryEvery: 10 * time.Millisecond,
	})
	r.hooked.Store(r.m)
	r.m.Start()
	m := r.m
	r.t.Cleanup(m.Close)
}

// activate puts the connector row "chat" with spec's fields over the
// defaults (platform fake, token from FAKE_TOKEN, agent assistant).
func (r *rig) activate(fields string) {
	r.t.Helper()
	spec := `{"platform":"fake","token_env":"FAKE_TOKEN","agent":"assistant"` + fields + `}`
	if err := r.m.Activate(r.t.Context(), &store.Extension{Type: "integration", Name: "chat", Spec: json.RawMessage(spec), Version: 1}); err != nil {
		r.t.Fatal(err)
	}
}

// inbound hands a message to the connector as its platform would.
func (r *rig) inbound(m Inbound) error {
	r.t.Helper()
	return r.p.handler(r.t.Context()).Inbound(r.t.Context(), m)
}

// dm is a direct message from user.
func dm(key, user, text string) Inbound {
	return Inbound{Key: key, Chat: Chat{ID: "c-" + user, Kind: ChatDM}, User: user, Name: "User " + user, Text: text}
}

// waitFor waits until cond holds (no sleeping assertions: the test fails
// only when it never holds).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rows lists the connector's outbox rows, oldest first.
func (r *rig) rows() []store.OutboxItem {
	r.t.Helper()
	rows, err := r.k.Store.Outbox(context.Background(), store.OutboxFilter{Connector: "chat", Limit: 1000})
	if err != nil {
		r.t.Fatal(err)
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return rows
}

// settled reports whether every outbox row is sent, failed or skipped.
func (r *rig) settled(n int) func() bool {
	return func() bool {
		rows := r.rows()
		if len(rows) < n {
			return false
		}
		for _, it := range rows {
			switch it.State {
			case store.OutStreaming, store.OutPending, store.OutSending:
				return false
			}
		}
		return true
	}
}

// deliveries returns the delivery events of the session of user's DM.
func (r *rig) deliveries(session int64) []event.DeliveryData {
	r.t.Helper()
	evs, err := r.k.Store.Events(context.Background(), session, 0, 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []event.DeliveryData
	for _, e := range evs {
		if e.Kind == event.Delivery {
			var d event.DeliveryData
			if err := e.Decode(&d); err != nil {
				r.t.Fatal(err)
			}
			out = append(out, d)
		}
	}
	return out
}

// noToken fails the test if the token is anywhere in s.
func noToken(t *testing.T, where, s string) {
	t.Helper()
	if strings.Contains(s, testToken) || strings.Contains(s, "AAE-secret") {
		t.Errorf("the token is in %s: %s", where, s)
	}
}
