package runtime_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

// logged is what identifies a logged event.
type logged struct {
	Seq  int64
	Turn int64
	Kind event.Kind
	Data string
}

func loggedOf(evs []event.Event) []logged {
	var out []logged
	for _, e := range evs {
		if e.Seq > 0 {
			out = append(out, logged{e.Seq, e.Turn, e.Kind, string(e.Data)})
		}
	}
	return out
}

// deltaText joins the text of the text_delta events.
func deltaText(t *testing.T, evs []event.Event) (string, int) {
	var sb strings.Builder
	n := 0
	for _, e := range evs {
		if e.Kind == event.TextDelta {
			sb.WriteString(decode[event.DeltaData](t, e).Text)
			n++
		}
	}
	return sb.String(), n
}

func TestStream(t *testing.T) {
	e := newEnv(t, setup{})
	ctx := t.Context()
	e.submit("a/k", "a:0") // an earlier turn of the session is not streamed
	var got []event.Event
	rc, end, err := e.rt.Stream(ctx, runtime.Input{Session: "a/k", Text: "a:1 two three"}, func(ev event.Event) error {
		got = append(got, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != event.StatusDone || end.Reply != "re: a:1 two three" {
		t.Errorf("end %+v", end)
	}
	for _, ev := range got {
		if ev.Turn != rc.Turn || ev.Session != rc.SessionID {
			t.Errorf("streamed event %s of session %d turn %d, want %d/%d", ev.Kind, ev.Session, ev.Turn, rc.SessionID, rc.Turn)
		}
	}
	// The turn starts, deltas stream live (the input may be logged with
	// the turn's first write, after them), and the end comes last.
	if len(got) < 2 || got[0].Kind != event.TurnStart || got[len(got)-1].Kind != event.TurnEnd {
		t.Errorf("streamed kinds %v: want turn_start first and turn_end last", kinds(got))
	}
	var deltas []event.Event
	for _, ev := range got {
		if ev.Kind == event.TextDelta {
			deltas = append(deltas, ev)
		}
		if ev.Kind == event.ModelCall && len(deltas) != 4 {
			t.Errorf("the model_call came after %d of 4 deltas", len(deltas))
		}
	}
	if text, _ := deltaText(t, got); text != end.Reply {
		t.Errorf("deltas say %q, reply %q", text, end.Reply)
	}
	if diff := cmp.Diff(loggedOf(e.turnEvents(rc.SessionID, rc.Turn)), loggedOf(got)); diff != "" {
		t.Errorf("logged events streamed (-log +streamed):\n%s", diff)
	}

	// A duplicate streams the original's logged events and result.
	in := runtime.Input{Session: "a/k", Text: "a:2", IdempotencyKey: "k2"}
	rc2, end2, err := e.rt.Stream(ctx, in, func(event.Event) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	var dup []event.Event
	rc3, end3, err := e.rt.Stream(ctx, in, func(ev event.Event) error {
		dup = append(dup, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rc3.Duplicate || rc3.Turn != rc2.Turn {
		t.Errorf("duplicate receipt %+v, want turn %d", rc3, rc2.Turn)
	}
	if diff := cmp.Diff(end2, end3); diff != "" {
		t.Errorf("duplicate result (-original +duplicate):\n%s", diff)
	}
	if diff := cmp.Diff(loggedOf(e.turnEvents(rc2.SessionID, rc2.Turn)), loggedOf(dup)); diff != "" {
		t.Errorf("duplicate stream (-log +streamed):\n%s", diff)
	}
}

func TestStreamSlowSubscriber(t *testing.T) {
	const deltas = 6000 // more than the stream's bus buffer
	emitted := make(chan struct{})
	p := testkit.NewModel()
	p.Respond = func(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
		for range deltas {
			onDelta(model.Delta{Text: "x"})
		}
		close(emitted)
		return &model.Response{Text: strings.Repeat("x", deltas), StopReason: "stop"}, nil
	}
	e := newEnv(t, setup{p: p})
	var got []event.Event
	rc, end, err := e.rt.Stream(t.Context(), runtime.Input{Session: "a/k", Text: "a:1"}, func(ev event.Event) error {
		if len(got) == 0 {
			// Too slow: the whole answer streams before the first event is taken.
			recv(t, "the model to stream everything", emitted)
		}
		got = append(got, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != event.StatusDone {
		t.Errorf("end %+v", end)
	}
	if diff := cmp.Diff(loggedOf(e.turnEvents(rc.SessionID, rc.Turn)), loggedOf(got)); diff != "" {
		t.Errorf("logged events streamed (-log +streamed):\n%s", diff)
	}
	// The bus dropped the subscriber: some deltas were lost, and the logged
	// events after them came from the log.
	if _, n := deltaText(t, got); n >= deltas {
		t.Errorf("all %d deltas arrived; the slow subscriber was not dropped", n)
	}
}

// commitHook is a store whose Commit calls after once the batch is durable
// and before the runtime goes on.
type commitHook struct {
	store.Store
	after func(*store.Batch)
}

func (s *commitHook) Commit(ctx context.Context, b *store.Batch) error {
	err := s.Store.Commit(ctx, b)
	if err == nil {
		s.after(b)
	}
	return err
}

func toolResultID(t *testing.T, b *store.Batch) string {
	for _, ev := range b.Events {
		if ev.Kind == event.ToolResult {
			return decode[event.ToolResultData](t, ev).ID
		}
	}
	return ""
}

// Two tool calls run in parallel and their results are logged separately;
// when the later one is published first, Stream must still deliver both, in
// log order.
func TestStreamParallelToolResults(t *testing.T) {
	aDurable := make(chan struct{})
	bPublished := make(chan struct{})
	var once sync.Once
	wrap := func(st store.Store) store.Store {
		return &commitHook{Store: st, after: func(b *store.Batch) {
			if toolResultID(t, b) == "ta" {
				close(aDurable)
				// Hold ta's publication until the stream has delivered tb's
				// (or a while, if the runtime orders them some other way).
				select {
				case <-bPublished:
				case <-time.After(2 * time.Second):
				}
			}
		}}
	}
	ta := tool.Func(tool.Spec{Name: "ta", Description: "a"}, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		return tool.Result{Output: "A"}, nil
	})
	tb := tool.Func(tool.Spec{Name: "tb", Description: "b"}, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		select {
		case <-aDurable:
		case <-ctx.Done():
		}
		return tool.Result{Output: "B"}, nil
	})
	p := testkit.NewModel()
	p.Respond = func(ctx context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == model.RoleTool {
			return &model.Response{Text: "both done", StopReason: "stop"}, nil
		}
		return &model.Response{ToolCalls: []model.ToolCall{{ID: "ta", Name: "ta"}, {ID: "tb", Name: "tb"}}, StopReason: "tool_calls"}, nil
	}
	e := newEnv(t, setup{p: p, wrap: wrap, tools: []tool.Tool{ta, tb}})
	var got []event.Event
	rc, end, err := e.rt.Stream(t.Context(), runtime.Input{Session: "a/k", Text: "a:1"}, func(ev event.Event) error {
		got = append(got, ev)
		if ev.Kind == event.ToolResult && decode[event.ToolResultData](t, ev).ID == "tb" {
			once.Do(func() { close(bPublished) })
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if end.Reply != "both done" {
		t.Errorf("end %+v", end)
	}
	if diff := cmp.Diff(loggedOf(e.turnEvents(rc.SessionID, rc.Turn)), loggedOf(got)); diff != "" {
		t.Errorf("logged events streamed (-log +streamed):\n%s", diff)
	}
}

func TestStreamStopsWhenFnFails(t *testing.T) {
	e := newEnv(t, setup{})
	stop := context.Canceled
	rc, _, err := e.rt.Stream(t.Context(), runtime.Input{Session: "a/k", Text: "a:1"}, func(ev event.Event) error {
		return stop
	})
	if err != stop {
		t.Errorf("Stream: %v, want fn's error", err)
	}
	// The turn itself goes on.
	if end := e.wait(rc.Turn); end.Status != event.StatusDone {
		t.Errorf("turn %+v", end)
	}
}

// A turn moves its session to active and back to idle; each change is
// published as a live session_state event, once.
func TestSessionStateEvents(t *testing.T) {
	e := newEnv(t, setup{})
	sub := e.rt.Bus().Subscribe(0, 1024)
	defer sub.Close()
	e.submit("a/k", "a:0")
	e.submit("a/k", "a:1")
	var states []string
	deadline := time.After(10 * time.Second)
	for len(states) < 4 {
		select {
		case ev := <-sub.C:
			if ev.Kind == event.State {
				states = append(states, decode[event.StateData](t, ev).State)
			}
		case <-deadline:
			t.Fatalf("states so far %v", states)
		}
	}
	if diff := cmp.Diff([]string{"active", "idle", "active", "idle"}, states); diff != "" {
		t.Errorf("session_state events (-want +got):\n%s", diff)
	}
}
