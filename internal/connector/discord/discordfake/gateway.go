package discordfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatAck   = 11
)

// Intents the fake honours.
const (
	intentGuildMessages  = 1 << 9
	intentDirectMessages = 1 << 12
	intentMessageContent = 1 << 15
)

type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  *string         `json:"t"`
}

// session is a gateway session: every dispatch numbered and kept, so a
// RESUME replays what its connection missed.
type session struct {
	id      string
	intents int
	seq     int64
	log     []frame
	conn    *conn // the live connection, nil while none
}

// conn is one WebSocket connection to the gateway.
type conn struct {
	ws   *websocket.Conn
	sess *session // set by IDENTIFY or RESUME; guarded by Server.mu
}

func (c *conn) send(ctx context.Context, f frame) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, data)
}

func raw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("v") != "10" || r.URL.Query().Get("encoding") != "json" {
		http.Error(w, "v=10&encoding=json expected", http.StatusBadRequest)
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws}
	untrack := s.w.Track(c) // World.Drop closes it
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		untrack()
		s.mu.Lock()
		delete(s.conns, c)
		if c.sess != nil && c.sess.conn == c {
			c.sess.conn = nil
		}
		s.mu.Unlock()
		ws.CloseNow()
		s.notify("gateway.closed")
	}()
	ctx := r.Context()
	hello := frame{Op: opHello, D: raw(map[string]any{"heartbeat_interval": s.opts.HeartbeatInterval.Milliseconds()})}
	if c.send(ctx, hello) != nil {
		return
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var f frame
		if json.Unmarshal(data, &f) != nil {
			ws.Close(4002, "Decode error")
			return
		}
		if !s.gatewayFrame(ctx, c, f) {
			return
		}
	}
}

// gatewayFrame answers one client frame; false ends the connection.
func (s *Server) gatewayFrame(ctx context.Context, c *conn, f frame) bool {
	switch f.Op {
	case opHeartbeat:
		s.mu.Lock()
		ack := s.acking
		s.mu.Unlock()
		if ack {
			return c.send(ctx, frame{Op: opHeartbeatAck}) == nil
		}
		return true
	case opIdentify:
		return s.identifyConn(ctx, c, f.D)
	case opResume:
		return s.resumeConn(ctx, c, f.D)
	}
	if c.sess == nil {
		c.ws.Close(4003, "Not authenticated")
		return false
	}
	c.ws.Close(4001, "Unknown opcode")
	return false
}

func (s *Server) identifyConn(ctx context.Context, c *conn, d json.RawMessage) bool {
	var id struct {
		Token      string            `json:"token"`
		Intents    *int              `json:"intents"`
		Properties map[string]string `json:"properties"`
	}
	if json.Unmarshal(d, &id) != nil || id.Intents == nil || id.Properties == nil {
		c.ws.Close(4002, "Decode error")
		return false
	}
	if id.Token != s.opts.Token {
		c.ws.Close(4004, "Authentication failed.")
		return false
	}
	if *id.Intents&intentMessageContent != 0 && s.opts.NoMessageContent {
		c.ws.Close(4014, "Disallowed intent(s).")
		return false
	}
	s.dmu.Lock() // READY is the session's first dispatch
	defer s.dmu.Unlock()
	s.mu.Lock()
	s.nsess++
	sid := fmt.Sprintf("sess-%d", s.nsess)
	old := s.sess
	s.sess = &session{id: sid, intents: *id.Intents, conn: c}
	if old != nil && old.conn != nil && old.conn != c {
		old.conn.sess = nil
	}
	c.sess = s.sess
	ready := s.dispatchLocked(s.sess, "READY", map[string]any{
		"v": 10, "user": s.Bot(), "session_id": sid,
		"resume_gateway_url": s.wsBaseLocked() + "/resume",
		"guilds":             []any{}, "application": map[string]any{"id": s.opts.BotID},
	})
	s.mu.Unlock()
	s.notify("IDENTIFY")
	return c.send(ctx, ready) == nil
}

func (s *Server) resumeConn(ctx context.Context, c *conn, d json.RawMessage) bool {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if json.Unmarshal(d, &rs) != nil {
		c.ws.Close(4002, "Decode error")
		return false
	}
	if rs.Token != s.opts.Token {
		c.ws.Close(4004, "Authentication failed.")
		return false
	}
	s.dmu.Lock() // no dispatch between the replay and RESUMED
	defer s.dmu.Unlock()
	s.mu.Lock()
	sess := s.sess
	if sess == nil || sess.id != rs.SessionID || rs.Seq > sess.seq {
		s.mu.Unlock()
		return c.send(ctx, frame{Op: opInvalidSession, D: raw(false)}) == nil
	}
	var missed []frame
	for _, f := range sess.log {
		if *f.S > rs.Seq {
			missed = append(missed, f)
		}
	}
	if old := sess.conn; old != nil && old != c {
		old.sess = nil
		go old.ws.CloseNow()
	}
	sess.conn, c.sess = c, sess
	missed = append(missed, s.dispatchLocked(sess, "RESUMED", map[string]any{}))
	s.mu.Unlock()
	s.notify("RESUME")
	for _, f := range missed {
		if c.send(ctx, f) != nil {
			return false
		}
	}
	return true
}

// dispatchLocked numbers a dispatch, keeps it in sess's log and returns
// it. s.mu is held.
func (s *Server) dispatchLocked(sess *session, t string, d any) frame {
	sess.seq++
	n := sess.seq
	tt := t
	f := frame{Op: opDispatch, D: raw(d), S: &n, T: &tt}
	sess.log = append(sess.log, f)
	return f
}

// dispatch sends an event to the bot's session: to its live connection,
// or kept for a RESUME.
func (s *Server) dispatch(t string, d func(intents int) (any, bool)) {
	s.dmu.Lock() // dispatches reach a connection in their order
	defer s.dmu.Unlock()
	s.mu.Lock()
	sess := s.sess
	if sess == nil {
		s.mu.Unlock()
		return
	}
	data, ok := d(sess.intents)
	if !ok {
		s.mu.Unlock()
		return
	}
	f := s.dispatchLocked(sess, t, data)
	c := sess.conn
	s.mu.Unlock()
	if c != nil {
		_ = c.send(context.Background(), f)
	}
}

func (s *Server) wsBaseLocked() string {
	return "ws" + strings.TrimPrefix(s.url, "http")
}

// notify counts a gateway event as a call of the World (Count(what)),
// which wakes every Wait.
func (s *Server) notify(what string) {
	_, _ = s.w.Call(context.Background(), what)
}

// Close closes the connection without a close frame (World.Drop).
func (c *conn) Close() error { return c.ws.CloseNow() }

// StopAcking makes the gateway stop (true) or resume (false) answering
// heartbeats: a zombie connection.
func (s *Server) StopAcking(stop bool) {
	s.mu.Lock()
	s.acking = !stop
	s.mu.Unlock()
}

// Reconnect sends RECONNECT (op 7) on every live connection.
func (s *Server) Reconnect() { s.toAll(frame{Op: opReconnect}) }

// InvalidateSession sends INVALID_SESSION (op 9) with d = resumable on
// every live connection; a session not resumable is forgotten.
func (s *Server) InvalidateSession(resumable bool) {
	if !resumable {
		s.mu.Lock()
		s.sess = nil
		s.mu.Unlock()
	}
	s.toAll(frame{Op: opInvalidSession, D: raw(resumable)})
}

// Drop closes every connection without a close frame, as a network
// failure does (World.Drop); the gateway session stays resumable.
func (s *Server) Drop() { s.w.Drop() }

// CloseWith closes every gateway connection with code.
func (s *Server) CloseWith(code int, reason string) {
	s.mu.Lock()
	var cs []*conn
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		go c.ws.Close(websocket.StatusCode(code), reason)
	}
}

func (s *Server) toAll(f frame) {
	s.mu.Lock()
	var cs []*conn
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	s.dmu.Lock()
	defer s.dmu.Unlock()
	for _, c := range cs {
		_ = c.send(context.Background(), f)
	}
}

// Connected says whether the bot's session has a live connection.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess != nil && s.sess.conn != nil
}

// Identifies counts the IDENTIFYs accepted.
func (s *Server) Identifies() int { return s.w.Count("IDENTIFY") }

// Resumes counts the RESUMEs accepted.
func (s *Server) Resumes() int { return s.w.Count("RESUME") }
