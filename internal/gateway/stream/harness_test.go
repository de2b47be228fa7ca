package stream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/gateway/stream"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
	"agentd/internal/testkit"
)

// The runtime and the store provide a Source between them.
var (
	_ stream.Log       = (*runtime.Runtime)(nil)
	_ stream.Directory = (store.Store)(nil)
)

// source is a Source's log: a runtime built from real parts (testkit),
// which the tests feed outside any turn (Runtime.Record commits events,
// then publishes them) and through its bus (live events).
type source struct {
	st  *sqlite.Store
	bus *event.Bus
	rt  *runtime.Runtime
}

// anyAgent knows every agent: the tests name sessions freely.
type anyAgent struct{}

func (anyAgent) Get(id string) (*agent.Definition, bool) { return testkit.Agent(id), true }

func newSource(t testing.TB) *source {
	t.Helper()
	k := testkit.New(t, &testkit.Options{Agents: anyAgent{}, SQLite: &sqlite.Options{Synchronous: sqlite.SyncNormal}})
	return &source{st: k.Store, bus: k.Bus, rt: k.Runtime}
}

func (s *source) session(t testing.TB, addr string) store.Session {
	t.Helper()
	agent, key, _ := strings.Cut(addr, "/")
	sess, _, err := s.st.Session(context.Background(), agent, key)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// commit logs events of the given kinds in one batch and publishes them,
// returning them with their sequence numbers.
func (s *source) commit(t testing.TB, addr string, kinds ...event.Kind) []event.Event {
	t.Helper()
	sess := s.session(t, addr)
	evs := make([]event.Event, len(kinds))
	for i, k := range kinds {
		evs[i] = event.New(sess.ID, 1, k, event.TextData{Text: fmt.Sprintf("%s %d", k, i)})
	}
	if err := s.rt.Record(context.Background(), addr, evs...); err != nil {
		t.Error(err)
		return nil
	}
	return evs
}

// commitN logs n events of one kind and payload in one batch and
// publishes them.
func (s *source) commitN(t testing.TB, addr string, n int, kind event.Kind, payload any) {
	t.Helper()
	sess := s.session(t, addr)
	evs := make([]event.Event, n)
	for i := range evs {
		evs[i] = event.New(sess.ID, 1, kind, payload)
	}
	if err := s.rt.Record(context.Background(), addr, evs...); err != nil {
		t.Error(err)
	}
}

// live publishes a live-only event.
func (s *source) live(t testing.TB, addr string, kind event.Kind, payload any) {
	t.Helper()
	sess := s.session(t, addr)
	s.bus.Publish(event.New(sess.ID, 1, kind, payload))
}

type env struct {
	src *source
	h   *stream.Handler
	srv *httptest.Server
	url string // ws://.../v1/stream
}

func newEnv(t testing.TB, o *stream.Options) *env {
	t.Helper()
	src := newSource(t)
	h := stream.New(stream.Join(src.rt, src.st), o)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return &env{src: src, h: h, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/stream"}
}

// Frame is a server frame as a client reads it.
type Frame struct {
	Type      string          `json:"type"`
	Sub       string          `json:"sub,omitempty"`
	Session   string          `json:"session,omitempty"`
	SessionID int64           `json:"session_id,omitempty"`
	Seq       int64           `json:"seq,omitempty"`
	Turn      int64           `json:"turn,omitempty"`
	Kind      string          `json:"kind,omitempty"`
	Time      time.Time       `json:"-"`
	Data      json.RawMessage `json:"data,omitempty"`
	Done      bool            `json:"done,omitempty"`
	Error     string          `json:"error,omitempty"`
}

type client struct {
	t  testing.TB
	ws *websocket.Conn
}

func (e *env) dial(t testing.TB, query string) *client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := e.url
	if query != "" {
		u += "?" + query
	}
	ws, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { ws.CloseNow() })
	return &client{t: t, ws: ws}
}

func (c *client) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(string(b))
}

func (c *client) sendRaw(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next frame; the timeout only keeps a broken test from
// hanging.
func (c *client) read() (Frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return Frame{}, err
	}
	var f Frame
	if err := json.Unmarshal(b, &f); err != nil {
		return Frame{}, fmt.Errorf("frame %s: %w", b, err)
	}
	var tm struct {
		Time time.Time `json:"time"`
	}
	json.Unmarshal(b, &tm)
	f.Time = tm.Time
	return f, nil
}

func (c *client) next() Frame {
	c.t.Helper()
	f, err := c.read()
	if err != nil {
		c.t.Fatal(err)
	}
	return f
}

// nextN reads n frames.
func (c *client) nextN(n int) []Frame {
	c.t.Helper()
	out := make([]Frame, n)
	for i := range out {
		out[i] = c.next()
	}
	return out
}

// waitFor polls cond until it holds; the deadline only keeps a broken
// test from hanging.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
