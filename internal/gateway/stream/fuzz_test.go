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

// Text deltas joined by coalesce read, with encoding/json, as one delta
// whose text is theirs joined (each as encoding/json decodes it), with the
// first one's fields and how many it stands for.
func FuzzCoalesce(f *testing.F) {
	f.Add("a/k", "Hel", "lo \"w\"", "\n\u2028é", 1, 1, false)
	f.Add("a/\"k", "\xff\xfe", "", "\x00\x1f", 3, 2, true)
	f.Fuzz(func(t *testing.T, addr, a, b, c string, step, attempt int, reasoning bool) {
		prefix := eventPrefix("s")
		var batch []frame
		want := ""
		for i, text := range []string{a, b, c} {
			data, _ := json.Marshal(event.DeltaData{Text: text, Step: step, Attempt: attempt, Reasoning: reasoning})
			e := event.Event{Session: 7, Turn: 2, Kind: event.TextDelta, Time: time.Unix(int64(i), 0), Data: data}
			body, head := encodeEventHead(quote(addr), &e)
			batch = append(batch, frame{pre: prefix, body: body, session: 7, delta: newDelta(&e, head)})
			var d event.DeltaData
			json.Unmarshal(data, &d)
			want += d.Text
		}
		c0 := &conn{h: &Handler{o: (*Options)(nil).withDefaults()}}
		out := c0.coalesce(batch)
		if len(out) != 1 || out[0].parts != 3 {
			t.Fatalf("%d frames, parts %d", len(out), out[0].parts)
		}
		msg := append(append([]byte(nil), out[0].pre...), out[0].body...)
		var got struct {
			Type, Sub, Session, Kind string
			SessionID                int64 `json:"session_id"`
			Turn                     int64
			Time                     time.Time
			Deltas                   int
			Data                     event.DeltaData
		}
		if err := json.Unmarshal(msg, &got); err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		wantAddr := ""
		json.Unmarshal(quote(addr), &wantAddr)
		if got.Type != "event" || got.Sub != "s" || got.Session != wantAddr || got.SessionID != 7 || got.Turn != 2 ||
			got.Kind != "text-delta" || !got.Time.Equal(time.Unix(0, 0)) || got.Deltas != 3 {
			t.Fatalf("%s", msg)
		}
		if got.Data != (event.DeltaData{Text: want, Step: step, Attempt: attempt, Reasoning: reasoning}) {
			t.Fatalf("data %+v, want text %q", got.Data, want)
		}
	})
}
