package agentsys

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// harness is a System over a testkit runtime on SQLite, with the
// templates defs, a model tests can gate, and the guard events it logs.
type harness struct {
	t     testing.TB
	k     *testkit.Kit
	sys   *System
	model *testkit.Model
	mu    sync.RWMutex // guards defs
	defs  testkit.Agents
	rec   *recorder
	now   *clock
	// hooked is sys for the runtime's hooks (Ended, Accounts), which may
	// run before sys is set: a restarted runtime resumes its inbox.
	hooked atomic.Pointer[System]
}

// agents resolves the harness's definitions, then the System's instances
// (the registry's hook).
type agents struct{ h *harness }

func (a agents) Get(id string) (*agent.Definition, bool) {
	a.h.mu.RLock()
	d, ok := a.h.defs[id]
	a.h.mu.RUnlock()
	if ok {
		return d, true
	}
	if a.h.sys == nil {
		return nil, false
	}
	return a.h.sys.Definition(id)
}

func (a agents) List() []*agent.Definition {
	a.h.mu.RLock()
	defer a.h.mu.RUnlock()
	return a.h.defs.List()
}

// setDef puts (or changes) a definition, as a file edit does.
func (h *harness) setDef(d *agent.Definition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.defs[d.ID] = d
}

// allowDetach lets the agent id (and the instances of it) start detached
// agents (agents.detach).
func (h *harness) allowDetach(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := *h.defs[id]
	d.Agents.Detach = true
	h.defs[id] = &d
}

// recorder keeps the guard events the System logs.
type recorder struct {
	mu  sync.Mutex
	evs []event.AgentData
}

func (r *recorder) RecordAgent(ctx context.Context, session string, turn int64, d event.AgentData) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, d)
	return nil
}

func (r *recorder) events() []event.AgentData {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.AgentData(nil), r.evs...)
}

// clock is a test clock that moves only when told to.
type clock struct {
	mu sync.Mutex
	at time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.at = c.at.Add(d)
	c.mu.Unlock()
}

type harnessOptions struct {
	cfg    agent.AgentsConfig
	noRun  bool                   // do not run the supervisor
	path   string                 // the database of an earlier harness (a restart)
	noHook bool                   // the runtime's Ended hook is lost (as a full channel loses it)
	sweep  time.Duration          // how often the supervisor sweeps (default an hour: never in a test)
	prices map[string]agent.Price // the engine's prices by model name (default none: calls are free)
	engine func(*engine.Options)  // changes the engine's options further
}

// newHarness returns a harness whose definitions are assistant (a user
// agent that may start worker and itself) and worker.
func newHarness(t *testing.T, o *harnessOptions) *harness { return newHarnessTB(t, o) }

// newHarnessTB is newHarness for a test or a benchmark.
func newHarnessTB(t testing.TB, o *harnessOptions) *harness {
	t.Helper()
	if o == nil {
		o = &harnessOptions{}
	}
	h := &harness{t: t, model: testkit.NewModel(), rec: &recorder{}, now: &clock{at: time.Now()}}
	assistant := testkit.Agent("assistant")
	assistant.Agents.Templates = []string{"worker", "assistant"}
	worker := testkit.Agent("worker")
	worker.Type = agent.TypeBackground
	worker.Agents.Templates = []string{"worker"}
	desk := testkit.Agent("desk")
	desk.Type = agent.TypeSwarm
	h.defs = testkit.Agents{"assistant": assistant, "worker": worker, "desk": desk, "helper": testkit.Agent("helper")}
	h.k = testkit.New(t, &testkit.Options{Path: o.path, Model: h.model, Agents: agents{h}, Runtime: func(ro *runtime.Options) {
		ro.Accounts = accounts{h}
		if !o.noHook {
			ro.Ended = func(s store.Session, it store.InboxItem, end event.TurnEndData) {
				if sys := h.hooked.Load(); sys != nil {
					sys.Ended(s, it, end)
				}
			}
		}
	}, Engine: func(eo *engine.Options) {
		eo.Prices = o.prices
		if o.engine != nil {
			o.engine(eo)
		}
	}})
	h.sys = New(h.k.Store, h.k.Runtime, &Options{Agents: agents{h}, Recorder: h.rec, Config: o.cfg, Now: h.now.Now,
		Sweep: cmp.Or(o.sweep, time.Hour)})
	h.hooked.Store(h.sys)
	if !o.noRun {
		h.run()
	}
	return h
}

// accounts is the ledger, found late (the System is made after the
// runtime, as in the app's wiring).
type accounts struct{ h *harness }

func (a accounts) For(ctx context.Context, sess store.Session, turn int64, def *agent.Definition, b agent.Budgets) (engine.Account, string, error) {
	sys := a.h.hooked.Load()
	if sys == nil {
		return nil, "", nil
	}
	return sys.Ledger().For(ctx, sess, turn, def, b)
}

// run runs the supervisor until the test ends.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.sys.Run(ctx)
	}()
	h.t.Cleanup(func() {
		cancel()
		h.sys.Close()
		<-done
	})
}

// send sends text to addr and waits for its turn.
func (h *harness) send(addr, text string) (runtime.Receipt, event.TurnEndData) {
	h.t.Helper()
	rc, end, err := h.k.Runtime.Send(h.t.Context(), runtime.Input{Session: addr, Text: text})
	if err != nil {
		h.t.Fatal(err)
	}
	return rc, end
}

// eventually waits until cond holds, failing the test after a long while
// (no timing is asserted: the bound only ends a test that hangs).
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// instance reads an instance.
func (h *harness) instance(id string) store.Instance {
	h.t.Helper()
	in, err := h.k.Store.Instance(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return in
}

// reported waits until the instance id has ended and its report is
// recorded, and returns it.
func (h *harness) reported(id string) store.Instance {
	h.t.Helper()
	var in store.Instance
	h.eventually("the report of "+id, func() bool {
		in = h.instance(id)
		return !in.ReportedAt.IsZero()
	})
	return in
}

// log returns the events of the session at addr.
func (h *harness) log(addr string) []event.Event {
	h.t.Helper()
	agentID, key, _ := cutAddress(addr)
	sess, err := h.k.Store.SessionByAddress(context.Background(), agentID, key)
	if err != nil {
		h.t.Fatal(err)
	}
	evs, err := h.k.Store.Events(context.Background(), sess.ID, 0, 10000)
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}

// reports returns the system messages from origin in the log at addr.
func (h *harness) reports(addr, origin string) []event.InputData {
	h.t.Helper()
	var out []event.InputData
	for _, ev := range h.log(addr) {
		var d event.InputData
		if ev.Kind == event.SystemMessage && ev.Decode(&d) == nil && d.Origin == origin {
			out = append(out, d)
		}
	}
	return out
}

// slowParent holds the model on "slow", and has assistant/main run a
// turn ("slow parent") that starts a worker sub-agent ("slow child"):
// both are running, held, when it returns the turn's receipt and the
// child.
func (h *harness) slowParent() (runtime.Receipt, store.Instance) {
	h.t.Helper()
	h.holdText("slow")
	rc, err := h.k.Runtime.Submit(context.Background(), runtime.Input{Session: "assistant/main", Text: "slow parent"})
	if err != nil {
		h.t.Fatal(err)
	}
	h.eventually("the parent's turn running", func() bool { return h.model.Active() == 1 })
	return rc, h.startChild(StartRequest{Turn: rc.Turn, Prompt: "slow child", Template: "worker"})
}

// count returns how many events of kind the log at addr holds.
func (h *harness) count(addr string, kind event.Kind) int {
	h.t.Helper()
	n := 0
	for _, ev := range h.log(addr) {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func errorsf(format string, a ...any) error { return fmt.Errorf(format, a...) }

// holdText makes every model call whose last user message is text wait
// until the returned func is called (or its context ends); the others are
// answered "re: <text>". Call it before the first call.
func (h *harness) holdText(text string) (release func()) { return h.holdTexts(text)[0] }

// holdTexts is holdText for several texts, each released on its own by
// the func of the same index.
func (h *harness) holdTexts(texts ...string) (release []func()) {
	chs := make([]chan struct{}, len(texts))
	for i := range texts {
		ch := make(chan struct{})
		var once sync.Once
		chs[i] = ch
		release = append(release, func() { once.Do(func() { close(ch) }) })
		h.t.Cleanup(release[i])
	}
	h.model.Respond = func(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		last := testkit.LastUser(req)
		for i, text := range texts {
			if !strings.Contains(last, text) {
				continue
			}
			select {
			case <-chs[i]:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &model.Response{Text: "re: " + last, StopReason: "stop", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}
	return release
}

// typedAgent returns a testkit agent of a type, with tags.
func typedAgent(id, typ string, tags ...string) *agent.Definition {
	d := testkit.Agent(id)
	d.Type, d.Tags = typ, tags
	return d
}
