package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

// crashed is the state a killed process left in a store: a turn whose tool
// call was logged but has no result, and an input accepted after it that
// never started.
type crashed struct {
	session      int64
	turn, next   int64
	silent, rset int64
}

// leaveCrashed writes that state by hand, the way agentd would have.
func leaveCrashed(t *testing.T, path, toolName string) crashed {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, _, err := st.Session(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	enqueue := func(it store.InboxItem) int64 {
		it.Session = s.ID
		got, _, err := st.Enqueue(ctx, it)
		if err != nil {
			t.Fatal(err)
		}
		return got.ID
	}
	var c crashed
	c.session = s.ID
	c.turn = enqueue(store.InboxItem{Kind: event.Input, Text: "a:go", Source: "test"})
	c.silent = enqueue(store.InboxItem{Kind: event.SystemMessage, Text: "a:note", Silent: true, Source: "test"})
	c.rset = enqueue(store.InboxItem{Kind: event.Reset, Text: "later", Source: "reset"})
	c.next = enqueue(store.InboxItem{Kind: event.Input, Text: "a:then", Source: "test"})
	err = st.Commit(ctx, &store.Batch{Session: s.ID, State: store.StateActive, Events: []event.Event{
		event.New(s.ID, c.turn, event.Input, event.InputData{Text: "a:go", Source: "test"}),
		event.New(s.ID, c.turn, event.ModelCall, event.ModelCallData{Provider: "test", Model: "m", Step: 1, Attempt: 1, InputTokens: 3, OutputTokens: 1}),
		event.New(s.ID, c.turn, event.ToolCall, event.ToolCallData{ID: "c1", Name: toolName, Args: json.RawMessage(`{}`), Step: 1}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recordingTool counts its calls and records their ids.
type recordingTool struct {
	spec tool.Spec
	mu   sync.Mutex
	ids  []string
}

func (r *recordingTool) Spec() tool.Spec { return r.spec }

func (r *recordingTool) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	r.mu.Lock()
	r.ids = append(r.ids, c.ID)
	r.mu.Unlock()
	return tool.Result{Output: "ran " + r.spec.Name}, nil
}

func TestRecoverUnfinishedTurn(t *testing.T) {
	tests := []struct {
		name    string
		spec    tool.Spec
		result  event.ToolResultData
		runs    int
		message model.Message
	}{
		{
			name:    "non-idempotent tool is not run again",
			spec:    tool.Spec{Name: "launch", Description: "launches"},
			result:  event.ToolResultData{ID: "c1", Name: "launch", Output: engine.InterruptedOutput, IsError: true, Interrupted: true},
			message: model.Message{Role: model.RoleTool, Content: engine.InterruptedOutput, ToolCallID: "c1", ToolName: "launch", IsError: true},
		},
		{
			name:    "read-only tool is run again",
			spec:    tool.Spec{Name: "lookup", Description: "looks up", ReadOnly: true},
			result:  event.ToolResultData{ID: "c1", Name: "lookup", Output: "ran lookup"},
			runs:    1,
			message: model.Message{Role: model.RoleTool, Content: "ran lookup", ToolCallID: "c1", ToolName: "lookup"},
		},
		{
			name:    "idempotent tool is run again",
			spec:    tool.Spec{Name: "upsert", Description: "upserts", Idempotent: true},
			result:  event.ToolResultData{ID: "c1", Name: "upsert", Output: "ran upsert"},
			runs:    1,
			message: model.Message{Role: model.RoleTool, Content: "ran upsert", ToolCallID: "c1", ToolName: "upsert"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.db")
			c := leaveCrashed(t, path, tt.spec.Name)
			tl := &recordingTool{spec: tt.spec}
			p := testkit.NewModel()
			p.Respond = callOnce(tt.spec.Name, "a:go")
			e := newEnv(t, setup{path: path, p: p, tools: []tool.Tool{tl}})
			if n := e.start(); n != 1 {
				t.Errorf("Start resumed %d sessions, want 1", n)
			}
			end := e.wait(c.turn)
			if end.Status != event.StatusDone || end.Reply != "after: "+tt.result.Output {
				t.Errorf("resumed turn ended %+v", end)
			}
			// Usage logged before the crash counts.
			if end.Steps != 2 || end.InputTokens != 8 || end.OutputTokens != 3 {
				t.Errorf("resumed turn counted %d steps, %d/%d tokens; want 2, 8/3", end.Steps, end.InputTokens, end.OutputTokens)
			}
			if e.wait(c.next).Status != event.StatusDone {
				t.Error("the input queued behind the resumed turn did not run")
			}

			var wantIDs []string
			if tt.runs == 1 {
				wantIDs = []string{fmt.Sprintf("%d.c1", c.turn)} // the tool_call id is the idempotency key
			}
			if diff := cmp.Diff(wantIDs, tl.ids); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}

			evs := e.turnEvents(c.session, c.turn)
			want := []event.Kind{event.Input, event.ModelCall, event.ToolCall, event.Marker, event.ToolResult, event.ModelCall, event.Text, event.TurnEnd}
			if diff := cmp.Diff(want, kinds(evs)); diff != "" {
				t.Fatalf("events of the resumed turn (-want +got):\n%s", diff)
			}
			if m := decode[event.MarkerData](t, evs[3]); m.Name != engine.ResumedMarker {
				t.Errorf("marker %+v, want %s", m, engine.ResumedMarker)
			}
			res := decode[event.ToolResultData](t, evs[4])
			res.DurationMS = 0
			if diff := cmp.Diff(tt.result, res); diff != "" {
				t.Errorf("tool result (-want +got):\n%s", diff)
			}

			// The model saw the resumed conversation with the call answered.
			reqs := e.p.Requests("a:go")
			if len(reqs) != 1 {
				t.Fatalf("%d model calls for the resumed turn, want 1", len(reqs))
			}
			wantMsgs := []model.Message{
				{Role: model.RoleUser, Content: "a:go"},
				{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: tt.spec.Name, Args: json.RawMessage(`{}`)}}},
				tt.message,
			}
			if diff := cmp.Diff(wantMsgs, reqs[0].Messages); diff != "" {
				t.Errorf("resumed context (-want +got):\n%s", diff)
			}
			// The silent message and the reset ran in order between the
			// turns; the next turn's context starts after the reset.
			if diff := cmp.Diff(conversation("a:then"), e.p.Requests("a:then")[0].Messages); diff != "" {
				t.Errorf("context after the recovered reset (-want +got):\n%s", diff)
			}
			checkEndedOnce(t, e, c.session)
		})
	}
}

// checkEndedOnce checks that the session has no pending item and that
// every item ended exactly once: one turn_end per turn, one event for a
// silent message or a reset, and one input per turn.
func checkEndedOnce(t *testing.T, e *env, session int64) {
	t.Helper()
	pending, err := e.st.Pending(t.Context(), session)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 {
		t.Errorf("%d items still pending", len(pending))
	}
	count := map[int64]map[event.Kind]int{}
	for _, ev := range e.events(session) {
		if count[ev.Turn] == nil {
			count[ev.Turn] = map[event.Kind]int{}
		}
		count[ev.Turn][ev.Kind]++
	}
	for turn, n := range count {
		switch {
		case n[event.Reset] > 0:
			if n[event.Reset] != 1 || len(n) != 1 {
				t.Errorf("reset %d: %v", turn, n)
			}
		case n[event.SystemMessage] > 0 && n[event.TurnEnd] == 0:
			if n[event.SystemMessage] != 1 || len(n) != 1 {
				t.Errorf("silent message %d: %v", turn, n)
			}
		default:
			if n[event.TurnEnd] != 1 || n[event.Input]+n[event.SystemMessage] != 1 {
				t.Errorf("turn %d: %v", turn, n)
			}
		}
	}
}

func TestRecoverPendingInputWithoutEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	st, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var turns []int64
	var sessions []int64
	for _, addr := range []string{"a/k1", "b/k2"} {
		agentID, key, _ := runtime.ParseAddress(addr)
		s, _, err := st.Session(ctx, agentID, key)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			it, _, err := st.Enqueue(ctx, store.InboxItem{Session: s.ID, Kind: event.Input, Text: fmt.Sprintf("%s:%d", key, i), Source: "test"})
			if err != nil {
				t.Fatal(err)
			}
			turns = append(turns, it.ID)
		}
		sessions = append(sessions, s.ID)
	}
	st.Close()

	e := newEnv(t, setup{path: path})
	if n := e.start(); n != 2 {
		t.Errorf("Start resumed %d sessions, want 2", n)
	}
	for _, turn := range turns {
		if end := e.wait(turn); end.Status != event.StatusDone {
			t.Errorf("turn %d: %+v", turn, end)
		}
	}
	if diff := cmp.Diff(conversation("k1:0", "k1:1"), e.p.Requests("k1:1")[0].Messages); diff != "" {
		t.Errorf("context (-want +got):\n%s", diff)
	}
	for _, s := range sessions {
		checkEndedOnce(t, e, s)
	}
	if n := e.p.Calls(); n != 4 {
		t.Errorf("%d model calls, want 4", n)
	}
	// Nothing is left for another start.
	e.close()
	e2 := newEnv(t, setup{path: path})
	if n := e2.start(); n != 0 {
		t.Errorf("second Start resumed %d sessions", n)
	}
}

func TestCloseLeavesRunningTurnForTheNextStart(t *testing.T) {
	e := newEnv(t, setup{})
	g := e.p.Gate("a:1")
	rc := e.submit("a/k", "a:1")
	queued := e.submit("a/k", "a:2")
	recv(t, "the turn to reach the model", g.Entered)
	e.close() // its context is already done: the running turn is stopped
	if _, err := e.rt.Submit(t.Context(), runtime.Input{Session: "a/k", Text: "a:3"}); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
	if n := workers(); n != 0 {
		t.Errorf("%d workers after Close", n)
	}

	e2 := newEnv(t, setup{path: e.path})
	evs := e2.events(rc.SessionID)
	for _, ev := range evs {
		if ev.Kind == event.TurnEnd {
			t.Errorf("a turn_end was logged for turn %d of a stopped runtime", ev.Turn)
		}
	}
	pending, err := e2.st.Pending(t.Context(), rc.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 2 {
		t.Fatalf("%d pending items after Close, want 2", len(pending))
	}
	if n := e2.start(); n != 1 {
		t.Errorf("Start resumed %d sessions, want 1", n)
	}
	if end := e2.wait(rc.Turn); end.Status != event.StatusDone || end.Reply != "re: a:1" {
		t.Errorf("resumed turn: %+v", end)
	}
	if end := e2.wait(queued.Turn); end.Status != event.StatusDone {
		t.Errorf("queued turn: %+v", end)
	}
	checkEndedOnce(t, e2, rc.SessionID)
	if diff := cmp.Diff(conversation("a:1", "a:2"), e2.p.Requests("a:2")[0].Messages); diff != "" {
		t.Errorf("context after resuming (-want +got):\n%s", diff)
	}
}

func TestCloseLetsRunningTurnFinishUntilItsDeadline(t *testing.T) {
	e := newEnv(t, setup{})
	g := e.p.Gate("a:1")
	rc := e.submit("a/k", "a:1")
	recv(t, "the turn to reach the model", g.Entered)
	closed := make(chan error, 1)
	go func() { closed <- e.rt.Close(context.Background()) }()
	g.Open()
	if err := recv(t, "Close", closed); err != nil {
		t.Fatal(err)
	}
	evs := e.turnEvents(rc.SessionID, rc.Turn)
	if last := evs[len(evs)-1]; last.Kind != event.TurnEnd || decode[event.TurnEndData](t, last).Status != event.StatusDone {
		t.Errorf("the running turn did not finish: %v", kinds(evs))
	}
	if _, err := e.rt.Submit(t.Context(), runtime.Input{Session: "a/k", Text: "a:2"}); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Submit after Close: %v, want ErrClosed", err)
	}
	if _, err := e.rt.Reset(t.Context(), "a/k", ""); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Reset after Close: %v, want ErrClosed", err)
	}
}

// While Close waits for running turns, nothing queued starts; whoever waits
// for a turn gets its end if it ends in time, and ErrClosed otherwise
// (even if the wait's own context ends as the runtime stops).
func TestCloseAnswersWaiters(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	g := e.p.Gate("a:1")
	type result struct {
		end event.TurnEndData
		err error
	}
	running := make(chan result, 1)
	go func() {
		_, end, err := e.rt.Send(ctx, runtime.Input{Session: "a/k", Text: "a:1"})
		running <- result{end, err}
	}()
	recv(t, "the turn to reach the model", g.Entered)
	queued := e.submit("a/k", "a:2")
	waitQueued := make(chan result, 1)
	go func() {
		end, err := e.rt.Wait(ctx, queued.Turn)
		waitQueued <- result{end, err}
	}()
	closed := make(chan error, 1)
	go func() { closed <- e.rt.Close(context.Background()) }()
	var refused string // the address of an input Close refused
	for i := 0; refused == ""; i++ {
		addr := fmt.Sprintf("a/other%d", i)
		if _, err := e.rt.Submit(ctx, runtime.Input{Session: addr, Text: "x"}); errors.Is(err, runtime.ErrClosed) {
			refused = addr
		}
	}
	g.Open()
	if r := recv(t, "the running turn's waiter", running); r.err != nil || r.end.Reply != "re: a:1" {
		t.Errorf("running turn: %+v, %v", r.end, r.err)
	}
	if r := recv(t, "the queued turn's waiter", waitQueued); !errors.Is(r.err, runtime.ErrClosed) {
		t.Errorf("queued turn: %+v, %v; want ErrClosed", r.end, r.err)
	}
	recv(t, "Close", closed)
	if len(e.p.Requests("a:2")) != 0 {
		t.Error("the queued turn started while closing")
	}
	// A wait whose context is done as well still says the runtime stopped.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.rt.Wait(done, queued.Turn); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Wait after Close: %v, want ErrClosed", err)
	}
	// Once an input was refused, the next is refused before its session
	// is made.
	if _, err := e.rt.Submit(ctx, runtime.Input{Session: refused + "-next", Text: "x"}); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Submit while closing: %v", err)
	}
	if _, err := e.st.SessionByAddress(ctx, "a", strings.TrimPrefix(refused, "a/")+"-next"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("input refused while closing made a session: %v", err)
	}
}
