package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// decodeStrict decodes a JSON body into v, refusing unknown fields.
func decodeStrict(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, body, err)
	}
}

func TestRoutes(t *testing.T) {
	e := newEnv(t, setup{})

	status, ctype, body := e.do("GET", "/healthz", "")
	if status != 200 || ctype != "application/json" || strings.TrimSpace(string(body)) != `{"ok":true}` {
		t.Errorf("healthz: %d %s %s", status, ctype, body)
	}
	status, _, body = e.do("GET", "/v1/version", "")
	if status != 200 || strings.TrimSpace(string(body)) != `{"version":"v1.2.3"}` {
		t.Errorf("version: %d %s", status, body)
	}

	status, _, body = e.do("GET", "/v1/agents", "")
	var ags []gateway.AgentInfo
	decodeStrict(t, body, &ags)
	wantAgents := []gateway.AgentInfo{
		{ID: "a", Name: "Alpha", Type: "user", Provider: "test", Model: "m1", File: "agents/a.yaml", State: gateway.AgentReady},
		{ID: "b", Name: "Beta", Type: "permanent", Provider: "test", Model: "m2", State: gateway.AgentReady},
	}
	if diff := cmp.Diff(wantAgents, ags); status != 200 || diff != "" {
		t.Errorf("agents: %d (-want +got):\n%s", status, diff)
	}

	// No sessions yet: an empty list, not null.
	status, _, body = e.do("GET", "/v1/sessions", "")
	if status != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("sessions before any: %d %s", status, body)
	}

	// Submit: 202 with the receipt; the turn runs in the background.
	status, _, body = e.do("POST", "/v1/sessions/a/chat:alice/messages", `{"text":"hello","idempotency_key":"m1","source":"test"}`)
	var mr gateway.MessageResponse
	decodeStrict(t, body, &mr)
	if status != http.StatusAccepted || mr.Session != "a/chat:alice" || mr.Turn <= 0 || mr.SessionID <= 0 || mr.Duplicate || mr.End != nil {
		t.Fatalf("submit: %d %s", status, body)
	}
	// The turn, waited for.
	status, _, body = e.do("GET", fmt.Sprintf("/v1/turns/%d?wait=20s", mr.Turn), "")
	var tr struct {
		Turn int64              `json:"turn"`
		Done bool               `json:"done"`
		End  *event.TurnEndData `json:"end"`
	}
	decodeStrict(t, body, &tr)
	if status != 200 || tr.Turn != mr.Turn || !tr.Done || tr.End == nil || tr.End.Reply != "re: hello" || tr.End.Status != event.StatusDone {
		t.Errorf("turn: %d %s", status, body)
	}
	// The same idempotency key again: a duplicate of the same turn.
	status, _, body = e.do("POST", "/v1/sessions/a/chat:alice/messages", `{"text":"hello","idempotency_key":"m1"}`)
	var dup gateway.MessageResponse
	decodeStrict(t, body, &dup)
	if status != http.StatusAccepted || !dup.Duplicate || dup.Turn != mr.Turn {
		t.Errorf("duplicate: %d %s", status, body)
	}

	// ?wait=true: the reply.
	status, _, body = e.do("POST", "/v1/sessions/a/chat:alice/messages?wait=true", `{"text":"again"}`)
	var wr gateway.MessageResponse
	decodeStrict(t, body, &wr)
	if status != 200 || wr.End == nil || wr.End.Reply != "re: again" || wr.End.Status != event.StatusDone || wr.Turn <= mr.Turn {
		t.Errorf("wait=true: %d %s", status, body)
	}
	e.do("POST", "/v1/sessions/b/other/messages?wait=1", `{"text":"b"}`)

	// Sessions, filtered.
	status, _, body = e.do("GET", "/v1/sessions", "")
	var list []gateway.SessionInfo
	decodeStrict(t, body, &list)
	var addrs []string
	for _, s := range list {
		addrs = append(addrs, s.Address)
	}
	if diff := cmp.Diff([]string{"b/other", "a/chat:alice"}, addrs); status != 200 || diff != "" {
		t.Errorf("sessions (most recent first): %d (-want +got):\n%s", status, diff)
	}
	status, _, body = e.do("GET", "/v1/sessions?agent=a&state=idle&limit=5", "")
	list = nil
	decodeStrict(t, body, &list)
	if status != 200 || len(list) != 1 || list[0].Address != "a/chat:alice" || list[0].Agent != "a" || list[0].Key != "chat:alice" || list[0].State != "idle" {
		t.Errorf("sessions?agent=a: %d %s", status, body)
	}
	status, _, body = e.do("GET", "/v1/sessions?limit=1", "")
	list = nil
	decodeStrict(t, body, &list)
	if status != 200 || len(list) != 1 {
		t.Errorf("sessions?limit=1: %d %s", status, body)
	}

	// One session.
	status, _, body = e.do("GET", "/v1/sessions/a/chat:alice", "")
	var si gateway.SessionInfo
	decodeStrict(t, body, &si)
	stored, err := e.st.SessionByAddress(t.Context(), "a", "chat:alice")
	if err != nil {
		t.Fatal(err)
	}
	want := gateway.SessionInfo{ID: stored.ID, Address: "a/chat:alice", Agent: "a", Key: "chat:alice", State: stored.State,
		LastSeq: stored.LastSeq, CreatedAt: stored.CreatedAt, UpdatedAt: stored.UpdatedAt, Title: "hello", TitleBy: store.TitleByInput}
	if diff := cmp.Diff(want, si); status != 200 || diff != "" {
		t.Errorf("session: %d (-want +got):\n%s", status, diff)
	}

	// Events, paged.
	all, err := e.st.Events(t.Context(), stored.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	status, _, body = e.do("GET", "/v1/sessions/a/chat:alice/events?after=2&limit=3", "")
	var page gateway.EventsPage
	decodeStrict(t, body, &page)
	if diff := cmp.Diff(all[2:5], page.Events); status != 200 || diff != "" {
		t.Errorf("events page: %d (-want +got):\n%s", status, diff)
	}
	if page.Next != all[4].Seq || page.Session.Address != "a/chat:alice" {
		t.Errorf("events page: next %d session %+v", page.Next, page.Session)
	}
	status, _, body = e.do("GET", "/v1/sessions/a/chat:alice/events", "")
	page = gateway.EventsPage{}
	decodeStrict(t, body, &page)
	if diff := cmp.Diff(all, page.Events); status != 200 || diff != "" {
		t.Errorf("all events: %d (-want +got):\n%s", status, diff)
	}
	status, _, body = e.do("GET", fmt.Sprintf("/v1/sessions/a/chat:alice/events?after=%d", all[len(all)-1].Seq), "")
	page = gateway.EventsPage{}
	decodeStrict(t, body, &page)
	if status != 200 || page.Events == nil || len(page.Events) != 0 || page.Next != all[len(all)-1].Seq {
		t.Errorf("events at the end: %d %s", status, body)
	}

	// Reset.
	status, _, body = e.do("POST", "/v1/sessions/a/chat:alice/reset?reason=test", "")
	var rc runtime.Receipt
	decodeStrict(t, body, &rc)
	if status != 200 || rc.SessionID != stored.ID || rc.Turn <= wr.Turn {
		t.Errorf("reset: %d %s", status, body)
	}
	evs, err := e.st.Events(t.Context(), stored.ID, all[len(all)-1].Seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != event.Reset || string(evs[0].Data) != `{"name":"reset","reason":"test"}` {
		t.Errorf("after reset: %+v", evs)
	}
}

func TestCancelAndPendingTurn(t *testing.T) {
	e := newEnv(t, setup{})
	g := e.p.Gate("slow")
	status, _, body := e.do("POST", "/v1/sessions/a/k/messages", `{"text":"slow"}`)
	var mr gateway.MessageResponse
	decodeStrict(t, body, &mr)
	if status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", status, body)
	}
	recv(t, "the turn to reach the model", g.Entered)
	// A running turn is not done.
	status, _, body = e.do("GET", fmt.Sprintf("/v1/turns/%d", mr.Turn), "")
	if status != 200 || strings.TrimSpace(string(body)) != fmt.Sprintf(`{"done":false,"turn":%d}`, mr.Turn) {
		t.Errorf("running turn: %d %s", status, body)
	}
	status, _, body = e.do("GET", fmt.Sprintf("/v1/turns/%d?wait=1ms", mr.Turn), "")
	if status != 200 || strings.TrimSpace(string(body)) != fmt.Sprintf(`{"done":false,"turn":%d}`, mr.Turn) {
		t.Errorf("running turn, short wait: %d %s", status, body)
	}
	status, _, body = e.do("POST", "/v1/sessions/a/k/cancel", "")
	if status != 200 || strings.TrimSpace(string(body)) != `{"cancelled":true}` {
		t.Errorf("cancel: %d %s", status, body)
	}
	if end := e.wait(mr.Turn); end.Status != event.StatusCancelled {
		t.Errorf("cancelled turn: %+v", end)
	}
	checkError(t, e, "POST", "/v1/sessions/a/k/cancel", "", 409, "no_turn")
}

// checkError checks that a request fails with status and a body that is
// exactly {error, code}.
func checkError(t *testing.T, e *env, method, path, body string, status int, code string) gateway.Error {
	t.Helper()
	got, ctype, b := e.do(method, path, body)
	var er gateway.Error
	if got != status {
		t.Errorf("%s %s: status %d, want %d (%s)", method, path, got, status, b)
		return er
	}
	if ctype != "application/json" {
		t.Errorf("%s %s: content type %q (%s)", method, path, ctype, b)
		return er
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&er); err != nil {
		t.Errorf("%s %s: body %s: %v", method, path, b, err)
		return er
	}
	if er.Error == "" || (code != "" && er.Code != code) {
		t.Errorf("%s %s: error body %+v, want code %q", method, path, er, code)
	}
	return er
}

// showsInternals reports whether an error message shows how agentd is
// built (package prefixes, the store's own messages, file paths).
func showsInternals(msg string) bool {
	for _, leak := range []string{"sqlite", secret, "runtime:", "gateway:"} {
		if strings.Contains(msg, leak) {
			return true
		}
	}
	return false
}

func TestErrors(t *testing.T) {
	e := newEnv(t, setup{})
	// A session to address.
	if _, _, err := e.rt.Send(t.Context(), runtime.Input{Session: "a/k", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	huge := `{"text":"` + strings.Repeat("x", gateway.MaxMessageBody) + `"}`
	tests := []struct {
		method, path, body string
		status             int
		code               string
	}{
		// Bad addresses.
		{"GET", "/v1/sessions/a/b%2Fc", "", 400, "bad_request"},
		{"GET", "/v1/sessions/a/b%2Fc/events", "", 400, "bad_request"},
		{"POST", "/v1/sessions/a/b%2Fc/messages", `{"text":"x"}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/b%0A/messages", `{"text":"x"}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/b%2Fc/messages?stream=true", `{"text":"x"}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/b%2Fc/reset", "", 400, "bad_request"},
		{"POST", "/v1/sessions/a/b%2Fc/cancel", "", 400, "bad_request"},
		// Unknown agents and sessions.
		{"POST", "/v1/sessions/ghost/k/messages", `{"text":"x"}`, 404, "not_found"},
		{"POST", "/v1/sessions/ghost/k/messages?wait=true", `{"text":"x"}`, 404, "not_found"},
		{"POST", "/v1/sessions/ghost/k/messages?stream=true", `{"text":"x"}`, 404, "not_found"},
		{"GET", "/v1/sessions/a/nobody", "", 404, "not_found"},
		{"GET", "/v1/sessions/a/nobody/events", "", 404, "not_found"},
		{"GET", "/v1/sessions/a/nobody/events?wait=1s", "", 404, "not_found"},
		{"GET", "/v1/turns/987654", "", 404, "not_found"},
		{"GET", "/v1/turns/987654?wait=1s", "", 404, "not_found"},
		// Bad message bodies.
		{"POST", "/v1/sessions/a/k/messages", `{"text":""}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/k/messages", `{"text":"  \n "}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/k/messages?wait=true", `{"text":""}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/k/messages?stream=true", `{"text":""}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/k/messages", `{}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/k/messages", ``, 400, "bad_request"},
		{"POST", "/v1/sessions/a/k/messages", `{"text":"x","colour":"red"}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/k/messages", `{"text":42}`, 400, "bad_request"},
		{"POST", "/v1/sessions/a/k/messages", `text=x`, 400, "bad_request"},
		// Bad parameters.
		{"GET", "/v1/sessions?limit=x", "", 400, "bad_request"},
		{"GET", "/v1/sessions?limit=-1", "", 400, "bad_request"},
		{"GET", "/v1/sessions/a/k/events?after=x", "", 400, "bad_request"},
		{"GET", "/v1/sessions/a/k/events?after=-1", "", 400, "bad_request"},
		{"GET", "/v1/sessions/a/k/events?limit=0", "", 400, "bad_request"},
		{"GET", "/v1/sessions/a/k/events?limit=10001", "", 400, "bad_request"},
		{"GET", "/v1/sessions/a/k/events?limit=ten", "", 400, "bad_request"},
		{"GET", "/v1/sessions/a/k/events?wait=soon", "", 400, "bad_request"},
		{"GET", "/v1/sessions/a/k/events?wait=-1s", "", 400, "bad_request"},
		{"GET", "/v1/sessions/a/k/events?wait=11m", "", 400, "bad_request"},
		{"GET", "/v1/turns/abc", "", 400, "bad_request"},
		{"GET", "/v1/turns/0", "", 400, "bad_request"},
		{"GET", "/v1/turns/-3", "", 400, "bad_request"},
		{"GET", "/v1/turns/1.5", "", 400, "bad_request"},
		{"GET", "/v1/turns/1?wait=forever", "", 400, "bad_request"},
		// A running turn is needed to cancel.
		{"POST", "/v1/sessions/a/k/cancel", "", 409, "no_turn"},
	}
	for _, tt := range tests {
		checkError(t, e, tt.method, tt.path, tt.body, tt.status, tt.code)
	}
	// A body over MaxBody is refused.
	status, _, b := e.do("POST", "/v1/sessions/a/k/messages", huge)
	if status < 400 || status >= 500 {
		t.Errorf("huge body: %d %s", status, b)
	}
	checkError(t, e, "POST", "/v1/sessions/a/k/messages", huge, status, "")
	// None of the refused messages reached the session.
	sess, err := e.st.SessionByAddress(t.Context(), "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := e.st.Events(t.Context(), sess.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var inputs int
	for _, ev := range evs {
		if ev.Kind == event.Input {
			inputs++
		}
	}
	if inputs != 1 {
		t.Errorf("%d inputs logged, want 1", inputs)
	}
	// Nothing was created for the unknown agent.
	if _, err := e.st.SessionByAddress(t.Context(), "ghost", "k"); err == nil {
		t.Error("a session was created for an unknown agent")
	}
}

// Reset and cancel name a session of an agent: for an agent that does not
// exist they answer 404, like every other route, and create nothing.
func TestResetAndCancelUnknownAgent(t *testing.T) {
	e := newEnv(t, setup{})
	checkError(t, e, "POST", "/v1/sessions/ghost/k/reset", "", 404, "not_found")
	checkError(t, e, "POST", "/v1/sessions/ghost/k/cancel", "", 404, "not_found")
	if list, err := e.st.Sessions(t.Context(), store.SessionFilter{}); err != nil || len(list) != 0 {
		t.Errorf("sessions created: %+v, %v", list, err)
	}
}

// Every error response has the {error, code} body, including those for
// routes and methods the API does not have.
func TestUnknownRouteAndMethod(t *testing.T) {
	e := newEnv(t, setup{})
	checkError(t, e, "GET", "/v1/nothing", "", 404, "")
	checkError(t, e, "GET", "/v1/sessions/a/k/messages", "", 405, "")
	checkError(t, e, "DELETE", "/v1/sessions/a/k", "", 405, "")
}

// A body holding more than one JSON value is not a message.
func TestMessageBodyWithTrailingData(t *testing.T) {
	e := newEnv(t, setup{})
	checkError(t, e, "POST", "/v1/sessions/a/k/messages", `{"text":"x"} {"text":"y"}`, 400, "bad_request")
	checkError(t, e, "POST", "/v1/sessions/a/k/messages", `{"text":"x"} trailing`, 400, "bad_request")
}

// Only agentd's heartbeats start a heartbeat's turn, which the chat hides:
// a client's message may not take its source.
func TestMessageSourceHeartbeatRefused(t *testing.T) {
	e := newEnv(t, setup{})
	checkError(t, e, "POST", "/v1/sessions/a/main/messages", `{"text":"x","source":"heartbeat"}`, 400, "bad_request")
	if _, err := e.st.SessionByAddress(t.Context(), "a", "main"); err == nil {
		t.Error("a refused message made its session")
	}
}

func TestShuttingDown(t *testing.T) {
	e := newEnv(t, setup{})
	if err := e.rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkError(t, e, "POST", "/v1/sessions/a/k/messages", `{"text":"x"}`, 503, "shutting_down")
	checkError(t, e, "POST", "/v1/sessions/a/k/messages?wait=true", `{"text":"x"}`, 503, "shutting_down")
	checkError(t, e, "POST", "/v1/sessions/a/k/messages?stream=true", `{"text":"x"}`, 503, "shutting_down")
}

// busSpy is the runtime, reporting when the server asks for its bus (that
// is, when a long poll starts to wait).
type busSpy struct {
	*runtime.Runtime
	once    sync.Once
	waiting chan struct{}
}

func (b *busSpy) Bus() *event.Bus {
	b.once.Do(func() { close(b.waiting) })
	return b.Runtime.Bus()
}

func TestEventsLongPoll(t *testing.T) {
	spy := &busSpy{waiting: make(chan struct{})}
	e := newEnv(t, setup{runtime: func(r *runtime.Runtime) gateway.Runtime { spy.Runtime = r; return spy }})
	rc, _, err := e.rt.Send(t.Context(), runtime.Input{Session: "a/k", Text: "first"})
	if err != nil {
		t.Fatal(err)
	}
	last, err := e.st.SessionByID(t.Context(), rc.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		status int
		body   []byte
	}
	done := make(chan result, 1)
	go func() {
		status, _, body := e.do("GET", fmt.Sprintf("/v1/sessions/a/k/events?after=%d&wait=1m", last.LastSeq), "")
		done <- result{status, body}
	}()
	recv(t, "the long poll to wait", spy.waiting)
	if _, err := e.rt.Submit(t.Context(), runtime.Input{Session: "a/k", Text: "second"}); err != nil {
		t.Fatal(err)
	}
	r := recv(t, "the long poll to return", done)
	var page gateway.EventsPage
	decodeStrict(t, r.body, &page)
	if r.status != 200 || len(page.Events) == 0 || page.Events[0].Seq != last.LastSeq+1 || page.Events[0].Kind != event.Input {
		t.Fatalf("long poll: %d %s", r.status, r.body)
	}
	if page.Next != page.Events[len(page.Events)-1].Seq {
		t.Errorf("next %d, last event %d", page.Next, page.Events[len(page.Events)-1].Seq)
	}

	// With nothing new, it returns an empty page when the wait is over.
	status, _, body := e.do("GET", "/v1/sessions/a/k/events?after=1000&wait=10ms", "")
	page = gateway.EventsPage{}
	decodeStrict(t, body, &page)
	if status != 200 || page.Events == nil || len(page.Events) != 0 || page.Next != 1000 {
		t.Errorf("long poll without events: %d %s", status, body)
	}
}

func TestMessageStream(t *testing.T) {
	e := newEnv(t, setup{})
	status, ctype, body := e.do("POST", "/v1/sessions/a/k/messages?stream=true", `{"text":"one two three"}`)
	if status != 200 || ctype != "application/x-ndjson" {
		t.Fatalf("stream: %d %s %s", status, ctype, body)
	}
	var lines []gateway.StreamLine
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var l gateway.StreamLine
		decodeStrict(t, sc.Bytes(), &l)
		lines = append(lines, l)
	}
	if len(lines) < 2 {
		t.Fatalf("stream: %s", body)
	}
	last := lines[len(lines)-1]
	if last.Receipt == nil || last.End == nil || last.Event != nil || last.Error != nil {
		t.Fatalf("last line %+v, want the receipt and the end", last)
	}
	if last.End.Status != event.StatusDone || last.End.Reply != "re: one two three" || last.Receipt.Session != "a/k" {
		t.Errorf("end %+v receipt %+v", last.End, last.Receipt)
	}
	var logged []event.Event
	var text strings.Builder
	for _, l := range lines[:len(lines)-1] {
		if l.Event == nil || l.Receipt != nil || l.End != nil {
			t.Fatalf("line %+v, want an event", l)
		}
		if l.Event.Turn != last.Receipt.Turn {
			t.Errorf("event of turn %d in the stream of turn %d", l.Event.Turn, last.Receipt.Turn)
		}
		switch {
		case l.Event.Kind == event.TextDelta:
			var d event.DeltaData
			if err := l.Event.Decode(&d); err != nil {
				t.Fatal(err)
			}
			text.WriteString(d.Text)
		case l.Event.Seq > 0:
			logged = append(logged, *l.Event)
		}
	}
	if text.String() != last.End.Reply {
		t.Errorf("deltas say %q", text.String())
	}
	want, err := e.st.TurnEvents(t.Context(), last.Receipt.SessionID, last.Receipt.Turn)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, logged); diff != "" {
		t.Errorf("streamed logged events (-log +stream):\n%s", diff)
	}
}

// failingSessions is a Sessions whose store has failed.
type failingSessions struct{}

func (failingSessions) Sessions(context.Context, store.SessionFilter) ([]store.Session, error) {
	return nil, errDisk
}

// brokenStore fails some operations with errDisk.
type brokenStore struct {
	store.Store
	enqueue, turnEvents bool
}

func (s *brokenStore) Enqueue(ctx context.Context, it store.InboxItem) (store.InboxItem, bool, error) {
	if s.enqueue {
		return store.InboxItem{}, false, errDisk
	}
	return s.Store.Enqueue(ctx, it)
}

func (s *brokenStore) TurnEvents(ctx context.Context, session, turn int64) ([]event.Event, error) {
	if s.turnEvents {
		return nil, errDisk
	}
	return s.Store.TurnEvents(ctx, session, turn)
}

// Not-found answers name what was not found, not the store's own message.
func TestNotFoundShowsNoInternals(t *testing.T) {
	e := newEnv(t, setup{})
	for _, path := range []string{"/v1/sessions/a/nobody", "/v1/sessions/a/nobody/events", "/v1/turns/987654"} {
		if er := checkError(t, e, "GET", path, "", 404, "not_found"); showsInternals(er.Error) {
			t.Errorf("GET %s: error %q shows internals", path, er.Error)
		}
	}
}

func TestInternalErrorsAreNotShown(t *testing.T) {
	internal := gateway.Error{Error: "internal error", Code: "internal"}
	e := newEnv(t, setup{sessions: failingSessions{}, wrap: func(st store.Store) store.Store { return &brokenStore{Store: st, enqueue: true} }})
	for _, path := range []string{"/v1/sessions/a/k/messages", "/v1/sessions/a/k/messages?wait=true", "/v1/sessions/a/k/messages?stream=true"} {
		if got := checkError(t, e, "POST", path, `{"text":"x"}`, 500, "internal"); got != internal {
			t.Errorf("POST %s: %+v, want %+v", path, got, internal)
		}
	}
	if got := checkError(t, e, "GET", "/v1/sessions", "", 500, "internal"); got != internal {
		t.Errorf("GET /v1/sessions: %+v, want %+v", got, internal)
	}

	// A failure after a stream has started ends it with an error line that
	// shows no more than the error body would.
	e2 := newEnv(t, setup{wrap: func(st store.Store) store.Store { return &brokenStore{Store: st, turnEvents: true} }})
	status, _, body := e2.do("POST", "/v1/sessions/a/k/messages?stream=true", `{"text":"x"}`)
	if status != 200 {
		t.Fatalf("stream: %d %s", status, body)
	}
	lines := bytes.Split(bytes.TrimSpace(body), []byte("\n"))
	var last gateway.StreamLine
	decodeStrict(t, lines[len(lines)-1], &last)
	if last.Error == nil {
		t.Fatalf("last line %s, want an error", lines[len(lines)-1])
	}
	if showsInternals(last.Error.Error) {
		t.Errorf("stream error line shows internals: %+v", last.Error)
	}
}

// slowReads is a store whose reads of inbox items take a little while.
type slowReads struct{ store.Store }

func (s slowReads) InboxItem(ctx context.Context, id int64) (store.InboxItem, error) {
	time.Sleep(20 * time.Millisecond) // a busy disk
	return s.Store.InboxItem(ctx, id)
}

// A finished turn is reported finished however long the store takes to say so.
func TestFinishedTurnOnSlowStore(t *testing.T) {
	e := newEnv(t, setup{wrap: func(st store.Store) store.Store { return slowReads{st} }})
	rc, _, err := e.rt.Send(t.Context(), runtime.Input{Session: "a/k", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	status, _, body := e.do("GET", fmt.Sprintf("/v1/turns/%d", rc.Turn), "")
	var tr map[string]any
	decodeStrict(t, body, &tr)
	if status != 200 || tr["done"] != true {
		t.Errorf("finished turn: %d %s", status, body)
	}
}

// sessionInfoOpts ignores what changes with every write to a session.
var sessionInfoOpts = cmpopts.IgnoreFields(gateway.SessionInfo{}, "CreatedAt", "UpdatedAt", "LastSeq")

// A message may be larger than other bodies (it may carry images); other
// routes keep MaxBody.
func TestMessageBodyLimit(t *testing.T) {
	e := newEnv(t, setup{})
	// 1.5 MiB of body, 0.75 MiB of text (each \" is one character).
	big := `{"text":"` + strings.Repeat(`\"`, 3*gateway.MaxBody/4) + `"}`
	if status, _, b := e.do("POST", "/v1/sessions/a/k/messages", big); status != 202 {
		t.Errorf("a %d-byte message: %d %s", len(big), status, b)
	}
	if status, _, b := e.do("POST", "/v1/sessions/a/k/compact", big); status != 413 {
		t.Errorf("a %d-byte compact request: %d %s, want 413", len(big), status, b)
	}
}

// Reset, close and reopen of a session that does not exist answer 404 and
// create nothing; a closed session is reopened by the route, or by a
// message that asks for it.
func TestSessionRoutesNeedTheSessionAndReopen(t *testing.T) {
	e := newEnv(t, setup{})
	for _, op := range []string{"reset", "close", "reopen"} {
		checkError(t, e, "POST", "/v1/sessions/a/none/"+op, "", 404, "not_found")
	}
	if list, err := e.st.Sessions(t.Context(), store.SessionFilter{}); err != nil || len(list) != 0 {
		t.Fatalf("sessions created: %+v, %v", list, err)
	}
	if status, _, b := e.do("POST", "/v1/sessions/a/k/messages?wait=true", `{"text":"one"}`); status != 200 {
		t.Fatalf("message: %d %s", status, b)
	}
	for _, reopen := range []func(){
		func() {
			if status, _, b := e.do("POST", "/v1/sessions/a/k/reopen", ""); status != 200 || !strings.Contains(string(b), `"reopened":true`) {
				t.Fatalf("reopen: %d %s", status, b)
			}
		},
		func() {}, // the message reopens it
	} {
		if status, _, b := e.do("POST", "/v1/sessions/a/k/close", ""); status != 200 {
			t.Fatalf("close: %d %s", status, b)
		}
		checkError(t, e, "POST", "/v1/sessions/a/k/messages", `{"text":"refused"}`, 409, "session_closed")
		reopen()
		if status, _, b := e.do("POST", "/v1/sessions/a/k/messages?wait=true", `{"text":"again","reopen":true}`); status != 200 || !strings.Contains(string(b), `"reply":"re: again"`) {
			t.Fatalf("message after reopening: %d %s", status, b)
		}
	}
	if status, _, b := e.do("POST", "/v1/sessions/a/k/reopen", ""); status != 200 || !strings.Contains(string(b), `"reopened":false`) {
		t.Errorf("reopen of an open session: %d %s", status, b)
	}
}

// Every route that names a session, but a message's, answers 404 for a
// session that does not exist (cancel: 409 no_turn) and creates none.
func TestSessionRoutesCreateNoSession(t *testing.T) {
	var history gateway.History
	e := newEnv(t, setup{
		wrap:    func(st store.Store) store.Store { history = st.(gateway.History); return st },
		options: func(o *gateway.Options) { o.History = history },
	})
	for _, c := range []struct {
		method, path, body string
		status             int
		code               string
	}{
		{"GET", "/v1/sessions/a/none", "", 404, "not_found"},
		{"PATCH", "/v1/sessions/a/none", `{"title":"t"}`, 404, "not_found"},
		{"GET", "/v1/sessions/a/none/events", "", 404, "not_found"},
		{"GET", "/v1/sessions/a/none/events?wait=10ms", "", 404, "not_found"},
		{"POST", "/v1/sessions/a/none/reset", "", 404, "not_found"},
		{"POST", "/v1/sessions/a/none/compact", "", 404, "not_found"},
		{"POST", "/v1/sessions/a/none/compact", `{"focus":"x"}`, 404, "not_found"},
		{"POST", "/v1/sessions/a/none/cancel", "", 409, "no_turn"},
		{"POST", "/v1/sessions/a/none/close", "", 404, "not_found"},
		{"POST", "/v1/sessions/a/none/reopen", "", 404, "not_found"},
		{"GET", "/v1/sessions/a/none/working", "", 404, "not_found"},
		{"PUT", "/v1/sessions/a/none/working/k", `"v"`, 404, "not_found"},
		{"DELETE", "/v1/sessions/a/none/working/k", "", 404, "not_found"},
	} {
		checkError(t, e, c.method, c.path, c.body, c.status, c.code)
		if list, err := e.st.Sessions(t.Context(), store.SessionFilter{}); err != nil || len(list) != 0 {
			t.Fatalf("%s %s created a session: %+v, %v", c.method, c.path, list, err)
		}
	}
}

// fullStore fails every enqueue as a full disk does.
type fullStore struct{ store.Store }

func (fullStore) Enqueue(context.Context, store.InboxItem) (store.InboxItem, bool, error) {
	return store.InboxItem{}, false, fmt.Errorf("sqlite: commit: %w: database or disk is full at %s", store.ErrFull, secret)
}

// A full disk is a 503 storage_full that says when to send again, and
// shows nothing of the store's own message.
func TestStorageFull(t *testing.T) {
	e := newEnv(t, setup{wrap: func(st store.Store) store.Store { return fullStore{st} }})
	for _, path := range []string{"/v1/sessions/a/k/messages", "/v1/sessions/a/k/messages?wait=true", "/v1/sessions/a/k/messages?stream=true"} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.http.URL+path, strings.NewReader(`{"text":"x"}`))
		resp, err := e.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || !strings.Contains(string(b), `"code":"storage_full"`) || resp.Header.Get("Retry-After") == "" || showsInternals(string(b)) {
			t.Errorf("POST %s: %d %s (Retry-After %q)", path, resp.StatusCode, b, resp.Header.Get("Retry-After"))
		}
	}
}

// A query parameter whose values are a list refuses any other value with a
// 400 that names them, rather than answering as if it were absent.
func TestEnumeratedParameters(t *testing.T) {
	e := newEnv(t, setup{})
	for _, c := range []struct {
		method, path, body, want string
	}{
		{"GET", "/v1/sessions?state=bogus", "", strings.Join(store.States(), ", ")},
		{"POST", "/v1/sessions/a/k/messages?wait=yes", `{"text":"x"}`, "wait: want true or false"},
		{"POST", "/v1/sessions/a/k/messages?stream=on", `{"text":"x"}`, "stream: want true or false"},
	} {
		er := checkError(t, e, c.method, c.path, c.body, 400, "bad_request")
		if !strings.Contains(er.Error, c.want) {
			t.Errorf("%s %s: %q, want it to say %q", c.method, c.path, er.Error, c.want)
		}
	}
	if list, err := e.st.Sessions(t.Context(), store.SessionFilter{}); err != nil || len(list) != 0 {
		t.Errorf("a refused message made a session: %+v, %v", list, err)
	}
	for _, state := range store.States() {
		if status, _, b := e.do("GET", "/v1/sessions?state="+state, ""); status != 200 {
			t.Errorf("state=%s: %d %s", state, status, b)
		}
	}
}
