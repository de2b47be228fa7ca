package agentsys

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestReportText(t *testing.T) {
	base := store.Instance{ID: "ck3xa9b2c4d5e6f7g8h9i0j1", Type: store.InstanceSubagent, Agent: "ck3xa9b2c4d5e6f7g8h9i0j1",
		Template: "researcher", Name: "researcher", Report: store.ReportLoud, ReportTo: "assistant/main"}
	with := func(f func(*store.Instance)) store.Instance { in := base; f(&in); return in }
	for _, c := range []struct {
		name  string
		in    store.Instance
		cost  Cost
		limit int
	}{
		{"done", with(func(in *store.Instance) { in.State, in.Result = store.AgentDone, "The answer is 42." }),
			Cost{USD: 0.0123, Calls: 3, InputTokens: 1204, OutputTokens: 311, Descendants: 2}, 16384},
		{"done-one-call", with(func(in *store.Instance) {
			in.Type, in.Name, in.State, in.Result = store.InstanceBackground, "", store.AgentDone, "ok"
		}), Cost{USD: 0.00004, Calls: 1, InputTokens: 10, OutputTokens: 2}, 16384},
		{"done-cut", with(func(in *store.Instance) { in.State, in.Result = store.AgentDone, strings.Repeat("é", 20) }),
			Cost{USD: 1, Calls: 2}, 15},
		{"failed", with(func(in *store.Instance) {
			in.State, in.Result = store.AgentFailed, "budget: max_usd_per_turn of turn assistant/main:7\nmore"
		}), Cost{USD: 0.5, Calls: 4, InputTokens: 100, OutputTokens: 50, Descendants: 1}, 16384},
		{"stopped", with(func(in *store.Instance) { in.State, in.Result = store.AgentStopped, "by ann: enough" }),
			Cost{}, 16384},
	} {
		t.Run(c.name, func(t *testing.T) {
			golden(t, filepath.Join("report", c.name+".golden"), reportText(c.in, c.cost, c.limit))
		})
	}
}

func TestReportInput(t *testing.T) {
	in := store.Instance{ID: "ck3xa9b2c4d5e6f7g8h9i0j1", Type: store.InstanceSubagent, Report: store.ReportSilent,
		ReportTo: "assistant/main", State: store.AgentDone, Hops: 2}
	got := reportInput(in, Cost{}, 100)
	if got.Session != "assistant/main" || !got.System || !got.Silent || got.Origin != in.ID ||
		got.IdempotencyKey != "agent-report:"+in.ID || got.Source != "agent-report" {
		t.Errorf("report input %+v", got)
	}
}

// TestReportCarriesTheHopsOfTheLastInput: a child's report carries on the
// hops of the last input it served, not only of its first message: a
// child that a message 5 hops down a chain kept working reports with 6,
// so a parent woken by the report cannot loop past the limit.
func TestReportCarriesTheHopsOfTheLastInput(t *testing.T) {
	h := newHarness(t, nil)
	release := h.holdText("slow")
	child := h.startChild(StartRequest{Prompt: "slow part", Template: "worker"})
	if child.Hops != 1 {
		t.Fatalf("the child's first message has %d hops, want 1", child.Hops)
	}
	if _, _, err := h.sys.Send(context.Background(), SendRequest{Caller: "assistant", CallerSession: "assistant/main", CallID: "m1",
		Hops: 4, Target: child.ID, Text: "one more thing"}); err != nil {
		t.Fatal(err)
	}
	release()
	h.reported(child.ID)
	var reps []event.InputData
	h.eventually("the report in the parent's log", func() bool { reps = h.reports("assistant/main", child.ID); return len(reps) > 0 })
	if len(reps) != 1 || reps[0].Hops != 6 {
		t.Errorf("the reports %+v; want one of 6 hops (its last input's 5, plus one)", reps)
	}
}

// A report its parent's session accepted, recorded as delivered, and then
// refused at its turn's start (the parent was stopped with the report
// queued) is recorded as refused: the parent never took it in.
func TestReportRefusedAfterItWasAccepted(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	release := h.holdTexts("parent task")
	p := h.startChild(StartRequest{Prompt: "parent task", Template: "worker"})
	h.eventually("the parent's turn running", func() bool { return h.model.Active() == 1 })
	c, err := h.sys.Start(ctx, StartRequest{Caller: p.Agent, CallerSession: mainSession(p.Agent), Turn: p.Turn, CallID: "call_1",
		Prompt: "child task", Template: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.reported(c.ID); got.ReportError != "" {
		t.Fatalf("the child's report, queued behind its parent's turn: %q, want delivered", got.ReportError)
	}
	if _, err := h.sys.Stop(ctx, p.ID, "enough", "test"); err != nil {
		t.Fatal(err)
	}
	release[0]()
	h.eventually("the child's report recorded as refused", func() bool { return h.instance(c.ID).ReportError != "" })
	if got := h.instance(c.ID).ReportError; got != "report refused: "+runtime.StoppedReason {
		t.Errorf("the refused report's error is %q", got)
	}
	if n := len(h.reports(mainSession(p.Agent), c.ID)); n != 0 {
		t.Errorf("the parent's log holds the refused report %d times", n)
	}
}

// A report accepted and then refused at its turn's start, before a crash
// let it be recorded, is recorded as refused when it is made again (its
// redelivery is a duplicate of the refused input), not as delivered.
func TestReportRefusedBeforeACrash(t *testing.T) {
	h := newHarness(t, &harnessOptions{noRun: true, noHook: true})
	ctx := context.Background()
	h.holdTexts("parent task")
	p := h.startChild(StartRequest{Prompt: "parent task", Template: "worker"})
	h.eventually("the parent's turn running", func() bool { return h.model.Active() == 1 })
	c, err := h.sys.Start(ctx, StartRequest{Caller: p.Agent, CallerSession: mainSession(p.Agent), Turn: p.Turn, CallID: "call_1",
		Prompt: "child task", Template: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.k.Runtime.Wait(ctx, c.Turn); err != nil {
		t.Fatal(err)
	}
	if _, err := h.k.Store.SetInstanceState(ctx, c.ID, store.AgentDone, "re: child task", 0); err != nil {
		t.Fatal(err)
	}
	// The report is accepted, queued behind the parent's turn, and
	// refused when the parent is stopped; the crash loses its record.
	rc, err := h.k.Runtime.Submit(ctx, reportInput(h.instance(c.ID), Cost{}, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.k.Runtime.Stop(ctx, mainSession(p.Agent), "enough"); err != nil {
		t.Fatal(err)
	}
	if end, err := h.k.Runtime.Wait(ctx, rc.Turn); err != nil || end.Reason != runtime.StoppedReason {
		t.Fatalf("the queued report ended %+v, %v; want refused", end, err)
	}
	if err := h.sys.report(ctx, h.instance(c.ID)); err != nil {
		t.Fatal(err)
	}
	if got := h.instance(c.ID); got.ReportedAt.IsZero() || got.ReportError != "report refused: "+runtime.StoppedReason {
		t.Errorf("the report made again: reported at %v, error %q; want refused: %s", got.ReportedAt, got.ReportError, runtime.StoppedReason)
	}
}
