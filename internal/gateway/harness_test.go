package gateway_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
	"agentd/internal/testkit"
)

// agents is a fixed set of agent definitions.
type agents = testkit.Agents

func testAgents() agents {
	return agents{
		"a": {ID: "a", Name: "Alpha", Type: agent.TypeUser, Model: agent.Model{Provider: "test", Name: "m1"}, File: "agents/a.yaml"},
		"b": {ID: "b", Name: "Beta", Type: agent.TypePermanent, Model: agent.Model{Provider: "test", Name: "m2"}},
	}
}

// setup configures newEnv; the zero value gives the defaults.
type setup struct {
	wrap     func(store.Store) store.Store          // wraps the runtime's store
	sessions gateway.Sessions                       // nil: the store
	runtime  func(*runtime.Runtime) gateway.Runtime // wraps the runtime for the server
	options  func(*gateway.Options)                 // changes the server's options
}

// env is the API served over HTTP by a runtime built from real parts
// (testkit), whose model answers "re: <last user message>".
type env struct {
	t    testing.TB
	st   *sqlite.Store
	rt   *runtime.Runtime
	p    *testkit.Model
	srv  *gateway.Server
	http *httptest.Server
}

func newEnv(t testing.TB, s setup) *env {
	t.Helper()
	p := testkit.NewModel()
	k := testkit.New(t, &testkit.Options{Agents: testAgents(), Model: p, Wrap: s.wrap})
	var grt gateway.Runtime = k.Runtime
	if s.runtime != nil {
		grt = s.runtime(k.Runtime)
	}
	var sessions gateway.Sessions = k.Store
	if s.sessions != nil {
		sessions = s.sessions
	}
	o := &gateway.Options{Runtime: grt, Sessions: sessions, Agents: testAgents(), Version: "v1.2.3"}
	if s.options != nil {
		s.options(o)
	}
	srv := gateway.New(o)
	e := &env{t: t, st: k.Store, rt: k.Runtime, p: p, srv: srv, http: httptest.NewServer(srv)}
	// Cleanups run last first: the server closes before the Kit.
	t.Cleanup(func() {
		e.http.CloseClientConnections()
		e.http.Close()
	})
	return e
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
