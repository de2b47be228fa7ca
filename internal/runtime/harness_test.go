package runtime_test

import (
	"bytes"
	"context"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

func def(id, mode string) *agent.Definition {
	return &agent.Definition{ID: id, Name: id, Type: agent.TypeUser,
		Model: agent.Model{Provider: "test", Name: "m", Retries: 1}, Inbox: agent.Inbox{Mode: mode}}
}

// testAgents are the agents most tests use: "a" and "b" queue messages
// that arrive mid-turn, "i" interrupts the running turn.
func testAgents() testkit.Agents {
	return testkit.Agents{"a": def("a", agent.ModeQueue), "b": def("b", ""), "i": def("i", agent.ModeInterrupt)}
}

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

// setup configures newEnv; the zero value gives the defaults.
type setup struct {
	path       string // database file; "" for a new one
	agents     testkit.Agents
	tools      []tool.Tool
	p          *testkit.Model
	wrap       func(store.Store) store.Store
	hook       func(ctx context.Context, b *store.Batch) // called with each batch before it is committed
	maxTurns   int
	cache      int
	cacheBytes int64
	cacheIdle  time.Duration
	opts       func(*runtime.Options) // changes the runtime's options last
}

// env is a runtime built from real parts (testkit): a SQLite store, the
// engine and the tool registry, with a testkit.Model.
type env struct {
	t    testing.TB
	path string
	st   *sqlite.Store
	rt   *runtime.Runtime
	p    *testkit.Model
	k    *testkit.Kit
}

func newEnv(t testing.TB, s setup) *env {
	t.Helper()
	if s.agents == nil {
		s.agents = testAgents()
	}
	if s.p == nil {
		s.p = testkit.NewModel()
	}
	wrap := s.wrap
	if s.hook != nil {
		wrap = func(st store.Store) store.Store { return hookStore{st.(*sqlite.Store), s.hook} }
	}
	k := testkit.New(t, &testkit.Options{Path: s.path, Agents: s.agents, Model: s.p, Tools: s.tools, Wrap: wrap,
		Runtime: func(o *runtime.Options) {
			o.MaxConcurrentTurns, o.CacheSessions, o.CacheBytes, o.CacheIdle = s.maxTurns, s.cache, s.cacheBytes, s.cacheIdle
			if s.opts != nil {
				s.opts(o)
			}
		}})
	return &env{t: t, path: k.Path, st: k.Store, rt: k.Runtime, p: s.p, k: k}
}

// close stops the runtime at once (running turns stay unfinished) and
// closes the store.
func (e *env) close() {
	if err := e.k.Close(); err != nil {
		e.t.Errorf("close: %v", err)
	}
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
