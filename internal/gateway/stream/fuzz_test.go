package stream

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
)

func checkCommand(t *testing.T, cmd *command, maxCursors int) {
	t.Helper()
	switch cmd.op {
	case opPing:
		return
	case opUnsubscribe:
		if checkID(cmd.id) != nil {
			t.Fatalf("unsubscribe with a bad id %q", cmd.id)
		}
		return
	case opSubscribe:
	default:
		t.Fatalf("op %d", cmd.op)
	}
	if checkID(cmd.id) != nil {
		t.Fatalf("subscribe with a bad id %q", cmd.id)
	}
	switch cmd.scope {
	case scopeSession:
		if checkAddress(cmd.addr) != nil || cmd.after < 0 || len(cmd.cursors) > 0 || cmd.hasSince {
			t.Fatalf("session subscription %+v", cmd)
		}
	case scopeAgent, scopeAll:
		if cmd.hasAfter || len(cmd.cursors) > maxCursors || (cmd.scope == scopeAgent) != (cmd.agent != "") {
			t.Fatalf("subscription %+v", cmd)
		}
		if cmd.agent != "" && (strings.Contains(cmd.agent, "/") || !printable(cmd.agent)) {
			t.Fatalf("agent %q", cmd.agent)
		}
		for _, c := range cmd.cursors {
			if c.seq < 0 || (c.id <= 0) == (c.addr == "") || (c.addr != "" && checkAddress(c.addr) != nil) {
				t.Fatalf("cursor %+v", c)
			}
		}
	default:
		t.Fatalf("scope %d", cmd.scope)
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"subscribe","id":"s1","session":"agent/key","after":12}`,
		`{"type":"subscribe","id":"s2","agent":"A","cursors":{"7":3,"A/k":0},"since":"2025-01-02T15:04:05Z"}`,
		`{"type":"subscribe","id":"s3"}`,
		`{"type":"unsubscribe","id":"s1"}`,
		`{"type":"ping"}`,
		`{"type":"subscribe","id":"x","session":"a/b/c","after":-1}`,
		`{"type":"subscribe","id":"\u0000"}`,
		`{"type":"subscribe","id":"s","cursors":{"-1":1}}`,
		`[]`, `null`, `"ping"`, `{"type":1}`,
	} {
		f.Add([]byte(s))
	}
	const maxCursors = 4
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, id, err := parseMessage(data, maxCursors)
		if id != "" && checkID(id) != nil {
			t.Fatalf("returned a bad id %q", id)
		}
		if err != nil {
			if cmd != nil || !errors.Is(err, errBadMessage) {
				t.Fatalf("%v, %v", cmd, err)
			}
			// The error goes back to the client in a frame.
			if !json.Valid(errorFrame(id, err.Error())) {
				t.Fatalf("error frame for %q", err)
			}
			return
		}
		checkCommand(t, cmd, maxCursors)
	})
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"session=agent/key&after=12", "agent=A&since=2025-01-02T15:04:05Z&cursors=7:1,A/chat:x:3", "all=1&id=every",
		"", "token=abc", "all=2", "after=1", "session=a/k&agent=b", "all=1&cursors=:", "session=%00/k",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		cmd, err := parseQuery(q, 8)
		if err != nil {
			if cmd != nil || !errors.Is(err, errBadMessage) {
				t.Fatalf("%v, %v", cmd, err)
			}
			return
		}
		if cmd == nil {
			return
		}
		if cmd.op != opSubscribe {
			t.Fatalf("query gave op %d", cmd.op)
		}
		checkCommand(t, cmd, 8)
	})
}

// An event frame is valid JSON whatever the event holds.
func FuzzEventFrame(f *testing.F) {
	f.Add("assistant/chat:alice", "text_delta", []byte(`{"text":"hi"}`), int64(3))
	f.Add("a/\"k", "we\"ird", []byte(`{"unterminated`), int64(-1))
	f.Add("", "", []byte(nil), int64(0))
	f.Fuzz(func(t *testing.T, addr, kind string, data []byte, seq int64) {
		e := event.Event{Session: 7, Seq: seq, Turn: 2, Kind: event.Kind(kind), Time: time.Unix(0, seq), Data: data}
		b := append(eventPrefix("sub"), encodeEvent(quote(addr), &e)...)
		var got struct {
			Type, Sub, Session, Kind string
			Seq                      int64
			Data                     json.RawMessage
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if got.Type != "event" || got.Sub != "sub" || got.Seq != seq {
			t.Fatalf("%s", b)
		}
		if json.Valid(data) && len(data) > 0 && !jsonEqual(got.Data, data) {
			t.Fatalf("data %s, want %s", got.Data, data)
		}
	})
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
