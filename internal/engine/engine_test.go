package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// memLog is an in-memory Log that records what became durable, in order.
// It makes each batch durable before Commit returns.
type memLog struct {
	mu      sync.Mutex
	seq     int64
	events  []event.Event
	batches []*store.Batch
	onSync  func(b *store.Batch) // called for every commit
	fail    error
}

func (l *memLog) Commit(ctx context.Context, b *store.Batch) func() error {
	err := l.commit(b)
	return func() error { return err }
}

func (l *memLog) commit(b *store.Batch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	for i := range b.Events {
		l.seq++
		b.Events[i].Seq = l.seq
	}
	l.events = append(l.events, b.Events...)
	l.batches = append(l.batches, b)
	if l.onSync != nil {
		l.onSync(b)
	}
	return nil
}

func (l *memLog) kinds() []event.Kind {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ks []event.Kind
	for _, e := range l.events {
		ks = append(ks, e.Kind)
	}
	return ks
}

// script is a provider that answers from a list, one response per call.
type script struct {
	mu    sync.Mutex
	resps []func(req *model.Request) (*model.Response, error)
	calls int
	reqs  []*model.Request
}

func (s *script) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	s.mu.Lock()
	i := s.calls
	s.calls++
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	if i >= len(s.resps) {
		return &model.Response{Text: "default", Usage: model.Usage{InputTokens: 1, OutputTokens: 1}}, nil
	}
	return s.resps[i](req)
}

func text(t string) func(*model.Request) (*model.Response, error) {
	return func(*model.Request) (*model.Response, error) {
		return &model.Response{Text: t, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
}

func calls(cs ...model.ToolCall) func(*model.Request) (*model.Response, error) {
	return func(*model.Request) (*model.Response, error) {
		return &model.Response{ToolCalls: cs, Usage: model.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	}
}

func fail(err error) func(*model.Request) (*model.Response, error) {
	return func(*model.Request) (*model.Response, error) { return nil, err }
}

// models maps model names to providers.
type models map[string]model.Provider

func (m models) Provider(c agent.Model) (model.Provider, error) {
	p, ok := m[c.Name]
	if !ok {
		return nil, errors.New("no such model " + c.Name)
	}
	return p, nil
}

type harness struct {
	log   *memLog
	tools *tool.Registry
	eng   *Engine
	runs  map[string]*atomic.Int32
}

func newHarness(t *testing.T, ms models) *harness {
	t.Helper()
	h := &harness{log: &memLog{}, tools: tool.NewRegistry(nil), runs: map[string]*atomic.Int32{}}
	obj := json.RawMessage(`{"type":"object"}`)
	for _, spec := range []tool.Spec{
		{Name: "read", InputSchema: obj, ReadOnly: true},
		{Name: "send_money", InputSchema: obj},
		{Name: "slow", InputSchema: obj, ReadOnly: true},
		{Name: "net", InputSchema: obj, Risky: true},
	} {
		n := new(atomic.Int32)
		h.runs[spec.Name] = n
		name := spec.Name
		err := h.tools.Register(tool.Func(spec, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			n.Add(1)
			if name == "slow" {
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			}
			return tool.Result{Output: name + " ok"}, nil
		}))
		if err != nil {
			t.Fatal(err)
		}
	}
	h.eng = New(&Options{Models: ms, Tools: h.tools, BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		Prices: map[string]agent.Price{"priced": {Input: 1e6, Output: 1e6}}})
	return h
}

// run runs t with the harness's log.
func (h *harness) run(ctx context.Context, t *Turn) (event.TurnEndData, error) {
	t.Log = h.log
	return h.eng.Run(ctx, t)
}

func turn(def *agent.Definition) *Turn {
	if def.ID == "" {
		def.ID = "a"
	}
	if def.Model.Name == "" {
		def.Model.Name = "m"
	}
	return &Turn{ID: 7, Session: store.Session{ID: 1, Agent: def.ID, Key: "k"}, Agent: def,
		Item: store.InboxItem{ID: 7, Session: 1, Kind: event.Input, Text: "hello"}}
}

func TestTextTurn(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("hi there")}}
	h := newHarness(t, models{"m": p})
	end, err := h.run(context.Background(), turn(&agent.Definition{}))
	if err != nil || end.Status != event.StatusDone || end.Reply != "hi there" || end.Steps != 1 {
		t.Fatalf("end %+v, err %v", end, err)
	}
	want := []event.Kind{event.Input, event.ModelCall, event.Text, event.TurnEnd}
	if got := h.log.kinds(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	// The answer and the end are durable together, with the inbox item done.
	last := h.log.batches[len(h.log.batches)-1]
	if !slices.Equal(last.Done, []int64{7}) || last.State != store.StateIdle || last.Events[len(last.Events)-1].Kind != event.TurnEnd {
		t.Fatalf("last batch %+v", last)
	}
}

// A non-idempotent tool's call is durable before the tool runs.
func TestToolCallDurableBeforeSideEffect(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c1", Name: "send_money", Args: json.RawMessage(`{}`)}), text("sent")}}
	h := newHarness(t, models{"m": p})
	var durableFirst bool
	h.log.onSync = func(b *store.Batch) {
		for _, e := range b.Events {
			if e.Kind == event.ToolCall && h.runs["send_money"].Load() == 0 {
				durableFirst = true
			}
		}
	}
	end, err := h.run(context.Background(), turn(&agent.Definition{}))
	if err != nil || end.Status != event.StatusDone {
		t.Fatalf("%+v %v", end, err)
	}
	if !durableFirst {
		t.Fatal("send_money ran before its tool_call was durable")
	}
}

func TestBudgets(t *testing.T) {
	loop := func() []func(*model.Request) (*model.Response, error) {
		var rs []func(*model.Request) (*model.Response, error)
		for i := 0; i < 10; i++ {
			rs = append(rs, calls(model.ToolCall{ID: "c", Name: "read", Args: json.RawMessage(`{}`)}))
		}
		return rs
	}
	for _, tc := range []struct {
		name   string
		def    agent.Definition
		spent  float64
		budget string
		steps  int
	}{
		{"steps", agent.Definition{Budgets: agent.Budgets{MaxSteps: 3}}, 0, "max_steps", 3},
		{"output tokens", agent.Definition{Budgets: agent.Budgets{MaxOutputTokens: 12}}, 0, "max_output_tokens", 3},
		// $1 a token: each step costs $15, the loop $150.
		{"usd per turn", agent.Definition{Model: agent.Model{Name: "priced"}, Budgets: agent.Budgets{MaxUSDPerTurn: 100}}, 0, "max_usd_per_turn", -1},
		{"usd per day", agent.Definition{Model: agent.Model{Name: "priced"}, Budgets: agent.Budgets{MaxUSDPerDay: 1000}}, 900, "max_usd_per_day", -1},
		{"usd per turn, not even the input", agent.Definition{Model: agent.Model{Name: "priced"}, Budgets: agent.Budgets{MaxUSDPerTurn: 1}}, 0, "max_usd_per_turn", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &script{resps: loop()}
			h := newHarness(t, models{"m": p, "priced": p})
			tr := turn(&tc.def)
			tr.SpentToday = tc.spent
			end, err := h.run(context.Background(), tr)
			if err != nil || end.Status != event.StatusBudget || end.Budget != tc.budget || tc.steps >= 0 && end.Steps != tc.steps {
				t.Fatalf("end %+v err %v; want budget %s after %d steps", end, err, tc.budget, tc.steps)
			}
			// No call was made that could take the turn or the day past
			// its budget: each asked for at most the output the money left
			// pays for, after its input.
			b := tc.def.Budgets
			if limit := max(b.MaxUSDPerTurn, b.MaxUSDPerDay-tc.spent); tc.def.Model.Name == "priced" && (end.CostUSD > limit || len(p.reqs) != end.Steps) {
				t.Errorf("cost $%v of $%v in %d steps, %d calls", end.CostUSD, limit, end.Steps, len(p.reqs))
			}
			spent := 0.0
			for i, req := range p.reqs {
				if tc.def.Model.Name != "priced" {
					break
				}
				left := max(b.MaxUSDPerTurn, b.MaxUSDPerDay-tc.spent) - spent
				if req.MaxTokens <= 0 || float64(req.MaxTokens) > left {
					t.Errorf("call %d asked for %d output tokens with $%v left", i, req.MaxTokens, left)
				}
				spent += 15
			}
		})
	}
}

// The day budget's stop names the payer whose day it is when another
// agent pays (a sub-agent's parent), the agent itself otherwise.
func TestDayBudgetNamesItsPayer(t *testing.T) {
	for _, tc := range []struct {
		name, payer string
		spent       float64 // of a $1000 day; $1 a token
		want        string
	}{
		{"spent, own day", "", 1000, "stopped: the agent spent $1000.0000 today"},
		{"spent, payer's day", "boss", 1000, "stopped: its payer boss spent $1000.0000 today"},
		{"the next call does not fit, own day", "", 999.5, "could take the agent's day past"},
		{"the next call does not fit, payer's day", "boss", 999.5, "could take its payer boss's day past"},
		{"the agent is its own payer", "a", 1000, "stopped: the agent spent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &script{}
			h := newHarness(t, models{"priced": p})
			tr := turn(&agent.Definition{ID: "a", Model: agent.Model{Name: "priced"}, Budgets: agent.Budgets{MaxUSDPerDay: 1000}})
			tr.SpentToday, tr.Payer = tc.spent, tc.payer
			end, err := h.run(context.Background(), tr)
			if err != nil || end.Budget != "max_usd_per_day" || !strings.Contains(end.Reason, tc.want) {
				t.Fatalf("end %+v err %v; want a day budget stop saying %q", end, err, tc.want)
			}
		})
	}
}

func TestWallTimeBudget(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c", Name: "slow", Args: json.RawMessage(`{}`)})}}
	h := newHarness(t, models{"m": p})
	end, err := h.run(context.Background(), turn(&agent.Definition{Budgets: agent.Budgets{MaxWallTime: agent.Duration(20 * time.Millisecond)}}))
	if err != nil || end.Status != event.StatusBudget || end.Budget != "max_wall_time" {
		t.Fatalf("end %+v err %v", end, err)
	}
}

func TestRetryAndFallback(t *testing.T) {
	overloaded := &model.Error{Kind: model.ErrOverloaded, Provider: "p", Status: 529}
	auth := &model.Error{Kind: model.ErrAuth, Provider: "p", Status: 401}
	primary := &script{resps: []func(*model.Request) (*model.Response, error){fail(overloaded), fail(overloaded), fail(auth)}}
	backup := &script{resps: []func(*model.Request) (*model.Response, error){text("from backup")}}
	h := newHarness(t, models{"m": primary, "b": backup})
	def := &agent.Definition{Model: agent.Model{Name: "m", Retries: 5, Fallbacks: []agent.Model{{Name: "b"}}}}
	end, err := h.run(context.Background(), turn(def))
	if err != nil || end.Reply != "from backup" {
		t.Fatalf("end %+v err %v", end, err)
	}
	if primary.calls != 3 {
		t.Fatalf("primary called %d times, want 3 (two retries, then auth stops it)", primary.calls)
	}
	var attempts []string
	for _, e := range h.log.events {
		var d event.ModelCallData
		if e.Kind == event.ModelCall && e.Decode(&d) == nil {
			attempts = append(attempts, d.Model+":"+d.ErrorKind)
		}
	}
	want := []string{"m:overloaded", "m:overloaded", "m:auth", "b:"}
	if !slices.Equal(attempts, want) {
		t.Fatalf("attempts %v, want %v", attempts, want)
	}
	// The attempts at a step are numbered across the models.
	var numbers []int
	for _, e := range h.log.events {
		var d event.ModelCallData
		if e.Kind == event.ModelCall && e.Decode(&d) == nil {
			numbers = append(numbers, d.Attempt)
		}
	}
	if !slices.Equal(numbers, []int{1, 2, 3, 4}) {
		t.Errorf("attempt numbers %v, want 1 to 4", numbers)
	}
}

// liveLog records published live events.
type liveLog struct {
	mu  sync.Mutex
	evs []event.Event
}

func (l *liveLog) Publish(evs ...event.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, evs...)
}

// attempts returns the step and attempt of each text delta.
func (l *liveLog) attempts() [][2]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][2]int
	for _, e := range l.evs {
		var d event.DeltaData
		if e.Kind == event.TextDelta && json.Unmarshal(e.Data, &d) == nil {
			out = append(out, [2]int{d.Step, d.Attempt})
		}
	}
	return out
}

// streaming answers like script, passing each text on as a delta.
type streaming struct{ *script }

func (s streaming) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	resp, err := s.script.Stream(ctx, req, onDelta)
	if err == nil && resp.Text != "" && onDelta != nil {
		onDelta(model.Delta{Text: resp.Text})
	}
	return resp, err
}

// A resumed turn's live deltas carry attempt numbers that no run before
// can have used for the step: past the attempts logged and the resumes
// logged, each run counting as one. The marker that counts this run is
// durable before the model is called. A call outside the conversation (a
// summary, logged with the step before) is not taken for a step.
func TestResumedAttempts(t *testing.T) {
	failed := event.ModelCallData{Step: 1, Attempt: 1, Error: "transport", ErrorKind: "transport"}
	for _, tc := range []struct {
		name      string
		prior     []event.Event
		recovered bool
		want      [][2]int
		steps     int
	}{
		{name: "new turn", want: [][2]int{{1, 1}}, steps: 1},
		{name: "recovered before anything was logged", recovered: true, want: [][2]int{{1, 2}}, steps: 1},
		{name: "after a logged failure", prior: []event.Event{
			event.New(1, 7, event.Input, event.InputData{Text: "hello"}),
			event.New(1, 7, event.ModelCall, failed),
		}, want: [][2]int{{1, 3}}, steps: 1},
		{name: "after an earlier resume", prior: []event.Event{
			event.New(1, 7, event.Input, event.InputData{Text: "hello"}),
			event.New(1, 7, event.Marker, event.MarkerData{Name: ResumedMarker}),
		}, want: [][2]int{{1, 3}}, steps: 1},
		{name: "after a summary", prior: []event.Event{
			event.New(1, 7, event.Input, event.InputData{Text: "hello"}),
			event.New(1, 7, event.ModelCall, event.ModelCallData{Step: 0, Attempt: 1, InputTokens: 5}),
		}, want: [][2]int{{1, 2}}, steps: 1},
		{name: "in a later step", prior: []event.Event{
			event.New(1, 7, event.Input, event.InputData{Text: "hello"}),
			event.New(1, 7, event.ModelCall, event.ModelCallData{Step: 1, Attempt: 1}),
			event.New(1, 7, event.ToolCall, event.ToolCallData{ID: "a", Name: "read", Args: json.RawMessage(`{}`), Step: 1}),
			event.New(1, 7, event.ToolResult, event.ToolResultData{ID: "a", Name: "read", Output: "read ok"}),
			event.New(1, 7, event.Marker, event.MarkerData{Name: ResumedMarker}),
			event.New(1, 7, event.ModelCall, event.ModelCallData{Step: 2, Attempt: 3, Error: "cut", ErrorKind: "transport"}),
		}, want: [][2]int{{2, 6}}, steps: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h *harness
			markerFirst := false
			p := &script{resps: []func(*model.Request) (*model.Response, error){func(*model.Request) (*model.Response, error) {
				markerFirst = slices.Contains(h.log.kinds(), event.Marker)
				return &model.Response{Text: "answer"}, nil
			}}}
			h = newHarness(t, models{"m": streaming{p}})
			live := &liveLog{}
			h.eng.o.Live = live
			tr := turn(&agent.Definition{})
			tr.Prior, tr.Recovered = tc.prior, tc.recovered
			end, err := h.run(context.Background(), tr)
			if err != nil || end.Status != event.StatusDone || end.Steps != tc.steps {
				t.Fatalf("end %+v err %v", end, err)
			}
			if diff := cmp.Diff(tc.want, live.attempts()); diff != "" {
				t.Errorf("delta (step, attempt) (-want +got):\n%s", diff)
			}
			if resumed := tc.recovered || len(tc.prior) > 0; markerFirst != resumed {
				t.Errorf("a resumed marker was logged before the model call: %v; want %v", markerFirst, resumed)
			}
		})
	}
}

func TestAllModelsFail(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){fail(&model.Error{Kind: model.ErrBadRequest, Provider: "p", Status: 400})}}
	h := newHarness(t, models{"m": p})
	end, err := h.run(context.Background(), turn(&agent.Definition{}))
	if err != nil || end.Status != event.StatusError {
		t.Fatalf("end %+v err %v", end, err)
	}
	if ks := h.log.kinds(); !slices.Contains(ks, event.Error) || ks[len(ks)-1] != event.TurnEnd {
		t.Fatalf("events %v", ks)
	}
}

// Policy: a risky tool is refused unless named; the model sees why.
func TestPolicyDenies(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c", Name: "net", Args: json.RawMessage(`{}`)}), text("ok")}}
	h := newHarness(t, models{"m": p})
	end, err := h.run(context.Background(), turn(&agent.Definition{}))
	if err != nil || end.Status != event.StatusDone {
		t.Fatalf("%+v %v", end, err)
	}
	if h.runs["net"].Load() != 0 {
		t.Fatal("risky tool ran without being allowed")
	}
	last := p.reqs[1].Messages[len(p.reqs[1].Messages)-1]
	if last.Role != model.RoleTool || !last.IsError {
		t.Fatalf("model saw %+v", last)
	}
	for _, s := range p.reqs[0].Tools {
		if s.Name == "net" {
			t.Fatal("a risky tool the policy does not name was offered to the model")
		}
	}
}

func TestCancelAndShutdown(t *testing.T) {
	for _, tc := range []struct {
		cause  error
		status string
	}{
		{ErrCancelled, event.StatusCancelled},
		{ErrInterrupted, event.StatusInterrupted},
		{ErrShutdown, ""},
	} {
		t.Run(tc.cause.Error(), func(t *testing.T) {
			p := &script{resps: []func(*model.Request) (*model.Response, error){
				calls(model.ToolCall{ID: "c", Name: "slow", Args: json.RawMessage(`{}`)})}}
			h := newHarness(t, models{"m": p})
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() {
				for h.runs["slow"].Load() == 0 {
					time.Sleep(time.Millisecond)
				}
				cancel(tc.cause)
			}()
			end, err := h.run(ctx, turn(&agent.Definition{}))
			if tc.status == "" {
				if !errors.Is(err, ErrShutdown) || slices.Contains(h.log.kinds(), event.TurnEnd) {
					t.Fatalf("shutdown: err %v events %v; want the turn left unfinished", err, h.log.kinds())
				}
				return
			}
			if err != nil || end.Status != tc.status {
				t.Fatalf("end %+v err %v", end, err)
			}
		})
	}
}

// Resuming after a crash: an unfinished non-idempotent call is recorded as
// interrupted, an unfinished read-only call runs again.
func TestResume(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("resumed")}}
	h := newHarness(t, models{"m": p})
	tr := turn(&agent.Definition{})
	tr.Prior = []event.Event{
		event.New(1, 7, event.Input, event.InputData{Text: "hello"}),
		event.New(1, 7, event.ModelCall, event.ModelCallData{Step: 1, OutputTokens: 3}),
		event.New(1, 7, event.ToolCall, event.ToolCallData{ID: "a", Name: "send_money", Args: json.RawMessage(`{}`), Step: 1}),
		event.New(1, 7, event.ToolCall, event.ToolCallData{ID: "b", Name: "read", Args: json.RawMessage(`{}`), Step: 1}),
	}
	end, err := h.run(context.Background(), tr)
	if err != nil || end.Status != event.StatusDone || end.Steps != 2 {
		t.Fatalf("end %+v err %v", end, err)
	}
	if h.runs["send_money"].Load() != 0 || h.runs["read"].Load() != 1 {
		t.Fatalf("send_money ran %d times, read %d; want 0 and 1", h.runs["send_money"].Load(), h.runs["read"].Load())
	}
	results := map[string]event.ToolResultData{}
	for _, e := range h.log.events {
		var d event.ToolResultData
		if e.Kind == event.ToolResult && e.Decode(&d) == nil {
			results[d.ID] = d
		}
	}
	if r := results["a"]; !r.Interrupted || r.Output != InterruptedOutput {
		t.Fatalf("send_money result %+v", r)
	}
	if r := results["b"]; r.Interrupted || r.Output != "read ok" {
		t.Fatalf("read result %+v", r)
	}
	// The model saw both calls answered, in a valid conversation.
	msgs := p.reqs[0].Messages
	if len(msgs) != 4 || msgs[1].Role != model.RoleAssistant || msgs[2].Role != model.RoleTool || msgs[3].Role != model.RoleTool {
		t.Fatalf("messages %+v", msgs)
	}
}

// Tool calls of one step run in parallel.
func TestParallelTools(t *testing.T) {
	var inFlight, peak atomic.Int32
	h := newHarness(t, nil)
	h.tools.Register(tool.Func(tool.Spec{Name: "wait", ReadOnly: true}, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for peak.Load() < 3 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		inFlight.Add(-1)
		return tool.Result{Output: "done"}, nil
	}))
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "1", Name: "wait"}, model.ToolCall{ID: "2", Name: "wait"}, model.ToolCall{ID: "3", Name: "wait"}), text("ok")}}
	h.eng.o.Models = models{"m": p}
	if _, err := h.run(context.Background(), turn(&agent.Definition{})); err != nil {
		t.Fatal(err)
	}
	if peak.Load() != 3 {
		t.Fatalf("at most %d calls ran at once, want 3", peak.Load())
	}
}

// A store failure leaves the turn unfinished instead of losing it.
func TestStoreFailure(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("x")}}
	h := newHarness(t, models{"m": p})
	h.log.fail = errors.New("disk full")
	if _, err := h.run(context.Background(), turn(&agent.Definition{})); err == nil {
		t.Fatal("Run succeeded although nothing could be written")
	}
}

// A live text delta is valid JSON whatever the model sent, and decodes to
// what it sent (invalid UTF-8 as U+FFFD).
func FuzzDeltaJSON(f *testing.F) {
	for _, s := range []string{"", "hello ", "esc \x1b[A", "\x00\x1f\x7f", "\u2028\u2029", "bad \xff"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, reasoning bool) {
		b := deltaJSON(model.Delta{Text: s, Reasoning: reasoning}, 2, 3)
		var d event.DeltaData
		if !json.Valid(b) || json.Unmarshal(b, &d) != nil {
			t.Fatalf("%q: %s is not valid JSON", s, b)
		}
		ref, _ := json.Marshal(s)
		var want string
		json.Unmarshal(ref, &want)
		if d != (event.DeltaData{Text: want, Reasoning: reasoning, Step: 2, Attempt: 3}) {
			t.Fatalf("%q: decodes as %+v", s, d)
		}
	})
}

// The model is offered the tools the agent may use: the built-in ones its
// tools.builtin names (every one when left out) that serve it, minus what
// its policy denies; and the tools of the servers it uses.
func TestOfferedTools(t *testing.T) {
	obj := json.RawMessage(`{"type":"object"}`)
	extra := []tool.Spec{
		{Name: "gated", InputSchema: obj, Serves: func(agentID string) bool { return agentID == "trusted" }},
		{Name: "srv__tool", InputSchema: obj, Server: "srv"},
		{Name: "mine__tool", InputSchema: obj, Server: "mine", Scope: []string{"a"}},
		{Name: "srv__ctx", InputSchema: obj, Server: "srv", Kind: tool.KindContext},
	}
	tests := []struct {
		name string
		def  agent.Definition
		want []string
	}{
		{"everything safe", agent.Definition{}, []string{"mine__tool", "read", "send_money", "slow", "srv__tool"}},
		{"served", agent.Definition{ID: "trusted"}, []string{"gated", "read", "send_money", "slow", "srv__tool"}},
		{"not served", agent.Definition{ID: "other"}, []string{"read", "send_money", "slow", "srv__tool"}},
		{"a built-in set", agent.Definition{Tools: agent.ToolPolicy{Builtin: []string{"re*", "net"}}}, []string{"mine__tool", "read", "srv__tool"}},
		{"no built-in", agent.Definition{Tools: agent.ToolPolicy{Builtin: []string{}}, Servers: []string{}}, []string{"mine__tool"}},
		{"an allow list", agent.Definition{Tools: agent.ToolPolicy{Allow: []string{"read", "net", "srv__*"}}}, []string{"net", "read", "srv__tool"}},
		{"deny and ask", agent.Definition{Tools: agent.ToolPolicy{Deny: []string{"s*"}, Ask: []string{"net"}}}, []string{"mine__tool", "net", "read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &script{resps: []func(*model.Request) (*model.Response, error){text("ok")}}
			h := newHarness(t, models{"m": p})
			for _, s := range extra {
				if err := h.tools.Register(tool.Func(s, func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{}, nil })); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := h.run(context.Background(), turn(&tt.def)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range p.reqs[0].Tools {
				got = append(got, s.Name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("offered (-want +got):\n%s", diff)
			}
		})
	}
}

// A turn must say where its writes go; without a log it does not start.
func TestTurnWithoutLog(t *testing.T) {
	h := newHarness(t, models{"m": &script{}})
	if _, err := h.eng.Run(context.Background(), turn(&agent.Definition{})); !errors.Is(err, errNoLog) {
		t.Errorf("Run: %v, want errNoLog", err)
	}
	if _, err := h.eng.Compact(context.Background(), turn(&agent.Definition{})); !errors.Is(err, errNoLog) {
		t.Errorf("Compact: %v, want errNoLog", err)
	}
}

// A tool registered while a turn runs (a skill's server connecting, say) is
// offered from the turn's next step on, though a turn finds its tools once
// while the registry stays the same; a tool registered again under its
// name with another description is offered as it now is, not as kept.
func TestOfferedToolsChange(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c1", Name: "register", Args: json.RawMessage(`{}`)}), text("done"), text("again"),
	}}
	h := newHarness(t, models{"m": p})
	obj := json.RawMessage(`{"type":"object"}`)
	late := func(desc string) tool.Tool {
		return tool.Func(tool.Spec{Name: "late", Description: desc, InputSchema: obj, ReadOnly: true},
			func(context.Context, *tool.Call) (tool.Result, error) { return tool.Result{}, nil })
	}
	err := h.tools.Register(tool.Func(tool.Spec{Name: "register", InputSchema: obj, ReadOnly: true},
		func(context.Context, *tool.Call) (tool.Result, error) {
			return tool.Result{Output: "ok"}, h.tools.Register(late("first"))
		}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.run(context.Background(), turn(&agent.Definition{})); err != nil {
		t.Fatal(err)
	}
	h.tools.Unregister("late")
	if err := h.tools.Register(late("second")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run(context.Background(), turn(&agent.Definition{})); err != nil {
		t.Fatal(err)
	}
	desc := func(req *model.Request) string {
		for _, s := range req.Tools {
			if s.Name == "late" {
				return s.Description
			}
		}
		return "(not offered)"
	}
	var got []string
	for _, req := range p.reqs {
		got = append(got, desc(req))
	}
	if diff := cmp.Diff([]string{"(not offered)", "first", "second"}, got); diff != "" {
		t.Errorf("the late tool's description in each request (-want +got):\n%s", diff)
	}
	// What a client kept of a tool is kept with it while it stays the same.
	wire := func(req *model.Request, name string) *model.Encoded {
		for _, s := range req.Tools {
			if s.Name == name {
				return s.Wire
			}
		}
		return nil
	}
	if w0, w2 := wire(p.reqs[0], "register"), wire(p.reqs[2], "register"); w0 == nil || w0 != w2 {
		t.Errorf("the register tool's encodings are not kept across turns: %p, %p", w0, w2)
	}
	if w1, w2 := wire(p.reqs[1], "late"), wire(p.reqs[2], "late"); w1 == nil || w1 == w2 {
		t.Errorf("the late tool, changed, keeps its encodings: %p, %p", w1, w2)
	}
}

// TestBuiltinCache: the cache answers what Definition.OffersBuiltin does,
// for names and patterns, and a definition loaded anew (a new value) gets
// its own answers.
func TestBuiltinCache(t *testing.T) {
	var c builtinCache
	def := &agent.Definition{}
	def.Tools.Builtin = []string{"clock", "wm_*"}
	for _, name := range []string{"clock", "wm_get", "wm_set", "recall", "clock", "recall"} {
		if got, want := c.offers(def, name), def.OffersBuiltin(name); got != want {
			t.Errorf("offers(%q) = %v, want %v", name, got, want)
		}
	}
	edited := &agent.Definition{}
	edited.Tools.Builtin = []string{"recall"}
	if !c.offers(edited, "recall") || c.offers(edited, "clock") {
		t.Error("a new definition got the answers of the old one")
	}
	all := &agent.Definition{} // no list: every built-in tool
	if !c.offers(all, "anything") {
		t.Error("a definition without a list does not offer every built-in tool")
	}
}
