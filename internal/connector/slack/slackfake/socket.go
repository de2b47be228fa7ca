package slackfake

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/coder/websocket"
)

// link is one live Socket Mode connection.
type link struct {
	conn    *websocket.Conn
	untrack func()
}

// envelope is one events_api envelope: sent until acknowledged.
type envelope struct {
	ID      string
	EventTS string
	Payload json.RawMessage
	Attempt int // retry_attempt of the next send
	acked   bool
}

// serveLink accepts a Socket Mode WebSocket for a ticket
// apps.connections.open gave (once), says hello, sends every envelope not
// yet acknowledged, and reads acks until the link ends.
func (s *Server) serveLink(rw http.ResponseWriter, r *http.Request) {
	t := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.tickets[t]
	delete(s.tickets, t)
	s.mu.Unlock()
	if !valid {
		http.Error(rw, "invalid ticket", http.StatusUnauthorized)
		return
	}
	c, err := websocket.Accept(rw, r, nil)
	if err != nil {
		return
	}
	l := &link{conn: c}
	l.untrack = s.w.Track(&wsCloser{c})
	defer func() {
		l.untrack()
		c.CloseNow()
		s.mu.Lock()
		for i, x := range s.links {
			if x == l {
				s.links = append(s.links[:i], s.links[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
		s.touch()
	}()
	ctx := r.Context()
	s.mu.Lock()
	n := len(s.links) + 1
	s.mu.Unlock()
	hello, _ := json.Marshal(map[string]any{
		"type": "hello", "num_connections": n,
		"debug_info":      map[string]any{"host": "fake-slack", "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": "AFAKE"},
	})
	if c.Write(ctx, websocket.MessageText, hello) != nil {
		return
	}
	s.mu.Lock()
	s.links = append(s.links, l)
	pending := s.unacked()
	s.mu.Unlock()
	s.touch()
	for _, e := range pending {
		s.send(l, e)
	}
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(data, &ack) == nil && ack.EnvelopeID != "" {
			s.ack(ack.EnvelopeID)
		}
	}
}

// wsCloser closes a link at once, for World.Drop.
type wsCloser struct{ c *websocket.Conn }

func (w *wsCloser) Close() error { return w.c.CloseNow() }

// unacked returns the envelopes not yet acknowledged; s.mu is held.
func (s *Server) unacked() []*envelope {
	var out []*envelope
	for _, e := range s.envelopes {
		if !e.acked {
			out = append(out, e)
		}
	}
	return out
}

func (s *Server) ack(id string) {
	s.mu.Lock()
	for i, e := range s.envelopes {
		if e.ID == id && !e.acked {
			e.acked = true
			s.acked = append(s.acked, Ack{EnvelopeID: id, EventTS: e.EventTS, Attempt: e.Attempt - 1})
			s.envelopes = append(s.envelopes[:i], s.envelopes[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.touch()
}

// send writes e on l and, unless it is acknowledged within
// RedeliverAfter, sends it again on the newest link with retry_attempt+1.
func (s *Server) send(l *link, e *envelope) {
	s.mu.Lock()
	if e.acked {
		s.mu.Unlock()
		return
	}
	frame, _ := json.Marshal(map[string]any{
		"type": "events_api", "envelope_id": e.ID, "payload": e.Payload,
		"accepts_response_payload": false, "retry_attempt": e.Attempt, "retry_reason": retryReason(e.Attempt),
	})
	e.Attempt++
	var t *time.Timer
	t = time.AfterFunc(s.o.RedeliverAfter, func() {
		s.mu.Lock()
		delete(s.timers, t)
		var newest *link
		if len(s.links) > 0 {
			newest = s.links[len(s.links)-1]
		}
		s.mu.Unlock()
		if newest != nil && s.ctx.Err() == nil {
			s.send(newest, e)
		}
	})
	s.timers[t] = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	l.conn.Write(ctx, websocket.MessageText, frame)
}

func retryReason(attempt int) string {
	if attempt == 0 {
		return ""
	}
	return "timeout"
}

// Disconnect sends every live link a disconnect frame with reason
// (warning, refresh_requested, link_disabled). A link told link_disabled
// is closed after it.
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	links := append([]*link(nil), s.links...)
	s.mu.Unlock()
	frame, _ := json.Marshal(map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "fake-slack"}})
	for _, l := range links {
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		l.conn.Write(ctx, websocket.MessageText, frame)
		cancel()
		if reason == "link_disabled" {
			l.conn.Close(websocket.StatusNormalClosure, "link disabled")
		}
	}
}

// Links is how many Socket Mode links are live.
func (s *Server) Links() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.links)
}

// Acks returns the envelopes acknowledged, in order.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ack(nil), s.acked...)
}

// Unacked is how many envelopes wait for an ack.
func (s *Server) Unacked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unacked())
}
