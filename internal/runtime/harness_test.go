package runtime_test

import (
	"bytes"
	"context"
	"path/filepath"
	goruntime "runtime"
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
	"agentd/internal/store/sqlite"
	"agentd/internal/tool"
)

// agents is a fixed set of agent definitions.
type agents map[string]*agent.Definition

func (a agents) Get(id string) (*agent.Definition, bool) {
	d, ok := a[id]
	return d, ok
}

func def(id, mode string) *agent.Definition {
	return &agent.Definition{ID: id, Name: id, Type: agent.TypeUser,
		Model: agent.Model{Provider: "test", Name: "m", Retries: 1}, Inbox: agent.Inbox{Mode: mode}}
}

// testAgents are the agents most tests use: "a" and "b" queue messages
// that arrive mid-turn, "i" interrupts the running turn.
func testAgents() agents {
	return agents{"a": def("a", agent.ModeQueue), "b": def("b", ""), "i": def("i", agent.ModeInterrupt)}
}

// models resolves every model to one provider.
type models struct{ p model.Provider }

func (m models) Provider(agent.Model) (model.Provider, error) { return m.p, nil }

// hookStore calls hook with every batch before the store commits it,
// synchronously or not.
type hookStore struct {
	*sqlite.Store
	hook func(ctx context.Context, b *store.Batch)
}

func (s hookStore) Commit(ctx context.Context, b *store.Batch) error {
	s.hook(ctx, b)
	return s.Store.Commit(ctx, b)
}

func (s hookStore) CommitAsync(ctx context.Context, b *store.Batch) func() error {
	s.hook(ctx, b)
	return s.Store.CommitAsync(ctx, b)
}

// gate holds one model call until it is released or the call's context ends.
type gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	ctx     context.Context // the held call's, set before entered is closed
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

// provider is a scripted model. By default it answers "re: <last user
// message>", streamed word by word. A call whose last user message has a
// gate waits at it; with hold set every call waits for a token. respond, if
// set, answers instead of the default. It records every request and how
// many calls run at once, in all and per tag (the last user message's text
// up to its first ':').
type provider struct {
	mu        sync.Mutex
	reqs      []*model.Request
	gates     map[string]*gate
	hold      chan struct{}
	active    map[string]int
	maxTag    map[string]int
	activeAll int
	maxAll    int
	respond   func(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error)
}

func newProvider() *provider {
	return &provider{gates: map[string]*gate{}, active: map[string]int{}, maxTag: map[string]int{}}
}

// gate makes the next call whose last user message is text wait.
func (p *provider) gate(text string) *gate {
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	p.gates[text] = g
	p.mu.Unlock()
	return g
}

func lastUser(req *model.Request) string {
	var last string
	for _, m := range req.Messages {
		if m.Role == model.RoleUser {
			last = m.Content
		}
	}
	return last
}

func tagOf(text string) string {
	tag, _, _ := strings.Cut(text, ":")
	return tag
}

func (p *provider) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // as a real client fails on a cancelled request
	}
	text := lastUser(req)
	tag := tagOf(text)
	cp := *req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	p.mu.Lock()
	p.reqs = append(p.reqs, &cp)
	p.active[tag]++
	p.maxTag[tag] = max(p.maxTag[tag], p.active[tag])
	p.activeAll++
	p.maxAll = max(p.maxAll, p.activeAll)
	g := p.gates[text]
	delete(p.gates, text)
	hold, respond := p.hold, p.respond
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.active[tag]--
		p.activeAll--
		p.mu.Unlock()
	}()
	if g != nil {
		g.ctx = ctx
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if respond != nil {
		return respond(ctx, &cp, onDelta)
	}
	reply := "re: " + text
	if onDelta != nil {
		for w := range strings.SplitAfterSeq(reply, " ") {
			onDelta(model.Delta{Text: w})
		}
	}
	return &model.Response{Text: reply, StopReason: "stop", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
}

// requests returns the requests whose last user message is text.
func (p *provider) requests(text string) []*model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*model.Request
	for _, r := range p.reqs {
		if lastUser(r) == text {
			out = append(out, r)
		}
	}
	return out
}

// maxOf returns the most calls that ran at once with tag ("" for all).
func (p *provider) maxOf(tag string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if tag == "" {
		return p.maxAll
	}
	return p.maxTag[tag]
}

func (p *provider) calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

// setup configures newEnv; the zero value gives the defaults.
type setup struct {
	path       string // database file; "" for a new one
	agents     agents
	tools      []tool.Tool
	p          *provider
	wrap       func(store.Store) store.Store
	hook       func(ctx context.Context, b *store.Batch) // called with each batch before it is committed
	maxTurns   int
	cache      int
	cacheBytes int64
}

// env is a runtime built from real parts: a SQLite store, the engine and
// the tool registry, with a scripted provider.
type env struct {
	t    testing.TB
	path string
	st   *sqlite.Store
	rt   *runtime.Runtime
	p    *provider
	once sync.Once
}

func newEnv(t testing.TB, s setup) *env {
	t.Helper()
	if s.path == "" {
		s.path = filepath.Join(t.TempDir(), "t.db")
	}
	if s.agents == nil {
		s.agents = testAgents()
	}
	if s.p == nil {
		s.p = newProvider()
	}
	st, err := sqlite.Open(t.Context(), s.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rs store.Store = st
	if s.hook != nil {
		rs = hookStore{st, s.hook}
	}
	if s.wrap != nil {
		rs = s.wrap(rs)
	}
	reg := tool.NewRegistry(nil)
	for _, tl := range s.tools {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	bus := event.NewBus()
	eng := engine.New(&engine.Options{Live: bus, Models: models{s.p}, Tools: reg, BaseBackoff: time.Millisecond})
	rt := runtime.New(&runtime.Options{Store: rs, Agents: s.agents, Engine: eng, Bus: bus,
		MaxConcurrentTurns: s.maxTurns, CacheSessions: s.cache, CacheBytes: s.cacheBytes})
	e := &env{t: t, path: s.path, st: st, rt: rt, p: s.p}
	t.Cleanup(e.close)
	return e
}

// close stops the runtime at once (running turns stay unfinished) and
// closes the store.
func (e *env) close() {
	e.once.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		e.rt.Close(ctx)
		if err := e.st.Close(); err != nil {
			e.t.Errorf("close store: %v", err)
		}
	})
}

func (e *env) start() int {
	e.t.Helper()
	n, err := e.rt.Start(e.t.Context())
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) submit(addr, text string) runtime.Receipt {
	e.t.Helper()
	rc, err := e.rt.Submit(e.t.Context(), runtime.Input{Session: addr, Text: text, Source: "test"})
	if err != nil {
		e.t.Fatalf("submit %q to %s: %v", text, addr, err)
	}
	return rc
}

func (e *env) wait(turn int64) event.TurnEndData {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), waitLimit)
	defer cancel()
	end, err := e.rt.Wait(ctx, turn)
	if err != nil {
		e.t.Fatalf("wait for turn %d: %v", turn, err)
	}
	return end
}

func (e *env) events(session int64) []event.Event {
	e.t.Helper()
	evs, err := e.st.Events(e.t.Context(), session, 0, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

func (e *env) turnEvents(session, turn int64) []event.Event {
	e.t.Helper()
	evs, err := e.st.TurnEvents(e.t.Context(), session, turn)
	if err != nil {
		e.t.Fatal(err)
	}
	return evs
}

// waitLimit bounds every wait in these tests; reaching it is a failure.
const waitLimit = 20 * time.Second

// eventually polls cond until it holds, failing the test at waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recv waits for ch to be closed or to deliver.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func kinds(evs []event.Event) []event.Kind {
	out := make([]event.Kind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

func decode[T any](t *testing.T, e event.Event) T {
	t.Helper()
	var v T
	if err := e.Decode(&v); err != nil {
		t.Fatalf("decode %s event %d: %v", e.Kind, e.Seq, err)
	}
	return v
}

// workerStates returns the scheduler state ("select", "running", ...) of
// every session worker goroutine of any runtime in this process.
func workerStates() []string {
	buf := make([]byte, 1<<20)
	for {
		n := goruntime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var states []string
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		// A worker that has not started yet shows as the go statement's
		// wrapper in kick.
		if !bytes.Contains(g, []byte("agentd/internal/runtime.(*Runtime).work(")) &&
			!bytes.Contains(g, []byte("agentd/internal/runtime.(*Runtime).kick.gowrap")) {
			continue
		}
		head, _, _ := bytes.Cut(g, []byte("\n"))
		_, st, _ := bytes.Cut(head, []byte("["))
		st, _, _ = bytes.Cut(st, []byte("]"))
		st, _, _ = bytes.Cut(st, []byte(","))
		states = append(states, string(st))
	}
	return states
}

func workers() int { return len(workerStates()) }

// parked reports whether every state is a blocked one.
func parked(states []string) bool {
	for _, s := range states {
		switch s {
		case "running", "runnable", "syscall", "preempted":
			return false
		}
	}
	return true
}

// countingTool returns a tool that counts its calls and answers out.
func countingTool(name string, readOnly bool, n *atomic.Int32, out string) tool.Tool {
	return tool.Func(tool.Spec{Name: name, Description: "test tool " + name, ReadOnly: readOnly},
		func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			n.Add(1)
			return tool.Result{Output: out}, nil
		})
}

// callOnce answers a turn whose input is trigger with one call of the
// named tool (id c1), a turn that has tool results with "after: <last
// result>", and any other turn with "re: <input>".
func callOnce(name, trigger string) func(context.Context, *model.Request, func(model.Delta)) (*model.Response, error) {
	return func(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == model.RoleTool:
			return &model.Response{Text: "after: " + last.Content, StopReason: "stop", Usage: model.Usage{InputTokens: 5, OutputTokens: 2}}, nil
		case last.Content == trigger:
			return &model.Response{ToolCalls: []model.ToolCall{{ID: "c1", Name: name, Args: []byte(`{}`)}},
				StopReason: "tool_calls", Usage: model.Usage{InputTokens: 3, OutputTokens: 1}}, nil
		}
		return &model.Response{Text: "re: " + last.Content, StopReason: "stop", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}
}
