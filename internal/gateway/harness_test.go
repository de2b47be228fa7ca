package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/gateway"
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

func (a agents) List() []*agent.Definition {
	var out []*agent.Definition
	for _, d := range a {
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y *agent.Definition) int { return strings.Compare(x.ID, y.ID) })
	return out
}

func testAgents() agents {
	return agents{
		"a": {ID: "a", Name: "Alpha", Type: agent.TypeUser, Model: agent.Model{Provider: "test", Name: "m1"}, File: "agents/a.yaml"},
		"b": {ID: "b", Name: "Beta", Type: agent.TypePermanent, Model: agent.Model{Provider: "test", Name: "m2"}},
	}
}

type models struct{ p model.Provider }

func (m models) Provider(agent.Model) (model.Provider, error) { return m.p, nil }

// gate holds one model call until it is released or the call's context ends.
type gate struct {
	entered chan struct{}
	release chan struct{}
}

// provider answers "re: <last user message>", streamed word by word; a call
// whose last user message has a gate waits at it.
type provider struct {
	mu    sync.Mutex
	gates map[string]*gate
}

func (p *provider) gate(text string) *gate {
	g := &gate{entered: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	p.gates[text] = g
	p.mu.Unlock()
	return g
}

func (p *provider) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var text string
	for _, m := range req.Messages {
		if m.Role == model.RoleUser {
			text = m.Content
		}
	}
	p.mu.Lock()
	g := p.gates[text]
	delete(p.gates, text)
	p.mu.Unlock()
	if g != nil {
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	reply := "re: " + text
	if onDelta != nil {
		for w := range strings.SplitAfterSeq(reply, " ") {
			onDelta(model.Delta{Text: w})
		}
	}
	return &model.Response{Text: reply, StopReason: "stop", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
}

// setup configures newEnv; the zero value gives the defaults.
type setup struct {
	wrap     func(store.Store) store.Store          // wraps the runtime's store
	sessions gateway.Sessions                       // nil: the store
	runtime  func(*runtime.Runtime) gateway.Runtime // wraps the runtime for the server
	options  func(*gateway.Options)                 // changes the server's options
}

// env is the API served over HTTP by a runtime built from real parts.
type env struct {
	t    testing.TB
	st   *sqlite.Store
	rt   *runtime.Runtime
	p    *provider
	srv  *gateway.Server
	http *httptest.Server
	once sync.Once
}

func newEnv(t testing.TB, s setup) *env {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var rs store.Store = st
	if s.wrap != nil {
		rs = s.wrap(st)
	}
	p := &provider{gates: map[string]*gate{}}
	bus := event.NewBus()
	eng := engine.New(&engine.Options{Live: bus, Models: models{p}, Tools: tool.NewRegistry(nil)})
	rt := runtime.New(&runtime.Options{Store: rs, Agents: testAgents(), Engine: eng, Bus: bus})
	var grt gateway.Runtime = rt
	if s.runtime != nil {
		grt = s.runtime(rt)
	}
	var sessions gateway.Sessions = st
	if s.sessions != nil {
		sessions = s.sessions
	}
	o := &gateway.Options{Runtime: grt, Sessions: sessions, Agents: testAgents(), Version: "v1.2.3"}
	if s.options != nil {
		s.options(o)
	}
	srv := gateway.New(o)
	e := &env{t: t, st: st, rt: rt, p: p, srv: srv, http: httptest.NewServer(srv)}
	t.Cleanup(e.close)
	return e
}

func (e *env) close() {
	e.once.Do(func() {
		e.http.CloseClientConnections()
		e.http.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		e.rt.Close(ctx)
		e.st.Close()
	})
}

// do sends a request and returns the response's status, content type and body.
func (e *env) do(method, path, body string) (int, string, []byte) {
	e.t.Helper()
	return e.doT(e.t, method, path, body)
}

// doT is do for a test other than the one that made e (a fuzz target's).
func (e *env) doT(t testing.TB, method, path, body string) (int, string, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, e.http.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
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

const waitLimit = 20 * time.Second

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

// secret is in every error a failing store wrapper returns; no response
// may show it.
const secret = "/var/lib/agentd/private/agentd.db"

var errDisk = errors.New("sqlite: disk I/O error at " + secret)
