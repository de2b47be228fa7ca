package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

func TestParseAddress(t *testing.T) {
	long := "a/" + strings.Repeat("k", 510) // 512 bytes: the longest allowed
	tests := []struct {
		addr       string
		agent, key string
		ok         bool
	}{
		{"assistant/chat:alice", "assistant", "chat:alice", true},
		{"a/b", "a", "b", true},
		{"a/b c", "a", "b c", true},
		{"агент/ключ", "агент", "ключ", true},
		{"a/telegram:123:456", "a", "telegram:123:456", true},
		{long, "a", long[2:], true},
		{long + "k", "", "", false},
		{"", "", "", false},
		{"assistant", "", "", false},
		{"/key", "", "", false},
		{"assistant/", "", "", false},
		{"/", "", "", false},
		{"a/b/c", "", "", false},
		{"a//b", "", "", false},
		{"a/b\n", "", "", false},
		{"a\x00/b", "", "", false},
		{"a/b\x7f", "", "", false},
		{"a/\tb", "", "", false},
	}
	for _, tt := range tests {
		a, k, err := runtime.ParseAddress(tt.addr)
		if tt.ok {
			if err != nil || a != tt.agent || k != tt.key {
				t.Errorf("ParseAddress(%q) = %q, %q, %v; want %q, %q, nil", tt.addr, a, k, err, tt.agent, tt.key)
			}
			continue
		}
		if !errors.Is(err, runtime.ErrBadAddress) || a != "" || k != "" {
			t.Errorf("ParseAddress(%q) = %q, %q, %v; want ErrBadAddress", tt.addr, a, k, err)
		}
	}
}

func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"assistant/chat:alice", "a/b/c", "", "/", "a/\x00", "агент/ключ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		a, k, err := runtime.ParseAddress(addr)
		if err != nil {
			if !errors.Is(err, runtime.ErrBadAddress) {
				t.Fatalf("ParseAddress(%q): error %v is not ErrBadAddress", addr, err)
			}
			return
		}
		if a == "" || k == "" || strings.Contains(a, "/") || strings.Contains(k, "/") || a+"/"+k != addr {
			t.Fatalf("ParseAddress(%q) = %q, %q", addr, a, k)
		}
		if strings.ContainsFunc(addr, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("ParseAddress(%q) accepted a control character", addr)
		}
	})
}

func TestBadInputIsRefused(t *testing.T) {
	e := newEnv(t, setup{})
	tests := []struct {
		name string
		in   runtime.Input
		want error
	}{
		{"bad address", runtime.Input{Session: "a", Text: "hi"}, runtime.ErrBadAddress},
		{"unknown agent", runtime.Input{Session: "ghost/k", Text: "hi"}, runtime.ErrUnknownAgent},
		{"empty text", runtime.Input{Session: "a/k", Text: ""}, runtime.ErrEmptyInput},
		{"blank text", runtime.Input{Session: "a/k", Text: " \n\t"}, runtime.ErrEmptyInput},
	}
	ctx := t.Context()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := e.rt.Submit(ctx, tt.in); !errors.Is(err, tt.want) {
				t.Errorf("Submit: %v, want %v", err, tt.want)
			}
			if _, _, err := e.rt.Send(ctx, tt.in); !errors.Is(err, tt.want) {
				t.Errorf("Send: %v, want %v", err, tt.want)
			}
			called := false
			if _, _, err := e.rt.Stream(ctx, tt.in, func(event.Event) error { called = true; return nil }); !errors.Is(err, tt.want) {
				t.Errorf("Stream: %v, want %v", err, tt.want)
			}
			if called {
				t.Error("Stream called fn for a refused input")
			}
		})
	}
	if n := e.p.Calls(); n != 0 {
		t.Errorf("the model was called %d times for refused inputs", n)
	}
	// Nothing was created for the unknown agent.
	if _, err := e.st.SessionByAddress(ctx, "ghost", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session ghost/k: %v, want ErrNotFound", err)
	}
}

// conversation is the context a model should see after the
// given inputs were each answered by the default reply.
func conversation(inputs ...string) []model.Message {
	var out []model.Message
	for i, in := range inputs {
		out = append(out, model.Message{Role: model.RoleUser, Content: in})
		if i < len(inputs)-1 {
			out = append(out, model.Message{Role: model.RoleAssistant, Content: "re: " + in})
		}
	}
	return out
}

func TestSessionInputsRunInOrderOneAtATime(t *testing.T) {
	e := newEnv(t, setup{})
	g := e.p.Gate("a:1")
	var rcs []runtime.Receipt
	rcs = append(rcs, e.submit("a/k", "a:1"))
	recv(t, "first turn to reach the model", g.Entered)
	for i := 2; i <= 6; i++ {
		rcs = append(rcs, e.submit("a/k", fmt.Sprintf("a:%d", i)))
	}
	// While the first turn is held nothing else of the session may start.
	if n := e.p.Calls(); n != 1 {
		t.Fatalf("model calls while the first turn runs: %d, want 1", n)
	}
	g.Open()
	var inputs []string
	for i, rc := range rcs {
		end := e.wait(rc.Turn)
		text := fmt.Sprintf("a:%d", i+1)
		inputs = append(inputs, text)
		if end.Status != event.StatusDone || end.Reply != "re: "+text {
			t.Errorf("turn %d ended %+v", rc.Turn, end)
		}
		reqs := e.p.Requests(text)
		if len(reqs) != 1 {
			t.Fatalf("%d model calls for %s, want 1", len(reqs), text)
		}
		if diff := cmp.Diff(conversation(inputs...), reqs[0].Messages); diff != "" {
			t.Errorf("context of %s (-want +got):\n%s", text, diff)
		}
	}
	if got := e.p.MaxOf("a"); got != 1 {
		t.Errorf("at most %d turns of one session ran at once, want 1", got)
	}
	// The log holds the turns one after another, never interleaved.
	var turns []int64
	for _, ev := range e.events(rcs[0].SessionID) {
		if len(turns) == 0 || turns[len(turns)-1] != ev.Turn {
			turns = append(turns, ev.Turn)
		}
	}
	var want []int64
	for _, rc := range rcs {
		want = append(want, rc.Turn)
	}
	if diff := cmp.Diff(want, turns); diff != "" {
		t.Errorf("turns in the log (-want +got):\n%s", diff)
	}
}

func TestSessionsRunInParallelUnderTheCap(t *testing.T) {
	const sessions, limit = 6, 2
	p := testkit.NewModel()
	p.Hold = make(chan struct{})
	e := newEnv(t, setup{p: p, maxTurns: limit})
	var rcs []runtime.Receipt
	for i := range sessions {
		rcs = append(rcs, e.submit(fmt.Sprintf("a/k%d", i), fmt.Sprintf("k%d:hello", i)))
	}
	active := p.Active
	// Two sessions reach the model together (they run in parallel); once
	// every worker is blocked, no more than the cap are in the model.
	eventually(t, "the cap's worth of turns in the model", func() bool { return active() == limit })
	eventually(t, "every session worker to block", func() bool {
		s := workerStates()
		return len(s) == sessions && parked(s)
	})
	if n := active(); n != limit {
		t.Fatalf("%d turns in the model at once, want %d", n, limit)
	}
	for range sessions {
		p.Hold <- struct{}{}
	}
	for _, rc := range rcs {
		if end := e.wait(rc.Turn); end.Status != event.StatusDone {
			t.Errorf("turn %d: %+v", rc.Turn, end)
		}
	}
	if p.MaxOf("") != limit {
		t.Errorf("at most %d turns ran at once, want %d", p.MaxOf(""), limit)
	}
}

func TestWorkerExistsOnlyWhileSessionHasWork(t *testing.T) {
	e := newEnv(t, setup{})
	if n := workers(); n != 0 {
		t.Fatalf("%d session workers before any input", n)
	}
	g := e.p.Gate("a:1")
	rc := e.submit("a/k", "a:1")
	recv(t, "the turn to reach the model", g.Entered)
	if n := workers(); n != 1 {
		t.Errorf("%d session workers while one session works, want 1", n)
	}
	g.Open()
	e.wait(rc.Turn)
	eventually(t, "the worker to retire", func() bool { return workers() == 0 })

	// Many sessions, each with several inputs: every worker retires.
	var rcs []runtime.Receipt
	for i := range 8 {
		for j := range 3 {
			rcs = append(rcs, e.submit(fmt.Sprintf("b/k%d", i), fmt.Sprintf("k%d:%d", i, j)))
		}
	}
	for _, rc := range rcs {
		e.wait(rc.Turn)
	}
	eventually(t, "every worker to retire", func() bool { return workers() == 0 })
	// A retired session takes new work.
	rc = e.submit("a/k", "a:2")
	if end := e.wait(rc.Turn); end.Reply != "re: a:2" {
		t.Errorf("after retiring: %+v", end)
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	in := runtime.Input{Session: "a/k", Text: "a:1", Source: "telegram", IdempotencyKey: "update-1"}
	rc1, err := e.rt.Submit(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	rc2, err := e.rt.Submit(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if rc1.Duplicate || !rc2.Duplicate || rc2.Turn != rc1.Turn || rc2.SessionID != rc1.SessionID {
		t.Errorf("receipts %+v then %+v: want the second a duplicate of the first", rc1, rc2)
	}
	end1 := e.wait(rc1.Turn)
	// Send with the same key returns the original's result without a turn.
	rc3, end3, err := e.rt.Send(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !rc3.Duplicate || rc3.Turn != rc1.Turn {
		t.Errorf("Send receipt %+v, want a duplicate of turn %d", rc3, rc1.Turn)
	}
	if diff := cmp.Diff(end1, end3); diff != "" {
		t.Errorf("duplicate Send result (-original +duplicate):\n%s", diff)
	}
	if n := len(e.p.Requests("a:1")); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	var ends int
	for _, ev := range e.events(rc1.SessionID) {
		if ev.Kind == event.TurnEnd {
			ends++
		}
		if ev.Kind == event.Input {
			if d := decode[event.InputData](t, ev); d.IdempotencyKey != "update-1" {
				t.Errorf("input logged with idempotency key %q", d.IdempotencyKey)
			}
		}
	}
	if ends != 1 {
		t.Errorf("%d turn ends, want 1", ends)
	}

	// A duplicate of a turn still running waits for its result.
	g := e.p.Gate("a:2")
	in2 := runtime.Input{Session: "a/k", Text: "a:2", IdempotencyKey: "update-2"}
	type result struct {
		rc  runtime.Receipt
		end event.TurnEndData
		err error
	}
	first := make(chan result, 1)
	go func() {
		rc, end, err := e.rt.Send(ctx, in2)
		first <- result{rc, end, err}
	}()
	recv(t, "the original turn to reach the model", g.Entered)
	dup := make(chan result, 1)
	go func() {
		rc, end, err := e.rt.Send(ctx, in2)
		dup <- result{rc, end, err}
	}()
	g.Open()
	r1, r2 := recv(t, "the original", first), recv(t, "the duplicate", dup)
	if r1.err != nil || r2.err != nil {
		t.Fatalf("Send: %v, %v", r1.err, r2.err)
	}
	if !r2.rc.Duplicate || r2.rc.Turn != r1.rc.Turn || r2.end.Reply != "re: a:2" {
		t.Errorf("duplicate of a running turn: %+v %+v", r2.rc, r2.end)
	}
	if diff := cmp.Diff(r1.end, r2.end); diff != "" {
		t.Errorf("duplicate Send result (-original +duplicate):\n%s", diff)
	}

	// The key holds across a restart.
	e.close()
	e2 := newEnv(t, setup{path: e.path})
	rc4, err := e2.rt.Submit(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !rc4.Duplicate || rc4.Turn != rc1.Turn {
		t.Errorf("after a restart: %+v, want a duplicate of turn %d", rc4, rc1.Turn)
	}
	if e2.p.Calls() != 0 {
		t.Error("a duplicate after a restart called the model")
	}
}

func TestMidTurnMessageQueuesByDefault(t *testing.T) {
	e := newEnv(t, setup{})
	g := e.p.Gate("a:1")
	rc1 := e.submit("a/k", "a:1")
	recv(t, "the first turn to reach the model", g.Entered)
	rc2 := e.submit("a/k", "a:2")
	if err := g.Ctx().Err(); err != nil {
		t.Errorf("a queued message cancelled the running turn: %v", err)
	}
	g.Open()
	if end := e.wait(rc1.Turn); end.Status != event.StatusDone || end.Reply != "re: a:1" {
		t.Errorf("running turn: %+v, want done", end)
	}
	if end := e.wait(rc2.Turn); end.Status != event.StatusDone {
		t.Errorf("queued turn: %+v", end)
	}
	if diff := cmp.Diff(conversation("a:1", "a:2"), e.p.Requests("a:2")[0].Messages); diff != "" {
		t.Errorf("context of the queued turn (-want +got):\n%s", diff)
	}
}

func TestMidTurnMessageInterrupts(t *testing.T) {
	e := newEnv(t, setup{})
	g := e.p.Gate("i:1")
	rc1 := e.submit("i/k", "i:1")
	recv(t, "the first turn to reach the model", g.Entered)
	// A silent message does not interrupt.
	silent, err := e.rt.Submit(t.Context(), runtime.Input{Session: "i/k", Text: "i:note", Silent: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Ctx().Err(); err != nil {
		t.Errorf("a silent message interrupted the running turn: %v", err)
	}
	rc2 := e.submit("i/k", "i:2")
	if cause := context.Cause(g.Ctx()); !errors.Is(cause, engine.ErrInterrupted) {
		t.Errorf("the running turn's cause after a new message: %v, want ErrInterrupted", cause)
	}
	end := e.wait(rc1.Turn)
	if end.Status != event.StatusInterrupted {
		t.Errorf("running turn: %+v, want interrupted", end)
	}
	evs := e.turnEvents(rc1.SessionID, rc1.Turn)
	if last := evs[len(evs)-1]; last.Kind != event.TurnEnd || decode[event.TurnEndData](t, last).Status != event.StatusInterrupted {
		t.Errorf("last event of the interrupted turn: %s %s", last.Kind, last.Data)
	}
	e.wait(silent.Turn)
	if end := e.wait(rc2.Turn); end.Status != event.StatusDone || end.Reply != "re: i:2" {
		t.Errorf("interrupting turn: %+v", end)
	}
	want := []model.Message{
		{Role: model.RoleUser, Content: "i:1"},
		{Role: model.RoleUser, Content: "<system_message>i:note</system_message>"},
		{Role: model.RoleUser, Content: "i:2"},
	}
	if diff := cmp.Diff(want, e.p.Requests("i:2")[0].Messages); diff != "" {
		t.Errorf("context of the interrupting turn (-want +got):\n%s", diff)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	if err := e.rt.Cancel(ctx, "a/k"); !errors.Is(err, runtime.ErrNoTurn) {
		t.Errorf("Cancel with no turn: %v, want ErrNoTurn", err)
	}
	if err := e.rt.Cancel(ctx, "a/k/x"); !errors.Is(err, runtime.ErrBadAddress) {
		t.Errorf("Cancel of a bad address: %v, want ErrBadAddress", err)
	}
	g := e.p.Gate("a:1")
	rc1 := e.submit("a/k", "a:1")
	recv(t, "the turn to reach the model", g.Entered)
	rc2 := e.submit("a/k", "a:2")
	if err := e.rt.Cancel(ctx, "a/k"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if end := e.wait(rc1.Turn); end.Status != event.StatusCancelled {
		t.Errorf("cancelled turn: %+v", end)
	}
	// Queued inputs still run.
	if end := e.wait(rc2.Turn); end.Status != event.StatusDone {
		t.Errorf("queued turn: %+v", end)
	}
	if err := e.rt.Cancel(ctx, "a/k"); !errors.Is(err, runtime.ErrNoTurn) {
		t.Errorf("Cancel after the turns: %v, want ErrNoTurn", err)
	}
}

// A cancel that lands after a tool finished, while its result is being
// logged, must keep the tool's real result: the tool ran and agentd did not
// restart.
func TestCancelWhileToolResultIsLogged(t *testing.T) {
	var launched atomic.Int32
	launch := countingTool("launch", false, &launched, "launched")
	hooked, proceed := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(ctx context.Context, b *store.Batch) {
		if slices.ContainsFunc(b.Events, func(e event.Event) bool { return e.Kind == event.ToolResult }) {
			once.Do(func() {
				close(hooked)
				<-proceed
			})
		}
	}
	p := testkit.NewModel()
	p.Respond = callOnce("launch", "a:1")
	e := newEnv(t, setup{p: p, hook: hook, tools: []tool.Tool{launch}})
	rc := e.submit("a/k", "a:1")
	recv(t, "the tool result to be logged", hooked)
	if err := e.rt.Cancel(t.Context(), "a/k"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	close(proceed)
	end := e.wait(rc.Turn)
	if end.Status != event.StatusCancelled {
		t.Errorf("turn ended %+v, want cancelled", end)
	}
	if n := launched.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	for _, ev := range e.turnEvents(rc.SessionID, rc.Turn) {
		if ev.Kind == event.ToolResult {
			want := event.ToolResultData{ID: "c1", Name: "launch", Output: "launched"}
			got := decode[event.ToolResultData](t, ev)
			got.DurationMS = 0
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tool result (-want +got):\n%s", diff)
			}
		}
	}
}

// Cancel of a session that does not exist must not create it.
func TestCancelCreatesNoSession(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	if err := e.rt.Cancel(ctx, "a/never-used"); !errors.Is(err, runtime.ErrNoTurn) {
		t.Errorf("Cancel: %v, want ErrNoTurn", err)
	}
	if err := e.rt.Cancel(ctx, "ghost/k"); !errors.Is(err, runtime.ErrUnknownAgent) {
		t.Errorf("Cancel for an unknown agent: %v, want ErrUnknownAgent", err)
	}
	list, err := e.st.Sessions(ctx, store.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Errorf("Cancel created sessions: %+v", list)
	}
}

func TestSilentSystemMessage(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	note := runtime.Input{Session: "a/k", Text: "nightly report ready", Source: "cron", System: true, Silent: true, Origin: "job:nightly"}
	rc, err := e.rt.Submit(ctx, note)
	if err != nil {
		t.Fatal(err)
	}
	if end := e.wait(rc.Turn); end.Status != event.StatusDone {
		t.Errorf("silent message: %+v", end)
	}
	if n := e.p.Calls(); n != 0 {
		t.Fatalf("a silent message called the model %d times", n)
	}
	evs := e.events(rc.SessionID)
	if diff := cmp.Diff([]event.Kind{event.SystemMessage}, kinds(evs)); diff != "" {
		t.Fatalf("log after a silent message (-want +got):\n%s", diff)
	}
	want := event.InputData{Text: "nightly report ready", Source: "cron", Origin: "job:nightly", Silent: true}
	if diff := cmp.Diff(want, decode[event.InputData](t, evs[0])); diff != "" {
		t.Errorf("system message (-want +got):\n%s", diff)
	}
	if evs[0].Turn != rc.Turn {
		t.Errorf("system message logged for turn %d, want %d", evs[0].Turn, rc.Turn)
	}
	wrapped := `<system_message origin="job:nightly">nightly report ready</system_message>`

	// The next turn sees it (context read from the store).
	rc1, end, err := e.rt.Send(ctx, runtime.Input{Session: "a/k", Text: "a:1"})
	if err != nil || end.Status != event.StatusDone {
		t.Fatalf("Send: %+v, %v", end, err)
	}
	wantMsgs := []model.Message{{Role: model.RoleUser, Content: wrapped}, {Role: model.RoleUser, Content: "a:1"}}
	if diff := cmp.Diff(wantMsgs, e.p.Requests("a:1")[0].Messages); diff != "" {
		t.Errorf("context after a silent message (-want +got):\n%s", diff)
	}

	// And with the session's context already in memory.
	note.Text = "second note"
	rc2, err := e.rt.Submit(ctx, note)
	if err != nil {
		t.Fatal(err)
	}
	e.wait(rc2.Turn)
	if _, _, err := e.rt.Send(ctx, runtime.Input{Session: "a/k", Text: "a:2"}); err != nil {
		t.Fatal(err)
	}
	wantMsgs = append(wantMsgs,
		model.Message{Role: model.RoleAssistant, Content: "re: a:1"},
		model.Message{Role: model.RoleUser, Content: `<system_message origin="job:nightly">second note</system_message>`},
		model.Message{Role: model.RoleUser, Content: "a:2"})
	if diff := cmp.Diff(wantMsgs, e.p.Requests("a:2")[0].Messages); diff != "" {
		t.Errorf("context after a second silent message (-want +got):\n%s", diff)
	}
	if n := e.p.Calls(); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
	// Silent messages end without a turn_end.
	for _, ev := range e.events(rc1.SessionID) {
		if ev.Kind == event.TurnEnd && (ev.Turn == rc.Turn || ev.Turn == rc2.Turn) {
			t.Errorf("silent message %d has a turn_end", ev.Turn)
		}
	}
}

func TestReset(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	g := e.p.Gate("a:1")
	rc1 := e.submit("a/k", "a:1")
	recv(t, "the turn to reach the model", g.Entered)
	// Reset comes after whatever is queued: it waits for the running turn.
	type result struct {
		rc  runtime.Receipt
		err error
	}
	done := make(chan result, 1)
	go func() {
		rc, err := e.rt.Reset(ctx, "a/k", "fresh start")
		done <- result{rc, err}
	}()
	g.Open()
	r := recv(t, "Reset", done)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.rc.SessionID != rc1.SessionID {
		t.Errorf("reset session id %d, want %d", r.rc.SessionID, rc1.SessionID)
	}
	evs := e.events(rc1.SessionID)
	last := evs[len(evs)-1]
	if last.Kind != event.Reset || last.Turn != r.rc.Turn {
		t.Fatalf("last event %s of turn %d, want the reset of turn %d", last.Kind, last.Turn, r.rc.Turn)
	}
	if d := decode[event.MarkerData](t, last); d != (event.MarkerData{Name: "reset", Reason: "fresh start"}) {
		t.Errorf("reset marker %+v", d)
	}
	if evs[len(evs)-2].Kind != event.TurnEnd {
		t.Errorf("the reset does not follow the running turn's end: %v", kinds(evs))
	}

	rc2, _, err := e.rt.Send(ctx, runtime.Input{Session: "a/k", Text: "a:2"})
	if err != nil {
		t.Fatal(err)
	}
	if rc2.SessionID != rc1.SessionID {
		t.Errorf("session id after reset %d, want %d", rc2.SessionID, rc1.SessionID)
	}
	if diff := cmp.Diff(conversation("a:2"), e.p.Requests("a:2")[0].Messages); diff != "" {
		t.Errorf("context after reset (-want +got):\n%s", diff)
	}

	// A new process derives the same context from the store.
	e.close()
	e2 := newEnv(t, setup{path: e.path})
	rc3, _, err := e2.rt.Send(ctx, runtime.Input{Session: "a/k", Text: "a:3"})
	if err != nil {
		t.Fatal(err)
	}
	if rc3.SessionID != rc1.SessionID {
		t.Errorf("session id after restart %d, want %d", rc3.SessionID, rc1.SessionID)
	}
	if diff := cmp.Diff(conversation("a:2", "a:3"), e2.p.Requests("a:3")[0].Messages); diff != "" {
		t.Errorf("context after reset and restart (-want +got):\n%s", diff)
	}
	if _, err := e2.rt.Reset(ctx, "a", ""); !errors.Is(err, runtime.ErrBadAddress) {
		t.Errorf("Reset of a bad address: %v", err)
	}
}

// ResetOnce and CompactOnce with a key already used (a chat platform's
// message delivered again after a restart) do nothing again: the
// duplicate's receipt names the first one's turn.
func TestControlOnce(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	rc1, _, err := e.rt.Send(ctx, runtime.Input{Session: "a/k", Text: "a:1"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.rt.ResetOnce(ctx, "a/k", "from a chat", "m-1")
	if err != nil || first.Duplicate {
		t.Fatalf("ResetOnce: %+v, %v", first, err)
	}
	cfirst, _, err := e.rt.CompactOnce(ctx, "a/k", "", "m-2")
	if err != nil || cfirst.Duplicate {
		t.Fatalf("CompactOnce: %+v, %v", cfirst, err)
	}
	n := len(e.events(rc1.SessionID))
	e.close()
	e2 := newEnv(t, setup{path: e.path})
	again, err := e2.rt.ResetOnce(ctx, "a/k", "from a chat", "m-1")
	if err != nil || !again.Duplicate || again.Turn != first.Turn {
		t.Errorf("ResetOnce again: %+v, %v; want a duplicate of turn %d", again, err, first.Turn)
	}
	cagain, _, err := e2.rt.CompactOnce(ctx, "a/k", "", "m-2")
	if err != nil || !cagain.Duplicate || cagain.Turn != cfirst.Turn {
		t.Errorf("CompactOnce again: %+v, %v; want a duplicate of turn %d", cagain, err, cfirst.Turn)
	}
	if evs := e2.events(rc1.SessionID); len(evs) != n {
		t.Errorf("the session's log grew from %d to %d events: %v", n, len(evs), kinds(evs))
	}
}

// Reset names a session of an agent; an agent that does not exist has none.
func TestResetUnknownAgent(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	if _, err := e.rt.Reset(ctx, "ghost/k", ""); !errors.Is(err, runtime.ErrUnknownAgent) {
		t.Errorf("Reset ghost/k: %v, want ErrUnknownAgent", err)
	}
	if _, err := e.st.SessionByAddress(ctx, "ghost", "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Reset created a session for an unknown agent (lookup: %v)", err)
	}
}

func TestEvents(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	if _, _, err := e.rt.Events(ctx, "a/none", 0, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Events of a missing session: %v, want ErrNotFound", err)
	}
	if _, _, err := e.rt.Events(ctx, "a", 0, 0); !errors.Is(err, runtime.ErrBadAddress) {
		t.Errorf("Events of a bad address: %v, want ErrBadAddress", err)
	}
	rc, _, err := e.rt.Send(ctx, runtime.Input{Session: "a/k", Text: "a:1"})
	if err != nil {
		t.Fatal(err)
	}
	all := e.events(rc.SessionID)
	s, page, err := e.rt.Events(ctx, "a/k", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != rc.SessionID || s.Address() != "a/k" || s.State != store.StateIdle {
		t.Errorf("session %+v", s)
	}
	if diff := cmp.Diff(all[1:3], page); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
}

// sessionHook is a store whose Enqueue calls before first.
type sessionHook struct {
	store.Store
	before func(store.InboxItem)
}

func (s *sessionHook) Enqueue(ctx context.Context, it store.InboxItem) (store.InboxItem, bool, error) {
	s.before(it)
	return s.Store.Enqueue(ctx, it)
}

// A session dropped from the in-memory cache while an input for it is being
// accepted must still run its inputs one at a time, in one worker.
func TestCacheEvictionKeepsOneWorkerPerSession(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	wrap := func(st store.Store) store.Store {
		return &sessionHook{Store: st, before: func(it store.InboxItem) {
			if it.Text == "a:1" {
				close(entered)
				<-release
			}
		}}
	}
	e := newEnv(t, setup{wrap: wrap, cache: 1})
	g := e.p.Gate("a:1")
	errc := make(chan error, 1)
	var rc1 runtime.Receipt
	go func() {
		var err error
		rc1, err = e.rt.Submit(t.Context(), runtime.Input{Session: "a/k", Text: "a:1"})
		errc <- err
	}()
	recv(t, "a:1 to be accepted", entered)
	// Another session pushes a/k out of the cache meanwhile.
	rcb := e.submit("b/k", "b:1")
	e.wait(rcb.Turn)
	close(release)
	if err := recv(t, "Submit a:1", errc); err != nil {
		t.Fatal(err)
	}
	recv(t, "a:1 to reach the model", g.Entered)
	eventually(t, "b/k's worker to retire", func() bool { return workers() == 1 })
	rc2 := e.submit("a/k", "a:2")
	if n := workers(); n != 1 {
		t.Errorf("%d workers for one session", n)
	}
	g.Open()
	e.wait(rc1.Turn)
	e.wait(rc2.Turn)
	if diff := cmp.Diff(conversation("a:1", "a:2"), e.p.Requests("a:2")[0].Messages); diff != "" {
		t.Errorf("context of a:2 (-want +got):\n%s", diff)
	}
	if got := e.p.MaxOf("a"); got != 1 {
		t.Errorf("%d turns of a/k ran at once", got)
	}
}

// The cached conversations stay within their byte budget; a session whose
// conversation was dropped reloads it from the log with the same content.
func TestConversationCacheBudget(t *testing.T) {
	const budget = 2000
	e := newEnv(t, setup{cacheBytes: budget})
	for round := 1; round <= 3; round++ {
		for s := 0; s < 5; s++ {
			addr := fmt.Sprintf("a/s%d", s)
			e.wait(e.submit(addr, fmt.Sprintf("a:%d-%d", s, round)).Turn)
			if got := e.rt.CachedBytes(); got > budget {
				t.Fatalf("cache holds %d bytes, budget %d", got, budget)
			}
		}
	}
	// Every session's last turn saw its whole conversation, whether it came
	// from the cache or was reloaded from the log.
	for s := 0; s < 5; s++ {
		want := conversation(fmt.Sprintf("a:%d-1", s), fmt.Sprintf("a:%d-2", s), fmt.Sprintf("a:%d-3", s))
		got := e.p.Requests(fmt.Sprintf("a:%d-3", s))[0].Messages
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("session %d context (-want +got):\n%s", s, diff)
		}
	}
}

// Reset, compact, close and reopen name a session that exists: for one
// that does not they answer ErrNoSession (a store.ErrNotFound) and create
// nothing.
func TestSessionCommandsNeedTheSession(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"reset", func() error { _, err := e.rt.Reset(ctx, "a/none", ""); return err }},
		{"compact", func() error { _, _, err := e.rt.Compact(ctx, "a/none", ""); return err }},
		{"close", func() error { return e.rt.CloseSession(ctx, "a/none") }},
		{"reopen", func() error { _, err := e.rt.Reopen(ctx, "a/none"); return err }},
	} {
		if err := op.do(); !errors.Is(err, runtime.ErrNoSession) || !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of a session that does not exist: %v, want ErrNoSession", op.name, err)
		}
		if list, err := e.st.Sessions(ctx, store.SessionFilter{}); err != nil || len(list) != 0 {
			t.Fatalf("%s created a session: %+v, %v", op.name, list, err)
		}
	}
}

// A closed session refuses input until it is reopened, by Reopen or by an
// input that asks for it; its context continues where it stopped.
func TestReopen(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	if _, _, err := e.rt.Send(ctx, runtime.Input{Session: "a/k", Text: "a:1"}); err != nil {
		t.Fatal(err)
	}
	if reopened, err := e.rt.Reopen(ctx, "a/k"); err != nil || reopened {
		t.Errorf("Reopen of an open session: %v, %v; want false, nil", reopened, err)
	}
	for i, reopen := range []func() error{
		func() error { _, err := e.rt.Reopen(ctx, "a/k"); return err },
		func() error { return nil }, // the input reopens it
	} {
		// The worker of the turn that just ended may not have exited yet.
		eventually(t, "the session to close", func() bool {
			err := e.rt.CloseSession(ctx, "a/k")
			if err != nil && !errors.Is(err, runtime.ErrBusy) {
				t.Fatal(err)
			}
			return err == nil
		})
		if _, err := e.rt.Submit(ctx, runtime.Input{Session: "a/k", Text: "refused"}); !errors.Is(err, runtime.ErrSessionClosed) {
			t.Fatalf("input to a closed session: %v", err)
		}
		if err := reopen(); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("a:%d", i+2)
		if _, end, err := e.rt.Send(ctx, runtime.Input{Session: "a/k", Text: text, Reopen: true}); err != nil || end.Status != event.StatusDone {
			t.Fatalf("input after reopening: %+v, %v", end, err)
		}
		want := []string{"a:1"}
		for j := range i + 1 {
			want = append(want, fmt.Sprintf("a:%d", j+2))
		}
		if diff := cmp.Diff(conversation(want...), e.p.Requests(text)[0].Messages); diff != "" {
			t.Errorf("context after reopening (-want +got):\n%s", diff)
		}
	}
	s, err := e.st.SessionByAddress(ctx, "a", "k")
	if err != nil || s.State != store.StateIdle {
		t.Fatalf("session %+v, %v", s, err)
	}
	var marks []string
	for _, ev := range e.events(s.ID) {
		if ev.Kind == event.Marker {
			marks = append(marks, decode[event.MarkerData](t, ev).Name)
		}
	}
	if want := []string{"closed", "reopened", "closed", "reopened"}; !slices.Equal(marks, want) {
		t.Errorf("markers %v, want %v", marks, want)
	}
}

// The sessions held in memory are bounded: after a burst of sessions busy
// at once (which stay while busy), the idle ones beyond the cache's bound
// go, and the session maps are made again at their new size rather than
// keeping the room of the burst.
func TestSessionsHeldAfterBurst(t *testing.T) {
	p := testkit.NewModel()
	p.Hold = make(chan struct{})
	const cache, burst = 10, 60
	e := newEnv(t, setup{p: p, cache: cache})
	var turns []int64
	for i := range burst {
		turns = append(turns, e.submit(fmt.Sprintf("a/burst%d", i), "burst").Turn)
	}
	for range burst {
		p.Hold <- struct{}{}
	}
	for _, turn := range turns {
		e.wait(turn)
	}
	if held, peak := runtime.SessionsHeld(e.rt); held != burst || peak != burst {
		t.Fatalf("during the burst: %d sessions held, peak %d; want %d", held, peak, burst)
	}
	close(p.Hold) // later calls go on at once
	e.wait(e.submit("a/after", "after").Turn)
	if held, peak := runtime.SessionsHeld(e.rt); held > cache+1 || peak > cache+1 {
		t.Errorf("after the burst: %d sessions held, maps sized for %d; want at most %d", held, peak, cache+1)
	}
}

// A session unused for longer than the cache's idle time is dropped (its
// context reloaded from the log if it is used again), however few the
// cache holds: what stays in memory follows what is in use.
func TestIdleSessionsDropped(t *testing.T) {
	for _, c := range []struct {
		idle time.Duration
		held int
	}{{0, 3}, {time.Nanosecond, 1}} {
		e := newEnv(t, setup{cacheIdle: c.idle})
		for _, addr := range []string{"a/one", "a/two", "a/three"} {
			e.wait(e.submit(addr, "hello").Turn)
		}
		if held, _ := runtime.SessionsHeld(e.rt); held != c.held {
			t.Errorf("idle time %v: %d sessions held, want %d", c.idle, held, c.held)
		}
		if got := e.wait(e.submit("a/one", "again").Turn); got.Status != "done" {
			t.Errorf("idle time %v: a dropped session's next turn: %+v", c.idle, got)
		}
	}
}

// A session's reset and its close are told to Cleared, once each, after
// they are durable; a turn is not.
func TestClearedOnResetAndClose(t *testing.T) {
	var mu sync.Mutex
	var cleared []string
	e := newEnv(t, setup{opts: func(o *runtime.Options) {
		o.Cleared = func(s store.Session) {
			mu.Lock()
			defer mu.Unlock()
			cleared = append(cleared, s.Address())
		}
	}})
	ctx := t.Context()
	if _, _, err := e.rt.Send(ctx, runtime.Input{Session: "a/k", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.Reset(ctx, "a/k", "fresh start"); err != nil {
		t.Fatal(err)
	}
	if err := e.rt.CloseSession(ctx, "a/k"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"a/k", "a/k"}, cleared); diff != "" {
		t.Errorf("cleared (-want +got):\n%s", diff)
	}
}
