package runtime_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/store/sqlite"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

// An input's hops (the agent messages that led to it) go into its inbox
// item and its event, and the tools its turn calls learn them with the
// turn, so that a message a tool sends goes one hop further.
func TestHopsCarried(t *testing.T) {
	var (
		mu  sync.Mutex
		got []tool.Call
	)
	probe := tool.Func(tool.Spec{Name: "probe", Description: "records its calls", ReadOnly: true},
		func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			mu.Lock()
			got = append(got, tool.Call{Agent: c.Agent, Turn: c.Turn, Hops: c.Hops, Scope: c.Scope})
			mu.Unlock()
			return tool.Result{Output: "ok"}, nil
		})
	p := testkit.NewModel()
	p.Respond = callOnce("probe", "a:go")
	e := newEnv(t, setup{p: p, tools: []tool.Tool{probe}})
	ctx := t.Context()
	rc, err := e.rt.Submit(ctx, runtime.Input{Session: "a/k", Text: "a:go", Source: "agent", Hops: 3})
	if err != nil {
		t.Fatal(err)
	}
	if end := e.wait(rc.Turn); end.Status != event.StatusDone {
		t.Fatalf("turn ended %+v", end)
	}
	silent, err := e.rt.Submit(ctx, runtime.Input{Session: "a/k", Text: "note", Source: "agent", Silent: true, Origin: "ck1", Hops: 4})
	if err != nil {
		t.Fatal(err)
	}
	e.wait(silent.Turn)
	for _, tc := range []struct {
		turn int64
		hops int
	}{{rc.Turn, 3}, {silent.Turn, 4}} {
		it, err := e.st.InboxItem(ctx, tc.turn)
		if err != nil || it.Hops != tc.hops {
			t.Errorf("inbox item %d: hops %d, err %v; want %d", tc.turn, it.Hops, err, tc.hops)
		}
		evs := e.turnEvents(rc.SessionID, tc.turn)
		if d := decode[event.InputData](t, evs[0]); d.Hops != tc.hops {
			t.Errorf("the %s event of turn %d has hops %d, want %d", evs[0].Kind, tc.turn, d.Hops, tc.hops)
		}
	}
	want := []tool.Call{{Agent: "a", Turn: rc.Turn, Hops: 3, Scope: "a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if _, err := e.rt.Submit(ctx, runtime.Input{Session: "a/k", Text: "x", Hops: -1}); err == nil {
		t.Error("an input with negative hops was accepted")
	}
}

// endRecorder records the calls of Options.Ended.
type endRecorder struct {
	mu   sync.Mutex
	ends map[int64][]event.TurnEndData
}

func (r *endRecorder) ended(s store.Session, it store.InboxItem, end event.TurnEndData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ends == nil {
		r.ends = map[int64][]event.TurnEndData{}
	}
	if it.Session != s.ID {
		end.Reason = "the item is not of the session"
	}
	r.ends[it.ID] = append(r.ends[it.ID], end)
}

// statuses returns the statuses Ended was called with, by item.
func (r *endRecorder) statuses() map[int64][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int64][]string{}
	for id, ends := range r.ends {
		for _, e := range ends {
			out[id] = append(out[id], e.Status)
		}
	}
	return out
}

// Ended is called once for each turn end, whatever the end — done, an
// error, a budget, a cancel, a refusal —, and never for a reset or a
// silent message, which end without a turn.
func TestEndedOncePerTurnEnd(t *testing.T) {
	var rec endRecorder
	agents := testAgents()
	agents["s"] = def("s", "")
	agents["s"].Budgets.MaxSteps = 1
	p := testkit.NewModel()
	p.Respond = func(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
		switch testkit.LastUser(req) {
		case "a:fail":
			return nil, errors.New("the model is down")
		case "s:loop":
			return &model.Response{ToolCalls: []model.ToolCall{{ID: "c1", Name: "nothing", Args: []byte(`{}`)}}, StopReason: "tool_calls"}, nil
		}
		return &model.Response{Text: "ok", StopReason: "stop"}, nil
	}
	e := newEnv(t, setup{p: p, agents: agents, opts: func(o *runtime.Options) { o.Ended = rec.ended }})
	ctx := t.Context()
	done := e.submit("a/k", "a:ok")
	failed := e.submit("a/k", "a:fail")
	budget := e.submit("s/k", "s:loop")
	silent, err := e.rt.Submit(ctx, runtime.Input{Session: "a/k", Text: "note", Silent: true})
	if err != nil {
		t.Fatal(err)
	}
	rset, err := e.rt.Reset(ctx, "a/k", "fresh")
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range []int64{done.Turn, failed.Turn, budget.Turn, silent.Turn, rset.Turn} {
		e.wait(turn)
	}
	// A cancelled turn, and the input queued behind it.
	p.Respond = nil
	g := p.Gate("b:hold")
	cancelled := e.submit("b/k", "b:hold")
	recv(t, "the turn to reach the model", g.Entered)
	after := e.submit("b/k", "b:after") // runs: a cancel leaves the queue
	if err := e.rt.Cancel(ctx, "b/k"); err != nil {
		t.Fatal(err)
	}
	e.wait(cancelled.Turn)
	e.wait(after.Turn)
	want := map[int64][]string{
		done.Turn:      {event.StatusDone},
		failed.Turn:    {event.StatusError},
		budget.Turn:    {event.StatusBudget},
		cancelled.Turn: {event.StatusCancelled},
		after.Turn:     {event.StatusDone},
	}
	if diff := cmp.Diff(want, rec.statuses()); diff != "" {
		t.Errorf("Ended calls by turn (-want +got):\n%s", diff)
	}
}

// A turn resumed after a restart calls Ended once, when it ends; the
// silent message and the reset queued behind it do not.
func TestEndedAfterRecovery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	c := leaveCrashed(t, path, "lookup")
	var rec endRecorder
	p := testkit.NewModel()
	p.Respond = callOnce("lookup", "a:go")
	lookup := &recordingTool{spec: tool.Spec{Name: "lookup", Description: "looks up", ReadOnly: true}}
	e := newEnv(t, setup{path: path, p: p, tools: []tool.Tool{lookup}, opts: func(o *runtime.Options) { o.Ended = rec.ended }})
	e.start()
	e.wait(c.turn)
	e.wait(c.next)
	want := map[int64][]string{c.turn: {event.StatusDone}, c.next: {event.StatusDone}}
	if diff := cmp.Diff(want, rec.statuses()); diff != "" {
		t.Errorf("Ended calls by turn (-want +got):\n%s", diff)
	}
}

// Stop cancels the running turn, refuses every queued input, logs a
// "stopped" marker and closes the session; a later input is refused as
// to any closed session, until the session is reopened. A second Stop
// changes nothing.
func TestStop(t *testing.T) {
	var rec endRecorder
	e := newEnv(t, setup{opts: func(o *runtime.Options) { o.Ended = rec.ended }})
	ctx := t.Context()
	if err := e.rt.Stop(ctx, "a/none", "why"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Stop of a session that does not exist: %v, want ErrNotFound", err)
	}
	g := e.p.Gate("a:1")
	running := e.submit("a/k", "a:1")
	recv(t, "the turn to reach the model", g.Entered)
	queued := []runtime.Receipt{e.submit("a/k", "a:2"), e.submit("a/k", "a:3")}
	if err := e.rt.Stop(ctx, "a/k", "its parent was stopped"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if end := e.wait(running.Turn); end.Status != event.StatusCancelled {
		t.Errorf("the running turn ended %+v, want cancelled", end)
	}
	for _, rc := range queued {
		if end := e.wait(rc.Turn); end.Status != event.StatusError || end.Reason != runtime.StoppedReason {
			t.Errorf("queued turn %d ended %+v, want refused: %s", rc.Turn, end, runtime.StoppedReason)
		}
	}
	if got := rec.statuses(); len(got) != 3 {
		t.Errorf("Ended was called for %v, want the three turns", got)
	}
	s, _, err := e.st.Session(ctx, "a", "k")
	if err != nil || s.State != store.StateClosed {
		t.Fatalf("session state %q, err %v; want closed", s.State, err)
	}
	markers := func() []event.MarkerData {
		var ms []event.MarkerData
		for _, ev := range e.events(s.ID) {
			if ev.Kind == event.Marker && ev.Turn == 0 {
				ms = append(ms, decode[event.MarkerData](t, ev))
			}
		}
		return ms
	}
	want := []event.MarkerData{{Name: "stopped", Reason: "its parent was stopped"}}
	if diff := cmp.Diff(want, markers()); diff != "" {
		t.Errorf("markers (-want +got):\n%s", diff)
	}
	if _, err := e.rt.Submit(ctx, runtime.Input{Session: "a/k", Text: "a:4"}); !errors.Is(err, runtime.ErrSessionClosed) {
		t.Errorf("Submit after Stop: %v, want ErrSessionClosed", err)
	}
	if err := e.rt.Stop(ctx, "a/k", "again"); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
	if diff := cmp.Diff(want, markers()); diff != "" {
		t.Errorf("a second Stop logged markers (-want +got):\n%s", diff)
	}
	rc, err := e.rt.Submit(ctx, runtime.Input{Session: "a/k", Text: "a:5", Reopen: true})
	if err != nil {
		t.Fatalf("Submit with reopen after Stop: %v", err)
	}
	if end := e.wait(rc.Turn); end.Status != event.StatusDone {
		t.Errorf("the turn after the session was reopened ended %+v", end)
	}
}

// Stop refuses the queued inputs of a paused agent too.
func TestStopPaused(t *testing.T) {
	e := newEnv(t, setup{opts: func(o *runtime.Options) { o.Paused = func(string) bool { return true } }})
	rc := e.submit("a/k", "a:1")
	if err := e.rt.Stop(t.Context(), "a/k", "stopped"); err != nil {
		t.Fatal(err)
	}
	if end := e.wait(rc.Turn); end.Reason != runtime.StoppedReason {
		t.Errorf("the paused input ended %+v", end)
	}
}

// fakeAccounts gives every turn the account and payer it was made with.
type fakeAccounts struct {
	payer string
	mu    sync.Mutex
	turns []int64
}

func (f *fakeAccounts) For(ctx context.Context, sess store.Session, turn int64, def *agent.Definition, b agent.Budgets) (engine.Account, string, error) {
	f.mu.Lock()
	f.turns = append(f.turns, turn)
	f.mu.Unlock()
	return nil, f.payer, nil
}

// A turn's payer comes from Accounts: its usage rows name it, and the
// day budget is the tighter of the agent's own and the payer's, held
// against what the payer spent today.
func TestAccountsPayer(t *testing.T) {
	agents := testAgents()
	boss := def("boss", "")
	boss.Budgets.MaxUSDPerDay = 1
	agents["boss"] = boss
	accts := &fakeAccounts{payer: "boss"}
	e := newEnv(t, setup{agents: agents, opts: func(o *runtime.Options) { o.Accounts = accts }})
	ctx := t.Context()
	midnight := time.Now().UTC().Truncate(24 * time.Hour)
	rc := e.submit("a/k", "a:1")
	if end := e.wait(rc.Turn); end.Status != event.StatusDone {
		t.Fatalf("turn ended %+v", end)
	}
	if !slices.Equal(accts.turns, []int64{rc.Turn}) {
		t.Errorf("Accounts.For was asked for turns %v, want [%d]", accts.turns, rc.Turn)
	}
	u, err := e.st.UsageSince(ctx, "boss", midnight)
	if err != nil || u.InputTokens == 0 {
		t.Fatalf("the payer's usage %+v, err %v; want the turn's", u, err)
	}
	// The payer spends its day budget; the agent's next turn stops before
	// its model call although the agent has no day budget of its own.
	bs, _, err := e.st.Session(ctx, "boss", "main")
	if err != nil {
		t.Fatal(err)
	}
	err = e.st.Commit(ctx, &store.Batch{Session: bs.ID, Usage: []store.Usage{{Session: bs.ID, Agent: "boss", Model: "m", CostUSD: 2, Time: time.Now().UTC()}}})
	if err != nil {
		t.Fatal(err)
	}
	rc = e.submit("a/k", "a:2")
	if end := e.wait(rc.Turn); end.Status != event.StatusBudget || end.Budget != "max_usd_per_day" || !strings.Contains(end.Reason, "its payer boss") {
		t.Errorf("turn paid by a payer past its day budget ended %+v", end)
	}
}

// Stop asked of a node that does not run the session's turn cancels it
// on the node that does, waits for its end, and closes the session: no
// later input runs, on either node.
func TestStopAcrossNodes(t *testing.T) {
	db := pgtest.NewDB(t)
	a, b := newNode(t, db), newNode(t, db)
	ctx := t.Context()
	h := holdOn(t, "long", a, b)
	rc, err := a.rt.Submit(ctx, runtime.Input{Session: "a/s", Text: "long", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	other := a
	if h.entered(t) == a {
		other = b
	}
	if err := other.rt.Stop(ctx, "a/s", "stopped by a person"); err != nil {
		t.Fatalf("Stop through the node not running the turn: %v", err)
	}
	end, err := other.rt.Wait(ctx, rc.Turn)
	if err != nil || end.Status != event.StatusCancelled {
		t.Fatalf("turn ended %+v, %v; want cancelled", end, err)
	}
	// No input runs after: refused at once, or, by the node whose view
	// of the session is older, when its turn would start.
	for i, n := range []*node{a, b} {
		rc, err := n.rt.Submit(ctx, runtime.Input{Session: "a/s", Text: "after", Source: "test"})
		if errors.Is(err, runtime.ErrSessionClosed) {
			continue
		}
		if err != nil {
			t.Fatalf("node %d: Submit after Stop: %v", i, err)
		}
		if end, err := n.rt.Wait(ctx, rc.Turn); err != nil || end.Status != event.StatusError {
			t.Errorf("node %d: an input accepted after Stop ended %+v, %v; want refused", i, end, err)
		}
	}
}

// An input refused when its turn would start (its session was closed
// after it was accepted) has a turn_end: Ended hears of it.
func TestEndedForInputRefusedAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	st, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := st.Session(t.Context(), "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	it, _, err := st.Enqueue(t.Context(), store.InboxItem{Session: s.ID, Kind: event.Input, Text: "a:late", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(t.Context(), &store.Batch{Session: s.ID, State: store.StateClosed}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var rec endRecorder
	e := newEnv(t, setup{path: path, opts: func(o *runtime.Options) { o.Ended = rec.ended }})
	e.start()
	if end := e.wait(it.ID); end.Status != event.StatusError {
		t.Fatalf("the input to a closed session ended %+v", end)
	}
	if diff := cmp.Diff(map[int64][]string{it.ID: {event.StatusError}}, rec.statuses()); diff != "" {
		t.Errorf("Ended calls by turn (-want +got):\n%s", diff)
	}
}

// An input redelivered with the idempotency key of one the session took
// before gets that input's receipt as a duplicate, whether the session was
// closed or stopped since (a crash came between the first delivery and its
// sender's record of it); a new input is still refused as closed.
func TestRedeliveryToClosedSession(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(e *env) error
	}{
		{"closed", func(e *env) error { return e.rt.CloseSession(t.Context(), "a/k") }},
		{"stopped", func(e *env) error { return e.rt.Stop(t.Context(), "a/k", "its parent was stopped") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, setup{})
			ctx := t.Context()
			in := runtime.Input{Session: "a/k", Text: "a:1", IdempotencyKey: "report:1", System: true}
			first, end, err := e.rt.Send(ctx, in)
			if err != nil || end.Status != event.StatusDone {
				t.Fatalf("first delivery: %+v, %v", end, err)
			}
			eventually(t, "the session to close", func() bool {
				err := tc.close(e)
				if err != nil && !errors.Is(err, runtime.ErrBusy) {
					t.Fatal(err)
				}
				return err == nil
			})
			again, err := e.rt.Submit(ctx, in)
			if err != nil {
				t.Fatalf("redelivery to a %s session: %v, want its first receipt", tc.name, err)
			}
			want := first
			want.Duplicate = true
			if diff := cmp.Diff(want, again); diff != "" {
				t.Errorf("redelivery's receipt (-want +got):\n%s", diff)
			}
			in.IdempotencyKey, in.Text = "report:2", "a:2"
			if _, err := e.rt.Submit(ctx, in); !errors.Is(err, runtime.ErrSessionClosed) {
				t.Errorf("a new input to a %s session: %v, want ErrSessionClosed", tc.name, err)
			}
			s, _, err := e.st.Session(ctx, "a", "k")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, ev := range e.events(s.ID) {
				if ev.Kind == event.SystemMessage || ev.Kind == event.Input {
					n++
				}
			}
			if n != 1 {
				t.Errorf("the log holds %d inputs, want the first delivery once", n)
			}
		})
	}
}
