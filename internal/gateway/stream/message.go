package stream

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"agentd/internal/event"
	"agentd/internal/jsonstr"
)

// errBadMessage is wrapped by every error about a client message.
var errBadMessage = errors.New("bad message")

func badMessage(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadMessage, fmt.Sprintf(format, args...))
}

type op int

const (
	opSubscribe op = iota + 1
	opUnsubscribe
	opPing
)

type scope int

const (
	scopeSession scope = iota + 1
	scopeAgent
	scopeAll
)

// cursor is where a client stands in one session's log: a session id, or
// an address when id is 0.
type cursor struct {
	id   int64
	addr string
	seq  int64
}

// command is a validated client request.
type command struct {
	op    op
	id    string // the subscription's id
	scope scope
	addr  string // scopeSession
	agent string // scopeAgent

	after    int64 // scopeSession, when hasAfter
	hasAfter bool

	cursors  []cursor  // scopeAgent, scopeAll
	since    time.Time // scopeAgent, scopeAll, when hasSince
	hasSince bool
}

// replays reports whether the subscription reads the log before going live.
func (c *command) replays() bool {
	if c.scope == scopeSession {
		return c.hasAfter
	}
	return c.hasSince || len(c.cursors) > 0
}

// request is a client message as sent.
type request struct {
	Type    string           `json:"type"`
	ID      string           `json:"id"`
	Session string           `json:"session"`
	Agent   string           `json:"agent"`
	After   *int64           `json:"after"`
	Cursors map[string]int64 `json:"cursors"`
	Since   string           `json:"since"`
}

// Limits of client messages.
const (
	maxIDLen      = 64
	maxAddressLen = 512
	maxAgentLen   = 256
)

// parseMessage parses one client message. It returns the subscription id
// it names, if any, even when the message is refused, so that the error
// can say which subscription it is about.
func parseMessage(data []byte, maxCursors int) (*command, string, error) {
	var r request
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, "", badMessage("not a JSON object with the fields of a request")
	}
	id := ""
	if checkID(r.ID) == nil {
		id = r.ID
	}
	switch r.Type {
	case "ping":
		return &command{op: opPing}, id, nil
	case "unsubscribe":
		if err := checkID(r.ID); err != nil {
			return nil, id, err
		}
		return &command{op: opUnsubscribe, id: r.ID}, id, nil
	case "subscribe":
	case "":
		return nil, id, badMessage("type is missing")
	default:
		return nil, id, badMessage("unknown type %q", truncate(r.Type, 32))
	}
	if err := checkID(r.ID); err != nil {
		return nil, id, err
	}
	cmd := &command{op: opSubscribe, id: r.ID}
	switch {
	case r.Session != "" && r.Agent != "":
		return nil, id, badMessage("session and agent are exclusive")
	case r.Session != "":
		if err := checkAddress(r.Session); err != nil {
			return nil, id, err
		}
		if len(r.Cursors) > 0 || r.Since != "" {
			return nil, id, badMessage("cursors and since are for agent and all-sessions subscriptions; a session takes after")
		}
		cmd.scope, cmd.addr = scopeSession, r.Session
		if r.After != nil {
			if *r.After < 0 {
				return nil, id, badMessage("after must not be negative")
			}
			cmd.after, cmd.hasAfter = *r.After, true
		}
		return cmd, id, nil
	case r.Agent != "":
		if err := checkAgent(r.Agent); err != nil {
			return nil, id, err
		}
		cmd.scope, cmd.agent = scopeAgent, r.Agent
	default:
		cmd.scope = scopeAll
	}
	if r.After != nil {
		return nil, id, badMessage("after is for a session subscription; use cursors")
	}
	if r.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, r.Since)
		if err != nil {
			return nil, id, badMessage("since must be an RFC 3339 time")
		}
		cmd.since, cmd.hasSince = t, true
	}
	if len(r.Cursors) > maxCursors {
		return nil, id, badMessage("more than %d cursors", maxCursors)
	}
	for k, seq := range r.Cursors {
		c, err := parseCursor(k, seq)
		if err != nil {
			return nil, id, err
		}
		cmd.cursors = append(cmd.cursors, c)
	}
	return cmd, id, nil
}

func parseCursor(key string, seq int64) (cursor, error) {
	if seq < 0 {
		return cursor{}, badMessage("a cursor must not be negative")
	}
	if n, err := strconv.ParseInt(key, 10, 64); err == nil {
		if n <= 0 {
			return cursor{}, badMessage("a session id must be positive")
		}
		return cursor{id: n, seq: seq}, nil
	}
	if err := checkAddress(key); err != nil {
		return cursor{}, badMessage("a cursor's key must be a session id or address")
	}
	return cursor{addr: key, seq: seq}, nil
}

// parseQuery reads a subscription from a request's query: session=A/K
// (after=N), agent=A or all=1 (since=T, cursors=ID:SEQ,ID:SEQ), id=SUB.
// It returns nil when the query names none. Other parameters are ignored.
func parseQuery(q url.Values, maxCursors int) (*command, error) {
	session, agent, all := q.Get("session"), q.Get("agent"), q.Get("all")
	if session == "" && agent == "" && all == "" {
		for _, k := range []string{"after", "since", "cursors", "id"} {
			if q.Has(k) {
				return nil, badMessage("%s needs session, agent or all", k)
			}
		}
		return nil, nil
	}
	r := request{Type: "subscribe", ID: q.Get("id"), Session: session, Agent: agent, Since: q.Get("since")}
	if r.ID == "" {
		r.ID = "url"
	}
	if all != "" {
		if all != "1" && all != "true" {
			return nil, badMessage("all must be 1 or true")
		}
		if session != "" || agent != "" {
			return nil, badMessage("all excludes session and agent")
		}
	}
	if q.Has("after") {
		n, err := strconv.ParseInt(q.Get("after"), 10, 64)
		if err != nil {
			return nil, badMessage("after must be an integer")
		}
		r.After = &n
	}
	if v := q.Get("cursors"); v != "" {
		parts := strings.Split(v, ",")
		if len(parts) > maxCursors {
			return nil, badMessage("more than %d cursors", maxCursors)
		}
		r.Cursors = make(map[string]int64, len(parts))
		for _, p := range parts {
			i := strings.LastIndexByte(p, ':')
			if i < 0 {
				return nil, badMessage("cursors must be ID:SEQ pairs separated by commas")
			}
			n, err := strconv.ParseInt(p[i+1:], 10, 64)
			if err != nil {
				return nil, badMessage("a cursor's sequence number must be an integer")
			}
			r.Cursors[p[:i]] = n
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, badMessage("unreadable query")
	}
	cmd, _, err := parseMessage(b, maxCursors)
	return cmd, err
}

func checkID(id string) error {
	if id == "" {
		return badMessage("id is missing")
	}
	if len(id) > maxIDLen || !printable(id) {
		return badMessage("id must be at most %d printable characters", maxIDLen)
	}
	return nil
}

func checkAddress(addr string) error {
	a, k, ok := strings.Cut(addr, "/")
	if !ok || a == "" || k == "" || strings.Contains(k, "/") || len(addr) > maxAddressLen || !printable(addr) {
		return badMessage("a session address is <agent>/<key>")
	}
	return nil
}

func checkAgent(agent string) error {
	if len(agent) > maxAgentLen || strings.Contains(agent, "/") || !printable(agent) {
		return badMessage("bad agent id")
	}
	return nil
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if c < 0x20 || (c >= 0x7f && c <= 0x9f) {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Frames the server sends.

// KindName is the name a stream frame gives an event kind: the kind with
// "_" replaced by "-" (text_delta is text-delta).
func KindName(k event.Kind) string {
	if strings.IndexByte(string(k), '_') < 0 {
		return string(k)
	}
	return strings.ReplaceAll(string(k), "_", "-")
}

// eventPrefix is the start of a subscription's event frames, up to the
// fields of the event.
func eventPrefix(sub string) []byte {
	b := append([]byte(nil), `{"type":"event","sub":`...)
	b = jsonstr.Append(b, sub)
	return append(b, ',')
}

// encodeEvent encodes the fields of an event frame after the prefix, with
// quotedAddr the session's address as a JSON string.
func encodeEvent(quotedAddr []byte, e *event.Event) []byte {
	b, _ := encodeEventHead(quotedAddr, e)
	return b
}

// encodeEventHead is encodeEvent that also returns the length of the
// frame's fields before its data: the head a coalesced text delta keeps.
func encodeEventHead(quotedAddr []byte, e *event.Event) (b []byte, head int) {
	b = make([]byte, 0, 128+len(quotedAddr)+len(e.Data))
	b = append(b, `"session":`...)
	b = append(b, quotedAddr...)
	b = append(b, `,"session_id":`...)
	b = strconv.AppendInt(b, e.Session, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"turn":`...)
	b = strconv.AppendInt(b, e.Turn, 10)
	b = append(b, `,"kind":`...)
	b = jsonstr.Append(b, KindName(e.Kind))
	b = append(b, `,"time":"`...)
	b = e.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	head = len(b)
	if len(e.Data) > 0 {
		b = append(b, `,"data":`...)
		if json.Valid(e.Data) {
			b = append(b, e.Data...)
		} else {
			b = append(b, "null"...)
		}
	}
	return append(b, '}'), head
}

func quote(s string) []byte { return jsonstr.Append(nil, s) }

// control is a frame other than an event.
type control struct {
	Type      string `json:"type"`
	Sub       string `json:"sub,omitempty"`
	Session   string `json:"session,omitempty"`
	SessionID int64  `json:"session_id,omitempty"`
	Seq       *int64 `json:"seq,omitempty"`
	Done      bool   `json:"done,omitempty"`
	Error     string `json:"error,omitempty"`
}

func (c control) bytes() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		// control holds strings and numbers only.
		panic("stream: encode frame: " + err.Error())
	}
	return b
}

const pongFrame = `{"type":"pong"}`

func subscribedFrame(sub string) []byte {
	return control{Type: "subscribed", Sub: sub}.bytes()
}

func unsubscribedFrame(sub string) []byte {
	return control{Type: "unsubscribed", Sub: sub}.bytes()
}

func errorFrame(sub, msg string) []byte {
	return control{Type: "error", Sub: sub, Error: msg}.bytes()
}

// replayedFrame says a session's replay has caught up (session != ""),
// or, with done, that the whole subscription has.
func replayedFrame(sub, session string, sessionID, seq int64, done bool) []byte {
	c := control{Type: "replayed", Sub: sub, Done: done}
	if session != "" {
		c.Session, c.SessionID, c.Seq = session, sessionID, &seq
	}
	return c.bytes()
}
