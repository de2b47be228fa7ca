package agentsys

import (
	"context"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/store"
)

// Each test here leaves one window of the recovery table open, as a crash
// would, and checks that Recover (or the sweep) closes it.

func TestRecoverSubmitsAStartedInstancesInput(t *testing.T) {
	h := newHarness(t, nil)
	rc, _ := h.send("assistant/main", "hello")
	// The row is written, the crash comes before its input.
	in := store.Instance{ID: h.sys.ids.next(), Type: store.InstanceSubagent, Descriptor: TaskDescriptor("assistant/main", "c1").String(),
		Template: "worker", Parent: "assistant", Task: "late task", State: store.AgentStarting, Report: store.ReportLoud,
		ReportTo: "assistant/main", OriginTurn: rc.Turn, Payer: "assistant"}
	if _, _, err := h.k.Store.CreateInstance(context.Background(), in, store.InstanceLimits{}); err != nil {
		t.Fatal(err)
	}
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := h.instance(in.ID).State; st != store.AgentStarting {
		t.Fatalf("a fresh starting row (its tool call may still run) is %s", st)
	}
	h.now.add(startingFor + time.Minute)
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := h.reported(in.ID)
	if got.State != store.AgentDone || got.Result != "re: late task" {
		t.Errorf("recovered %+v", got)
	}
}

// A person's start whose first input a crash lost is submitted by
// recovery with the budgets the person tightened, kept on its row.
func TestRecoverKeepsAPersonsBudgets(t *testing.T) {
	h := newHarness(t, nil)
	budgets := &agent.Budgets{MaxSteps: 3, MaxUSDPerTurn: 0.5}
	tpl, _ := h.sys.definition("worker")
	// The row is written as Start writes it; the crash comes before its input.
	in, err := h.sys.newTask(context.Background(), StartRequest{Template: "worker", Prompt: "nightly digest", Key: "k1",
		ReportTo: "assistant/inbox", Budgets: budgets}, nil, tpl, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.k.Store.CreateInstance(context.Background(), in, store.InstanceLimits{}); err != nil {
		t.Fatal(err)
	}
	h.now.add(startingFor + time.Minute)
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := h.reported(in.ID)
	it, err := h.k.Store.InboxItem(context.Background(), got.Turn)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := engine.ParseLifecycleOptions(it.Options)
	if err != nil || opts.Budgets == nil || *opts.Budgets != *budgets {
		t.Errorf("recovered first input's options %s (%v), want budgets %+v", it.Options, err, *budgets)
	}
}

func TestRecoverFinishesATaskWhoseEndWasLost(t *testing.T) {
	h := newHarness(t, &harnessOptions{noHook: true}) // no turn end reaches the supervisor
	in := h.startChild(StartRequest{Prompt: "task", Template: "worker"})
	if _, err := h.k.Runtime.Wait(context.Background(), in.Turn); err != nil {
		t.Fatal(err)
	}
	if st := h.instance(in.ID).State; st != store.AgentRunning {
		t.Fatalf("state %s before recovery", st)
	}
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := h.reported(in.ID)
	if got.State != store.AgentDone || got.Result != "re: task" {
		t.Errorf("recovered %+v", got)
	}
	h.eventually("one report", func() bool { return len(h.reports("assistant/main", in.ID)) == 1 })
}

func TestRecoverReportsOnceWhateverWasRecorded(t *testing.T) {
	h := newHarness(t, &harnessOptions{noHook: true})
	in := h.startChild(StartRequest{Prompt: "task", Template: "worker"})
	if _, err := h.k.Runtime.Wait(context.Background(), in.Turn); err != nil {
		t.Fatal(err)
	}
	// Ended, not reported: the crash came between.
	if _, err := h.k.Store.SetInstanceState(context.Background(), in.ID, store.AgentDone, "re: task", 0); err != nil {
		t.Fatal(err)
	}
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.reported(in.ID)
	// Reported, the bookmark not recorded: a second submit is a duplicate.
	row := h.instance(in.ID)
	c, err := h.sys.cost(context.Background(), row)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := h.k.Runtime.Submit(context.Background(), reportInput(row, c, 100))
	if err != nil || !rc.Duplicate {
		t.Errorf("report submitted again: %+v, %v", rc, err)
	}
	h.eventually("the parent's turn", func() bool { return len(h.reports("assistant/main", in.ID)) == 1 })
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(h.reports("assistant/main", in.ID)); n != 1 {
		t.Errorf("%d reports", n)
	}
}

func TestRecoverStopsTheChildrenOfACancelledTurn(t *testing.T) {
	h := newHarness(t, &harnessOptions{noHook: true})
	rc, child := h.slowParent()
	if err := h.k.Runtime.Cancel(context.Background(), "assistant/main"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.k.Runtime.Wait(context.Background(), rc.Turn); err != nil {
		t.Fatal(err)
	}
	if st := h.instance(child.ID).State; store.AgentEnded(st) {
		t.Fatalf("child %s before recovery", st)
	}
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := h.instance(child.ID).State; st != store.AgentStopped {
		t.Errorf("child %s after recovery", st)
	}
}

func TestRecoverAfterARestart(t *testing.T) {
	h := newHarness(t, &harnessOptions{noRun: true})
	in := h.startChild(StartRequest{Prompt: "task", Template: "worker"})
	if _, err := h.k.Runtime.Wait(context.Background(), in.Turn); err != nil {
		t.Fatal(err)
	}
	path := h.k.Path
	h.k.Close()
	// A new node on the same database: its supervisor's first sweep
	// finishes and reports the task.
	h2 := newHarness(t, &harnessOptions{path: path})
	got := h2.reported(in.ID)
	if got.State != store.AgentDone {
		t.Errorf("after restart %+v", got)
	}
}

// leader grants the lead when it is told to.
type leader struct {
	grant bool
	lost  chan struct{}
}

func (l *leader) TryLead(ctx context.Context, role string) (store.Lead, error) {
	if !l.grant || role != LeadRole {
		return nil, nil
	}
	return lead{l.lost}, nil
}

type lead struct{ lost chan struct{} }

func (l lead) Lost() <-chan struct{} { return l.lost }
func (l lead) Release()              {}

func TestOnlyTheLeaderSweeps(t *testing.T) {
	h := newHarness(t, &harnessOptions{noHook: true, noRun: true})
	l := &leader{lost: make(chan struct{})}
	h.sys.o.Lead = l
	in := h.startChild(StartRequest{Prompt: "task", Template: "worker"})
	if _, err := h.k.Runtime.Wait(context.Background(), in.Turn); err != nil {
		t.Fatal(err)
	}
	h.sys.sup.sweep(context.Background(), true)
	if st := h.instance(in.ID).State; st != store.AgentRunning {
		t.Fatalf("a node that does not lead swept: %s", st)
	}
	l.grant = true
	h.sys.sup.sweep(context.Background(), false) // the lead just taken: a full pass
	if st := h.instance(in.ID).State; st != store.AgentDone {
		t.Errorf("the leader did not sweep: %s", st)
	}
}

func TestRecoverMakesAPermanentAgentsInstance(t *testing.T) {
	h := newHarness(t, &harnessOptions{noRun: true})
	spec := []byte(`{"type":"permanent","name":"scribe","model":{"provider":"echo","name":"echo"}}`)
	for _, e := range []store.Extension{
		{Type: "agent", Name: "scribe", Spec: spec, Enabled: true, Provenance: store.ProvenanceAgent + "assistant", CreatedBy: store.ProvenanceAgent + "assistant"},
		{Type: "agent", Name: "filed", Spec: spec, Enabled: true, Provenance: store.ProvenanceUser, CreatedBy: store.ProvenanceUser},
	} {
		if _, err := h.k.Store.PutExtension(context.Background(), e, "put", 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	in, err := h.k.Store.InstanceByAgent(context.Background(), "scribe")
	if err != nil || in.Type != store.InstancePermanent || in.Parent != "assistant" || in.Descriptor != "permanent:scribe" {
		t.Fatalf("scribe %+v, %v", in, err)
	}
	if _, err := h.k.Store.InstanceByAgent(context.Background(), "filed"); err == nil {
		t.Error("a person's agent row got an instance")
	}
	again, err := h.sys.Permanent(context.Background(), "scribe", "assistant")
	if err != nil || again.ID != in.ID {
		t.Errorf("again %s, %v; want %s", again.ID, err, in.ID)
	}
}

func TestRecoverFinishesATaskClosedButNotEnded(t *testing.T) {
	h := newHarness(t, &harnessOptions{noHook: true})
	in := h.startChild(StartRequest{Prompt: "task", Template: "worker"})
	if _, err := h.k.Runtime.Wait(context.Background(), in.Turn); err != nil {
		t.Fatal(err)
	}
	// The session was closed, the crash came before the row ended.
	h.eventually("the session closed", func() bool {
		return h.k.Runtime.CloseSession(context.Background(), in.ID+"/main") == nil
	})
	if err := h.sys.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.reported(in.ID); got.State != store.AgentDone {
		t.Errorf("recovered %+v", got)
	}
	if closed := h.count(in.ID+"/main", event.Marker); closed != 1 {
		t.Errorf("%d markers, want one closed", closed)
	}
}
