package stream_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/gateway/stream"
)

// gate holds the writes of a connection while it is shut, as a client
// that stops reading (or a network that stalls) would.
type gate struct {
	mu      sync.Mutex
	shut    chan struct{} // closed when the gate opens; nil while open
	blocked chan struct{} // a write waits at the gate
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = make(chan struct{})
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.shut)
	g.shut = nil
}

func (g *gate) pass() {
	g.mu.Lock()
	ch := g.shut
	g.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case g.blocked <- struct{}{}:
	default:
	}
	<-ch
}

type gatedConn struct {
	net.Conn
	g *gate
}

func (c gatedConn) Write(p []byte) (int, error) {
	c.g.pass()
	return c.Conn.Write(p)
}

// gatedListener puts the first connection it accepts behind a gate.
type gatedListener struct {
	net.Listener
	g    *gate
	once sync.Once
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gated := false
	l.once.Do(func() { gated = true })
	if gated {
		return gatedConn{c, l.g}, nil
	}
	return c, nil
}

// delivered is what a client makes of a text-delta frame.
type delivered struct {
	Kind      string
	Text      string
	Step      int
	Attempt   int
	Reasoning bool
	Deltas    int
	Turn      int64
	Time      time.Time
}

// A client that falls behind gets the text deltas queued for it one after
// the other, of one step, attempt and kind of text, joined in one frame:
// the text joined, the first one's time, and how many it stands for.
// Nothing else is joined, and the order of everything stays.
func TestCoalescedDeltas(t *testing.T) {
	src := newSource(t)
	h := stream.New(stream.Join(src.rt, src.st), nil)
	srv := httptest.NewUnstartedServer(h)
	g := &gate{blocked: make(chan struct{}, 1)}
	srv.Listener = &gatedListener{Listener: srv.Listener, g: g}
	srv.Start()
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	e := &env{src: src, h: h, srv: srv, url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/stream"}
	behind := e.dial(t, "session=a/k") // the gated connection
	if f := behind.next(); f.Type != "subscribed" {
		t.Fatalf("%+v", f)
	}
	marker := e.dial(t, "session=a/m")
	if f := marker.next(); f.Type != "subscribed" {
		t.Fatalf("%+v", f)
	}

	sess := src.session(t, "a/k")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	n := 0
	publish := func(turn int64, text string, step, attempt int, reasoning bool) {
		b, _ := json.Marshal(event.DeltaData{Text: text, Step: step, Attempt: attempt, Reasoning: reasoning})
		n++
		src.bus.Publish(event.Event{Session: sess.ID, Turn: turn, Kind: event.TextDelta, Time: t0.Add(time.Duration(n) * time.Millisecond), Data: b})
	}
	g.close()
	publish(1, "Hel", 1, 1, false)
	<-g.blocked // the writer waits at the gate with the first delta
	publish(1, `lo "`, 1, 1, false)
	publish(1, "wor\nld", 1, 1, false)
	publish(1, "é\u2028!", 1, 1, false)
	publish(1, "Once ", 1, 2, false) // a new attempt starts the step over
	publish(1, "more", 1, 2, false)
	publish(1, "think", 1, 2, true)
	publish(1, "ing", 1, 2, true)
	src.commit(t, "a/k", event.Text) // a stored event between
	publish(1, "step ", 2, 1, false)
	publish(1, "two", 2, 1, false)
	publish(2, "next turn", 1, 1, false)
	// Events are routed in order: once the marker is read, everything
	// above waits in the gated connection's queue.
	src.live(t, "a/m", event.State, event.StateData{State: "active"})
	if f := marker.next(); f.Kind != "session-state" {
		t.Fatalf("marker: %+v", f)
	}
	g.open()

	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	want := []delivered{
		{Kind: "text-delta", Text: "Hel", Step: 1, Attempt: 1, Turn: 1, Time: at(1)},
		{Kind: "text-delta", Text: "lo \"wor\nldé\u2028!", Step: 1, Attempt: 1, Deltas: 3, Turn: 1, Time: at(2)},
		{Kind: "text-delta", Text: "Once more", Step: 1, Attempt: 2, Deltas: 2, Turn: 1, Time: at(5)},
		{Kind: "text-delta", Text: "thinking", Step: 1, Attempt: 2, Reasoning: true, Deltas: 2, Turn: 1, Time: at(7)},
		{Kind: "text", Text: "text 0", Turn: 1},
		{Kind: "text-delta", Text: "step two", Step: 2, Attempt: 1, Deltas: 2, Turn: 1, Time: at(9)},
		{Kind: "text-delta", Text: "next turn", Step: 1, Attempt: 1, Turn: 2, Time: at(11)},
	}
	var got []delivered
	for len(got) < len(want) {
		_, b, err := behind.ws.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Type, Kind string
			Turn       int64
			Seq        int64
			Time       time.Time
			Deltas     int
			Data       struct {
				Text          string
				Step, Attempt int
				Reasoning     bool
			}
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		d := delivered{Kind: f.Kind, Text: f.Data.Text, Step: f.Data.Step, Attempt: f.Data.Attempt, Reasoning: f.Data.Reasoning,
			Deltas: f.Deltas, Turn: f.Turn, Time: f.Time}
		if f.Kind == "text" {
			if f.Seq == 0 {
				t.Errorf("stored event without its seq: %s", b)
			}
			d.Time = time.Time{}
		}
		got = append(got, d)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	if s := h.Stats(); s.SlowClosed != 0 {
		t.Errorf("stats %+v", s)
	}
}
