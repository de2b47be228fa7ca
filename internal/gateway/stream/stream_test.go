package stream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/gateway/stream"
)

// brief is what most tests compare of a frame.
type brief struct {
	Type, Sub, Session string
	Seq                int64
	Kind               string
	Done               bool
}

func briefs(fs []Frame) []brief {
	out := make([]brief, len(fs))
	for i, f := range fs {
		out[i] = brief{f.Type, f.Sub, f.Session, f.Seq, f.Kind, f.Done}
	}
	return out
}

func ev(sub, session string, seq int64, kind string) brief {
	return brief{Type: "event", Sub: sub, Session: session, Seq: seq, Kind: kind}
}

func TestSubscribeSession(t *testing.T) {
	e := newEnv(t, nil)
	e.src.commit(t, "a/k", event.Input, event.Text, event.TurnEnd)
	e.src.commit(t, "a/other", event.Input)

	c := e.dial(t, "")
	c.send(map[string]any{"type": "subscribe", "id": "s1", "session": "a/k", "after": 0})
	want := []brief{
		{Type: "subscribed", Sub: "s1"},
		ev("s1", "a/k", 1, "input"),
		ev("s1", "a/k", 2, "text"),
		ev("s1", "a/k", 3, "turn-end"),
		{Type: "replayed", Sub: "s1", Session: "a/k", Seq: 3, Done: true},
	}
	if diff := cmp.Diff(want, briefs(c.nextN(len(want)))); diff != "" {
		t.Fatalf("replay (-want +got):\n%s", diff)
	}

	// Live: stored and live-only events of this session, none of another.
	e.src.commit(t, "a/other", event.Text)
	e.src.live(t, "a/other", event.TextDelta, event.DeltaData{Text: "no"})
	e.src.live(t, "a/k", event.TurnStart, nil)
	e.src.live(t, "a/k", event.TextDelta, event.DeltaData{Text: "Hel", Step: 1, Attempt: 1})
	e.src.commit(t, "a/k", event.Text)
	got := c.nextN(3)
	want = []brief{ev("s1", "a/k", 0, "turn-start"), ev("s1", "a/k", 0, "text-delta"), ev("s1", "a/k", 4, "text")}
	if diff := cmp.Diff(want, briefs(got)); diff != "" {
		t.Fatalf("live (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(`{"text":"Hel","step":1,"attempt":1}`, string(got[1].Data)); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	if got[2].SessionID != e.src.session(t, "a/k").ID || got[2].Turn != 1 || got[2].Time.IsZero() {
		t.Errorf("event fields: %+v", got[2])
	}
}

func TestSubscribeSessionLiveOnlyAndNotYetCreated(t *testing.T) {
	e := newEnv(t, nil)
	e.src.commit(t, "a/old", event.Input)
	c := e.dial(t, "")
	// Without after: only new events. A session that does not exist yet
	// may be subscribed to.
	c.send(map[string]any{"type": "subscribe", "id": "old", "session": "a/old"})
	c.send(map[string]any{"type": "subscribe", "id": "new", "session": "a/new", "after": 0})
	want := []brief{
		{Type: "subscribed", Sub: "old"},
		{Type: "subscribed", Sub: "new"},
		{Type: "replayed", Sub: "new", Session: "a/new", Done: true},
	}
	if diff := cmp.Diff(want, briefs(c.nextN(len(want)))); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	e.src.commit(t, "a/new", event.Input)
	e.src.commit(t, "a/old", event.Text)
	want = []brief{ev("new", "a/new", 1, "input"), ev("old", "a/old", 2, "text")}
	if diff := cmp.Diff(want, briefs(c.nextN(len(want)))); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// Every kind reaches the client under its stream name.
func TestKinds(t *testing.T) {
	e := newEnv(t, nil)
	c := e.dial(t, "session=a/k")
	if f := c.next(); f.Type != "subscribed" || f.Sub != "url" {
		t.Fatalf("first frame %+v", f)
	}
	tests := []struct {
		kind event.Kind
		name string
		live bool
	}{
		{event.TurnStart, "turn-start", true},
		{event.Input, "input", false},
		{event.TextDelta, "text-delta", true},
		{event.Thought, "thought", false},
		{event.Text, "text", false},
		{event.ToolCall, "tool-call", false},
		{event.ToolStart, "tool-start", true},
		{event.ToolEnd, "tool-end", true},
		{event.ToolResult, "tool-result", false},
		{event.ApprovalRequested, "approval-requested", false},
		{event.ApprovalResolved, "approval-resolved", false},
		{event.Error, "error", false},
		{event.State, "session-state", true},
		{event.TurnEnd, "turn-end", false},
		{event.WorkingMemory, "working-memory", false},
	}
	var want []string
	for _, tt := range tests {
		if got := stream.KindName(tt.kind); got != tt.name {
			t.Errorf("KindName(%s) = %s, want %s", tt.kind, got, tt.name)
		}
		switch {
		case tt.live:
			e.src.live(t, "a/k", tt.kind, nil)
		case tt.kind == event.WorkingMemory:
			e.src.commitN(t, "a/k", 1, tt.kind, event.WorkingMemoryData{Key: "k", Value: json.RawMessage("1")})
		default:
			e.src.commit(t, "a/k", tt.kind)
		}
		want = append(want, tt.name)
	}
	var got []string
	for _, f := range c.nextN(len(tests)) {
		got = append(got, f.Kind)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}

func TestSubscribeAgent(t *testing.T) {
	e := newEnv(t, nil)
	x := e.src.session(t, "A/x")
	e.src.commit(t, "A/x", event.Input, event.Text, event.TurnEnd) // 1-3
	time.Sleep(2 * time.Millisecond)
	since := time.Now()
	e.src.commit(t, "A/y", event.Input) // updated after since, no cursor: from its start
	e.src.commit(t, "B/z", event.Input) // another agent

	c := e.dial(t, "")
	c.send(map[string]any{"type": "subscribe", "id": "s2", "agent": "A",
		"cursors": map[string]int64{fmt.Sprint(x.ID): 1}, "since": since.UTC().Format(time.RFC3339Nano)})
	want := []brief{
		{Type: "subscribed", Sub: "s2"},
		ev("s2", "A/x", 2, "text"),
		ev("s2", "A/x", 3, "turn-end"),
		{Type: "replayed", Sub: "s2", Session: "A/x", Seq: 3},
		ev("s2", "A/y", 1, "input"),
		{Type: "replayed", Sub: "s2", Session: "A/y", Seq: 1},
		{Type: "replayed", Sub: "s2", Done: true},
	}
	if diff := cmp.Diff(want, briefs(c.nextN(len(want)))); diff != "" {
		t.Fatalf("replay (-want +got):\n%s", diff)
	}
	e.src.commit(t, "B/z", event.Text)
	e.src.commit(t, "A/new", event.Input)
	e.src.live(t, "A/x", event.TextDelta, event.DeltaData{Text: "t"})
	want = []brief{ev("s2", "A/new", 1, "input"), ev("s2", "A/x", 0, "text-delta")}
	if diff := cmp.Diff(want, briefs(c.nextN(len(want)))); diff != "" {
		t.Fatalf("live (-want +got):\n%s", diff)
	}

	// A cursor of another agent's session is refused, the rest served.
	z := e.src.session(t, "B/z")
	c.send(map[string]any{"type": "subscribe", "id": "s3", "agent": "A", "cursors": map[string]int64{fmt.Sprint(z.ID): 0}})
	got := c.nextN(3)
	want = []brief{{Type: "subscribed", Sub: "s3"}, {Type: "error", Sub: "s3"}, {Type: "replayed", Sub: "s3", Done: true}}
	if diff := cmp.Diff(want, briefs(got)); diff != "" {
		t.Fatalf("foreign cursor (-want +got):\n%s", diff)
	}
	if !strings.Contains(got[1].Error, "not a session of agent A") {
		t.Errorf("error %q", got[1].Error)
	}
}

func TestSubscribeAll(t *testing.T) {
	e := newEnv(t, nil)
	e.src.commit(t, "A/x", event.Input)
	y := e.src.session(t, "B/y")
	e.src.commit(t, "B/y", event.Input, event.Text)

	c := e.dial(t, fmt.Sprintf("all=1&id=every&cursors=%d:1,A/x:0", y.ID))
	want := []brief{
		{Type: "subscribed", Sub: "every"},
		ev("every", "A/x", 1, "input"),
		{Type: "replayed", Sub: "every", Session: "A/x", Seq: 1},
		ev("every", "B/y", 2, "text"),
		{Type: "replayed", Sub: "every", Session: "B/y", Seq: 2},
		{Type: "replayed", Sub: "every", Done: true},
	}
	if diff := cmp.Diff(want, briefs(c.nextN(len(want)))); diff != "" {
		t.Fatalf("replay (-want +got):\n%s", diff)
	}
	e.src.commit(t, "C/z", event.Input)
	e.src.commit(t, "A/x", event.Text)
	want = []brief{ev("every", "C/z", 1, "input"), ev("every", "A/x", 2, "text")}
	if diff := cmp.Diff(want, briefs(c.nextN(len(want)))); diff != "" {
		t.Fatalf("live (-want +got):\n%s", diff)
	}

	// The message form, and two subscriptions matching one event.
	c.send(map[string]any{"type": "subscribe", "id": "s3"})
	c.send(map[string]any{"type": "subscribe", "id": "s4", "session": "C/z"})
	if diff := cmp.Diff([]brief{{Type: "subscribed", Sub: "s3"}, {Type: "subscribed", Sub: "s4"}}, briefs(c.nextN(2))); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	e.src.commit(t, "C/z", event.Text)
	got := briefs(c.nextN(3))
	want = []brief{ev("every", "C/z", 2, "text"), ev("s3", "C/z", 2, "text"), ev("s4", "C/z", 2, "text")}
	sortBriefs(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("one event, three subscriptions (-want +got):\n%s", diff)
	}
}

func sortBriefs(b []brief) {
	for i := range b {
		for j := i + 1; j < len(b); j++ {
			if b[j].Sub < b[i].Sub {
				b[i], b[j] = b[j], b[i]
			}
		}
	}
}

func TestUnsubscribe(t *testing.T) {
	e := newEnv(t, nil)
	c := e.dial(t, "session=a/k&id=s1")
	c.next()
	e.src.commit(t, "a/k", event.Input)
	if f := c.next(); f.Seq != 1 {
		t.Fatalf("%+v", f)
	}
	c.send(map[string]any{"type": "unsubscribe", "id": "s1"})
	if f := c.next(); f.Type != "unsubscribed" || f.Sub != "s1" {
		t.Fatalf("%+v", f)
	}
	e.src.commit(t, "a/k", event.Text)
	e.src.live(t, "a/k", event.TextDelta, nil)
	c.send(map[string]any{"type": "ping"})
	if f := c.next(); f.Type != "pong" {
		t.Fatalf("after unsubscribing, got %+v", f)
	}
	// The id can be used again.
	c.send(map[string]any{"type": "subscribe", "id": "s1", "session": "a/k", "after": 1})
	want := []brief{{Type: "subscribed", Sub: "s1"}, ev("s1", "a/k", 2, "text"), {Type: "replayed", Sub: "s1", Session: "a/k", Seq: 2, Done: true}}
	if diff := cmp.Diff(want, briefs(c.nextN(len(want)))); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if got := e.h.Stats().Subscriptions; got != 1 {
		t.Errorf("Subscriptions = %d, want 1", got)
	}
}

func TestBadMessages(t *testing.T) {
	e := newEnv(t, &stream.Options{MaxSubscriptions: 2})
	c := e.dial(t, "")
	c.send(map[string]any{"type": "subscribe", "id": "taken"})
	c.next()
	tests := []struct {
		msg     string
		sub     string
		errLike string
	}{
		{`not json`, "", "not a JSON object"},
		{`[1,2]`, "", "not a JSON object"},
		{`{}`, "", "type is missing"},
		{`{"type":"launch","id":"x"}`, "x", "unknown type"},
		{`{"type":"subscribe"}`, "", "id is missing"},
		{`{"type":"subscribe","id":"a\u0001b"}`, "", "printable"},
		{`{"type":"subscribe","id":"` + strings.Repeat("x", 65) + `"}`, "", "printable"},
		{`{"type":"subscribe","id":"s","session":"nokey"}`, "s", "<agent>/<key>"},
		{`{"type":"subscribe","id":"s","session":"a/b/c"}`, "s", "<agent>/<key>"},
		{`{"type":"subscribe","id":"s","session":"a/k","agent":"a"}`, "s", "exclusive"},
		{`{"type":"subscribe","id":"s","session":"a/k","after":-1}`, "s", "negative"},
		{`{"type":"subscribe","id":"s","session":"a/k","after":1.5}`, "", "not a JSON object"},
		{`{"type":"subscribe","id":"s","session":"a/k","cursors":{"1":2}}`, "s", "a session takes after"},
		{`{"type":"subscribe","id":"s","agent":"a","after":3}`, "s", "use cursors"},
		{`{"type":"subscribe","id":"s","agent":"a","since":"yesterday"}`, "s", "RFC 3339"},
		{`{"type":"subscribe","id":"s","agent":"a/b"}`, "s", "bad agent"},
		{`{"type":"subscribe","id":"s","cursors":{"-4":1}}`, "s", "positive"},
		{`{"type":"subscribe","id":"s","cursors":{"nope":1}}`, "s", "session id or address"},
		{`{"type":"subscribe","id":"s","cursors":{"7":-1}}`, "s", "negative"},
		{`{"type":"subscribe","id":"taken","session":"a/k"}`, "taken", "in use"},
		{`{"type":"unsubscribe","id":"ghost"}`, "ghost", "no such subscription"},
		{`{"type":"unsubscribe"}`, "", "id is missing"},
	}
	for _, tt := range tests {
		c.sendRaw(tt.msg)
		f := c.next()
		if f.Type != "error" || f.Sub != tt.sub || !strings.Contains(f.Error, tt.errLike) {
			t.Errorf("%s: got %+v, want an error for %q containing %q", tt.msg, f, tt.sub, tt.errLike)
		}
	}
	// Too many subscriptions.
	c.send(map[string]any{"type": "subscribe", "id": "second"})
	c.send(map[string]any{"type": "subscribe", "id": "third"})
	got := c.nextN(2)
	if got[0].Type != "subscribed" || got[1].Type != "error" || !strings.Contains(got[1].Error, "at most 2") {
		t.Errorf("subscription limit: %+v", got)
	}
	// Binary messages are refused, and the connection stays open.
	ctx := context.Background()
	if err := c.ws.Write(ctx, websocket.MessageBinary, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	if f := c.next(); f.Type != "error" {
		t.Errorf("binary: %+v", f)
	}
	c.send(map[string]any{"type": "ping"})
	if f := c.next(); f.Type != "pong" {
		t.Errorf("after bad messages: %+v", f)
	}
}

// A message over the limit closes the connection with 1009.
func TestMessageTooBig(t *testing.T) {
	e := newEnv(t, &stream.Options{MaxMessageBytes: 1024})
	c := e.dial(t, "")
	c.sendRaw(`{"type":"ping","pad":"` + strings.Repeat("x", 2048) + `"}`)
	_, err := c.read()
	if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
		t.Errorf("close status %v (%v), want 1009", got, err)
	}
}

func TestBadQuery(t *testing.T) {
	e := newEnv(t, nil)
	for _, q := range []string{
		"session=nokey", "session=a/k&after=x", "session=a/k&after=-2", "agent=a&session=a/k", "all=yes",
		"all=1&session=a/k", "after=3", "agent=a&since=soon", "all=1&cursors=7", "all=1&cursors=7:x", "all=1&cursors=bad:1",
		"session=a/k&id=" + strings.Repeat("i", 65),
	} {
		resp, err := http.Get(e.srv.URL + "/v1/stream?" + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct{ Error, Code string }
		if resp.StatusCode != 400 || json.Unmarshal(body, &got) != nil || got.Code != "bad_request" {
			t.Errorf("%s: %d %s, want 400 bad_request", q, resp.StatusCode, body)
		}
	}
}

// A plain request (no upgrade) is refused by the WebSocket handshake.
func TestNotAWebSocket(t *testing.T) {
	e := newEnv(t, nil)
	resp, err := http.Get(e.srv.URL + "/v1/stream?all=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("status %d, want 426", resp.StatusCode)
	}
}

// The upgrade does not refuse a cross-origin request itself: the gateway's
// middleware decides about Origin, and a second check would contradict it.
func TestOriginLeftToMiddleware(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, e.url+"?all=1", &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://elsewhere.example"}}})
	if err != nil {
		t.Fatalf("cross-origin upgrade refused by the handler: %v", err)
	}
	ws.CloseNow()

	// Wrapped in a middleware that refuses it, it is refused.
	guarded := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") != "" && r.Header.Get("Origin") != "http://"+r.Host {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		e.h.ServeHTTP(w, r)
	})
	srv := httptestServer(t, guarded)
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv, "http")+"?all=1",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://elsewhere.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("guarded cross-origin upgrade: %v %v", resp, err)
	}
}

// A client that reconnects with its last sequence number gets exactly
// what it missed while events keep being committed.
func TestResumeNoLossNoDuplicates(t *testing.T) {
	e := newEnv(t, nil)
	const total = 600
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; n < total; {
			k := 1 + rand.IntN(5)
			kinds := make([]event.Kind, min(k, total-n))
			for i := range kinds {
				kinds[i] = event.Text
			}
			e.src.live(t, "a/k", event.TextDelta, event.DeltaData{Text: "x"})
			e.src.commit(t, "a/k", kinds...)
			n += len(kinds)
			if ctx.Err() != nil {
				return
			}
		}
	}()

	var got []int64
	last := int64(0)
	for round := 0; len(got) < total; round++ {
		if round > 1000 {
			t.Fatal("too many rounds")
		}
		c := e.dial(t, fmt.Sprintf("session=a/k&after=%d", last))
		if f := c.next(); f.Type != "subscribed" {
			t.Fatalf("%+v", f)
		}
		// Read a few frames, then drop the connection without a word.
		for n := 5 + rand.IntN(60); n > 0 && len(got) < total; n-- {
			f := c.next()
			if f.Type != "event" || f.Kind != "text" {
				continue
			}
			got = append(got, f.Seq)
			last = f.Seq
		}
		c.ws.CloseNow()
	}
	wg.Wait()
	want := make([]int64, total)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored events over reconnects (-want +got):\n%s", diff)
	}
}

// The same for an agent subscription over several sessions, resuming with
// cursors and since.
func TestResumeAgentWithCursors(t *testing.T) {
	e := newEnv(t, nil)
	addrs := []string{"A/a", "A/b", "A/c"}
	const perSession = 150
	start := time.Now()
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perSession; i++ {
				e.src.commit(t, a, event.Text)
				if i%10 == 0 {
					e.src.commit(t, "B/noise", event.Text)
				}
			}
		}()
	}
	got := map[string][]int64{}
	cursors := map[string]int64{}
	since := start.Add(-time.Second)
	count := func() int {
		n := 0
		for _, a := range addrs {
			n += len(got[a])
		}
		return n
	}
	for round := 0; count() < len(addrs)*perSession; round++ {
		if round > 1000 {
			t.Fatal("too many rounds")
		}
		c := e.dial(t, "")
		c.send(map[string]any{"type": "subscribe", "id": "s", "agent": "A", "cursors": cursors, "since": since.UTC().Format(time.RFC3339Nano)})
		for n := 10 + rand.IntN(80); n > 0 && count() < len(addrs)*perSession; n-- {
			f := c.next()
			if f.Type != "event" {
				continue
			}
			if !strings.HasPrefix(f.Session, "A/") {
				t.Fatalf("event of another agent: %+v", f)
			}
			got[f.Session] = append(got[f.Session], f.Seq)
			cursors[fmt.Sprint(f.SessionID)] = f.Seq
			since = f.Time
		}
		c.ws.CloseNow()
	}
	wg.Wait()
	for _, a := range addrs {
		want := make([]int64, perSession)
		for i := range want {
			want[i] = int64(i + 1)
		}
		if diff := cmp.Diff(want, got[a]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", a, diff)
		}
	}
}

// A client that does not read is closed with a reason once its queue is
// full; publishing never waits for it.
func TestSlowConsumer(t *testing.T) {
	e := newEnv(t, &stream.Options{MaxQueue: 64, MaxQueueBytes: 256 << 10})
	slow := e.dial(t, "session=a/k")
	if f := slow.next(); f.Type != "subscribed" {
		t.Fatalf("%+v", f)
	}
	// A client of another session tells when the Handler has routed the
	// flood below: the bus is one queue, routed in order.
	mark := e.dial(t, "session=a/mark")
	if f := mark.next(); f.Type != "subscribed" {
		t.Fatalf("%+v", f)
	}
	sess := e.src.session(t, "a/k")
	markSess := e.src.session(t, "a/mark")
	big := event.DeltaData{Text: strings.Repeat("x", 16<<10)}
	// Far more than the socket buffers and the queue hold. Publish never
	// blocks, so this loop ends whatever the client does.
	for i := 0; i < 2000; i++ {
		e.src.bus.Publish(event.New(sess.ID, 1, event.TextDelta, big))
	}
	e.src.bus.Publish(event.New(markSess.ID, 1, event.TextDelta, event.DeltaData{Text: "routed"}))
	if f := mark.next(); f.Kind != "text-delta" {
		t.Fatalf("the marker: %+v", f)
	}
	waitFor(t, "the slow consumer to be closed", func() bool { return e.h.Stats().SlowClosed == 1 })
	var err error
	n := 0
	for err == nil {
		_, err = slow.read()
		n++
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != stream.StatusSlowConsumer || !strings.HasPrefix(ce.Reason, "slow consumer: ") {
		t.Fatalf("after %d frames: %v, want a 1008 slow consumer close", n, err)
	}
	t.Logf("read %d frames, then %q", n-1, ce.Reason)
	if s := e.h.Stats(); s.Overruns != 0 {
		t.Errorf("stats %+v", s)
	}
	// Others carry on.
	c := e.dial(t, "session=a/k&after=0")
	for f := c.next(); f.Type != "replayed"; f = c.next() {
		if f.Type == "event" && f.Kind != "text-delta" {
			t.Fatalf("%+v", f)
		}
	}
}

// Live events that pile up while a client's replay is held back also count.
func TestSlowConsumerDuringReplay(t *testing.T) {
	e := newEnv(t, &stream.Options{MaxQueue: 16, MaxQueueBytes: 1 << 20})
	// More than the socket buffers hold, so the replay has to wait for
	// the client, which does not read.
	e.src.commitN(t, "a/k", 600, event.Text, event.TextData{Text: strings.Repeat("x", 16<<10)})
	c := e.dial(t, "session=a/k&after=0")
	sess := e.src.session(t, "a/k")
	waitFor(t, "the slow consumer to be closed", func() bool {
		e.src.bus.Publish(event.New(sess.ID, 1, event.TextDelta, event.DeltaData{Text: "x"}))
		return e.h.Stats().SlowClosed == 1
	})
	var err error
	for err == nil {
		_, err = c.read()
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != stream.StatusSlowConsumer || !strings.Contains(ce.Reason, "during replay") {
		t.Errorf("%v, want 1008 for events held during the replay", err)
	}
}

// When the Handler falls behind the bus, its connections are closed with
// 1013 and resume from the log without loss.
func TestOverrun(t *testing.T) {
	e := newEnv(t, &stream.Options{BusBuffer: 4})
	c := e.dial(t, "session=a/k&after=0")
	c.nextN(2) // subscribed, replayed
	kinds := make([]event.Kind, 300)
	for i := range kinds {
		kinds[i] = event.Text
	}
	e.src.commit(t, "a/k", kinds...) // one Publish of 300 events into a buffer of 4
	last := int64(0)
	var err error
	for {
		var f Frame
		if f, err = c.read(); err != nil {
			break
		}
		last = f.Seq
	}
	if websocket.CloseStatus(err) != stream.StatusOverrun {
		t.Fatalf("%v, want 1013", err)
	}
	if got := e.h.Stats().Overruns; got != 1 {
		t.Errorf("Overruns = %d", got)
	}
	c = e.dial(t, fmt.Sprintf("session=a/k&after=%d", last))
	var seqs []int64
	for f := c.next(); f.Type != "replayed"; f = c.next() {
		if f.Type == "event" {
			seqs = append(seqs, f.Seq)
		}
	}
	if len(seqs) != int(300-last) || (len(seqs) > 0 && seqs[0] != last+1) {
		t.Errorf("resumed after %d with %d events", last, len(seqs))
	}
}

// Close ends every connection with 1001 and every goroutine; later
// upgrades are refused.
func TestClose(t *testing.T) {
	e := newEnv(t, nil)
	var cs []*client
	for i := 0; i < 20; i++ {
		c := e.dial(t, "all=1")
		c.next()
		cs = append(cs, c)
	}
	done := make(chan error, len(cs))
	for _, c := range cs {
		go func() {
			var err error
			for err == nil {
				_, err = c.read()
			}
			done <- err
		}()
	}
	if err := e.h.Close(); err != nil {
		t.Fatal(err)
	}
	for range cs {
		if err := <-done; websocket.CloseStatus(err) != stream.StatusShutdown {
			t.Errorf("%v, want 1001", err)
		}
	}
	if s := e.h.Stats(); s.Conns != 0 || s.Subscriptions != 0 || s.Writers != 0 || s.Replays != 0 {
		t.Errorf("after Close: %+v", s)
	}
	resp, err := http.Get(e.srv.URL + "/v1/stream?all=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("after Close: %d, want 503", resp.StatusCode)
	}
	e.src.commit(t, "a/k", event.Input) // nothing listens; nothing blocks
	if err := e.h.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A peer that does not answer pings is dropped.
func TestPingReapsDeadPeer(t *testing.T) {
	e := newEnv(t, &stream.Options{PingInterval: 20 * time.Millisecond, PongTimeout: 2 * time.Second})
	live := e.dial(t, "all=1")
	go func() { // answers pings by reading
		for {
			if _, err := live.read(); err != nil {
				return
			}
		}
	}()
	e.dial(t, "all=1") // never reads, so never answers
	waitFor(t, "the dead peer to be dropped", func() bool { return e.h.Stats().Conns == 1 })
	// The live one is still served.
	e.src.commit(t, "a/k", event.Input)
	live.send(map[string]any{"type": "ping"})
}

func TestQueryAndMessageTogether(t *testing.T) {
	e := newEnv(t, nil)
	e.src.commit(t, "a/k", event.Input, event.Text)
	c := e.dial(t, "session=a/k&after=1&id=q")
	c.send(map[string]any{"type": "subscribe", "id": "m", "session": "a/k", "after": 0})
	// The two replays run side by side: compare each subscription's frames.
	got := map[string][]brief{}
	for _, b := range briefs(c.nextN(7)) {
		got[b.Sub] = append(got[b.Sub], b)
	}
	want := map[string][]brief{
		"q": {{Type: "subscribed", Sub: "q"}, ev("q", "a/k", 2, "text"), {Type: "replayed", Sub: "q", Session: "a/k", Seq: 2, Done: true}},
		"m": {{Type: "subscribed", Sub: "m"}, ev("m", "a/k", 1, "input"), ev("m", "a/k", 2, "text"),
			{Type: "replayed", Sub: "m", Session: "a/k", Seq: 2, Done: true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A client may send its first message in the same packet as its
// handshake; it is not lost.
func TestMessageRightAfterHandshake(t *testing.T) {
	e := newEnv(t, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := "GET /v1/stream HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	msg := []byte(`{"type":"ping"}`)
	mask := [4]byte{1, 2, 3, 4}
	frame := []byte{0x81, 0x80 | byte(len(msg)), mask[0], mask[1], mask[2], mask[3]}
	for i, b := range msg {
		frame = append(frame, b^mask[i%4])
	}
	if _, err := conn.Write(append([]byte(req), frame...)); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(time.Minute)) // only against a hang
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("%v %v", resp, err)
	}
	head := make([]byte, 2)
	if _, err := io.ReadFull(br, head); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, head[1]&0x7f)
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	if head[0] != 0x81 || string(body) != `{"type":"pong"}` {
		t.Errorf("got %x %s, want a pong", head, body)
	}
}

// An event larger than the queue's byte bound (an input with images) is
// delivered, live and in a replay, instead of closing every subscriber.
func TestLargeEvent(t *testing.T) {
	e := newEnv(t, &stream.Options{MaxQueue: 64, MaxQueueBytes: 64 << 10})
	live := e.dial(t, "session=a/k")
	if f := live.next(); f.Type != "subscribed" {
		t.Fatalf("%+v", f)
	}
	// Two events larger than the bound, each followed by small ones.
	for range 2 {
		e.src.commitN(t, "a/k", 1, event.Input, event.InputData{Text: strings.Repeat("y", 200<<10)})
		e.src.commitN(t, "a/k", 3, event.Text, event.TextData{Text: "small"})
	}
	want := []string{"input", "text", "text", "text", "input", "text", "text", "text"}
	var got []string
	for len(got) < len(want) {
		f := live.next()
		if f.Type != "event" {
			t.Fatalf("live: %+v", f)
		}
		got = append(got, f.Kind)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("live (-want +got):\n%s", diff)
	}
	replay := e.dial(t, "session=a/k&after=0")
	got = nil
	for f := replay.next(); f.Type != "replayed"; f = replay.next() {
		if f.Type == "event" {
			got = append(got, f.Kind)
		} else if f.Type != "subscribed" {
			t.Fatalf("replay: %+v", f)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	if s := e.h.Stats(); s.SlowClosed != 0 {
		t.Errorf("stats %+v", s)
	}
}
