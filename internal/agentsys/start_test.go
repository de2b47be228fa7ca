package agentsys

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/store"
)

func TestBehavioursCoverTypes(t *testing.T) {
	for _, typ := range agent.Types() {
		if _, ok := behaviours[typ]; !ok {
			t.Errorf("agent type %s has no behaviour", typ)
		}
	}
	if len(behaviours) != len(agent.Types()) {
		t.Errorf("%d behaviours for %d agent types", len(behaviours), len(agent.Types()))
	}
	for _, typ := range store.InstanceTypes() {
		if !slices.Contains(agent.Types(), typ) {
			t.Errorf("instance type %s is no agent type", typ)
		}
	}
}

// startChild sends the parent a message (so its session and turn exist)
// and starts a sub-agent from that turn.
func (h *harness) startChild(req StartRequest) store.Instance {
	h.t.Helper()
	if req.Caller == "" {
		req.Caller = "assistant"
	}
	if req.CallerSession == "" {
		req.CallerSession = req.Caller + "/main"
	}
	if req.Turn == 0 {
		rc, _ := h.send(req.CallerSession, "hello")
		req.Turn = rc.Turn
	}
	if req.CallID == "" {
		req.CallID = "call_1"
	}
	in, err := h.sys.Start(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	return in
}

func TestSubagentReportsOnce(t *testing.T) {
	h := newHarness(t, nil)
	in := h.startChild(StartRequest{Prompt: "count to 3", Template: "worker", Name: "counter"})
	if in.Type != store.InstanceSubagent || in.Parent != "assistant" || in.Template != "worker" || in.Depth != 1 ||
		in.ReportTo != "assistant/main" || in.Report != store.ReportLoud || in.Payer != "assistant" || in.Account == "" {
		t.Fatalf("instance %+v", in)
	}
	in = h.reported(in.ID)
	if in.State != store.AgentDone || in.Result != "re: count to 3" || in.ReportError != "" {
		t.Fatalf("ended %+v", in)
	}
	h.eventually("the report in the parent's log", func() bool { return len(h.reports("assistant/main", in.ID)) == 1 })
	r := h.reports("assistant/main", in.ID)[0]
	if !strings.HasPrefix(r.Text, "agent "+in.ID+` (subagent "counter", template worker) done`) ||
		!strings.Contains(r.Text, "---\nre: count to 3") || r.Silent || r.IdempotencyKey != reportKey(in.ID) {
		t.Errorf("report %+v", r)
	}
	// The child's log starts with its started event, its session is closed.
	evs := h.log(in.ID + "/main")
	var first event.AgentData
	if evs[0].Kind != event.Agent || evs[0].Decode(&first) != nil || first.Op != event.AgentStarted || first.Parent != "assistant" {
		t.Errorf("first event of the child %+v", evs[0])
	}
	sess, err := h.k.Store.SessionByAddress(context.Background(), in.ID, "main")
	if err != nil || sess.State != store.StateClosed {
		t.Errorf("child session %+v, %v", sess, err)
	}
	// Reporting again (the supervisor's sweep, a recovery) adds nothing.
	if err := h.sys.report(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(h.reports("assistant/main", in.ID)); n != 1 {
		t.Errorf("%d reports, want 1", n)
	}
}

func TestStartAgainIsTheSameAgent(t *testing.T) {
	h := newHarness(t, nil)
	rc, _ := h.send("assistant/main", "hello")
	req := StartRequest{Caller: "assistant", CallerSession: "assistant/main", Turn: rc.Turn, CallID: "call_7", Prompt: "go"}
	a, err := h.sys.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.sys.Start(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID {
		t.Fatalf("a re-run call started %s, then %s", a.ID, b.ID)
	}
	h.reported(a.ID)
	if inputs := h.count(a.ID+"/main", event.Input); inputs != 1 {
		t.Errorf("%d inputs in the child's log, want 1", inputs)
	}
	if a.Template != "assistant" {
		t.Errorf("template %q: left out, the caller's own", a.Template)
	}
}

func TestSilentReport(t *testing.T) {
	h := newHarness(t, nil)
	in := h.startChild(StartRequest{Prompt: "quietly", Template: "worker", Report: store.ReportSilent})
	h.reported(in.ID)
	h.eventually("the silent report", func() bool { return len(h.reports("assistant/main", in.ID)) == 1 })
	if r := h.reports("assistant/main", in.ID)[0]; !r.Silent {
		t.Errorf("report %+v is not silent", r)
	}
	// A silent report starts no turn: the parent's model saw "hello" only.
	if n := len(h.model.Requests("hello")); n != 1 {
		t.Errorf("%d calls for hello", n)
	}
}

func TestBackgroundStartedByAPerson(t *testing.T) {
	h := newHarness(t, nil)
	budgets := &agent.Budgets{MaxSteps: 3}
	in, err := h.sys.Start(context.Background(), StartRequest{Template: "worker", Prompt: "nightly digest", Key: "k1",
		ReportTo: "assistant/inbox", Budgets: budgets})
	if err != nil {
		t.Fatal(err)
	}
	if in.Type != store.InstanceBackground || in.Parent != "" || in.Descriptor != "task:api:k1" || in.Payer != "worker" || in.Account != "" {
		t.Fatalf("instance %+v", in)
	}
	again, err := h.sys.Start(context.Background(), StartRequest{Template: "worker", Prompt: "nightly digest", Key: "k1"})
	if err != nil || again.ID != in.ID {
		t.Fatalf("same key: %s, %v; want %s", again.ID, err, in.ID)
	}
	h.reported(in.ID)
	h.eventually("the report", func() bool { return len(h.reports("assistant/inbox", in.ID)) == 1 })
}

func TestStartRefusals(t *testing.T) {
	h := newHarness(t, nil)
	rc, _ := h.send("helper/main", "hello")
	for _, c := range []struct {
		name string
		req  StartRequest
		want error
	}{
		{"not allowed", StartRequest{Caller: "helper", CallerSession: "helper/main", Turn: rc.Turn, Template: "worker", Prompt: "x"}, ErrReach},
		{"no template", StartRequest{Caller: "assistant", CallerSession: "assistant/main", Template: "nobody", Prompt: "x"}, ErrNotFound},
		{"person without template", StartRequest{Prompt: "x"}, ErrNotTemplate},
		{"empty prompt", StartRequest{Template: "worker"}, store.ErrInvalid},
		{"unknown caller", StartRequest{Caller: "ghost", Template: "worker", Prompt: "x"}, ErrNotFound},
		{"detached without agents.detach", StartRequest{Caller: "assistant", CallerSession: "assistant/main", Template: "worker", Prompt: "x", Detached: true}, ErrReach},
	} {
		if _, err := h.sys.Start(context.Background(), c.req); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	_, err := h.sys.Start(context.Background(), StartRequest{Caller: "assistant", CallerSession: "assistant/main", Template: "worker", Prompt: "x", Detached: true})
	if err == nil || !strings.Contains(err.Error(), "agents.detach") {
		t.Errorf("a detached start without agents.detach: %v, want an error naming the setting", err)
	}
	// An instance is no template.
	in := h.startChild(StartRequest{Prompt: "x", Template: "worker"})
	if _, err := h.sys.Start(context.Background(), StartRequest{Template: in.ID, Prompt: "x"}); !errors.Is(err, ErrNotTemplate) {
		t.Errorf("instance as template: %v", err)
	}
}
