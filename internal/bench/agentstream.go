package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// The agents figures read their times from the daemon's event stream,
// GET /v1/stream?all=1: each event's server time, the live-only ones
// (turn-start) included, which the log does not keep.

// streamEvent is what the bench keeps of an event frame.
type streamEvent struct {
	Session string    `json:"session"` // agent/key
	Kind    string    `json:"kind"`    // "_" written "-": turn-start, model-call, …
	Time    time.Time `json:"time"`
}

// agentOf is the agent of the event's session address.
func (e streamEvent) agentOf() string {
	a, _, _ := strings.Cut(e.Session, "/")
	return a
}

// streamWatch records every event of every session, from its dial on.
// Its reader goroutine ends when the connection does (close, or the
// daemon going away).
type streamWatch struct {
	conn *websocket.Conn
	done chan struct{}

	mu  sync.Mutex // a leaf
	evs []streamEvent
	err error // why the reader stopped
}

// watchStream subscribes to every session of the daemon at base
// (http://host:port) with the token tok.
func watchStream(ctx context.Context, base, tok string) (*streamWatch, error) {
	u := "ws" + strings.TrimPrefix(base, "http") + "/v1/stream?all=1"
	c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		return nil, fmt.Errorf("bench: agents: the event stream: %w", err)
	}
	c.SetReadLimit(16 << 20)
	w := &streamWatch{conn: c, done: make(chan struct{})}
	subscribed := make(chan struct{})
	go w.read(subscribed)
	select {
	case <-subscribed:
		return w, nil
	case <-w.done:
		return nil, fmt.Errorf("bench: agents: the event stream: %w", w.stopped())
	case <-time.After(10 * time.Second):
		w.close()
		return nil, fmt.Errorf("bench: agents: the event stream did not confirm its subscription within 10s")
	}
}

func (w *streamWatch) read(subscribed chan struct{}) {
	defer close(w.done)
	for {
		_, b, err := w.conn.Read(context.Background())
		if err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		var f struct {
			Type string `json:"type"`
			streamEvent
		}
		if json.Unmarshal(b, &f) != nil {
			continue
		}
		switch f.Type {
		case "subscribed":
			select {
			case <-subscribed:
			default:
				close(subscribed)
			}
		case "event":
			w.mu.Lock()
			w.evs = append(w.evs, f.streamEvent)
			w.mu.Unlock()
		}
	}
}

// stopped is why the reader stopped (nil while it reads).
func (w *streamWatch) stopped() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// until looks at the events recorded so far every 10 ms until ok
// says they are what it waits for, the stream ends, or timeout passes.
func (w *streamWatch) until(ctx context.Context, timeout time.Duration, what string, ok func(evs []streamEvent) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		done := ok(w.evs)
		w.mu.Unlock()
		switch {
		case done:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Now().After(deadline):
			return fmt.Errorf("bench: agents: %s: not within %s", what, timeout)
		}
		select {
		case <-w.done:
			return fmt.Errorf("bench: agents: %s: the event stream ended: %w", what, w.stopped())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// firstOf returns, for each agent, the time of its first event of kind
// after since.
func firstOf(evs []streamEvent, kind string, since time.Time) map[string]time.Time {
	m := map[string]time.Time{}
	for _, e := range evs {
		if e.Kind != kind || e.Time.Before(since) {
			continue
		}
		if _, ok := m[e.agentOf()]; !ok {
			m[e.agentOf()] = e.Time
		}
	}
	return m
}

func (w *streamWatch) close() {
	w.conn.Close(websocket.StatusNormalClosure, "")
	<-w.done
}
