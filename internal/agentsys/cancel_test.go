package agentsys

import (
	"context"
	"errors"
	"testing"

	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"

	"github.com/google/go-cmp/cmp"
)

func TestStopStopsTheSubtreeDeepestFirst(t *testing.T) {
	h := newHarness(t, nil)
	h.allowDetach("worker") // the top one starts a detached agent
	h.holdText("slow")
	top := h.startChild(StartRequest{Prompt: "slow top", Template: "worker", CallID: "top"})
	h.eventually("top running", func() bool { return h.model.Active() >= 1 })
	mid, err := h.sys.Start(context.Background(), StartRequest{Caller: top.ID, CallerSession: top.ID + "/main", Turn: top.Turn,
		CallID: "mid", Prompt: "slow mid", Template: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	if mid.Depth != 2 || mid.Root != "assistant" || mid.Account != top.Account || mid.Payer != "assistant" {
		t.Fatalf("grandchild %+v (top %+v)", mid, top)
	}
	// A detached agent the top one started is not followed.
	bg, err := h.sys.Start(context.Background(), StartRequest{Caller: top.ID, CallerSession: top.ID + "/main", Turn: top.Turn,
		CallID: "bg", Prompt: "slow bg", Template: "worker", Detached: true})
	if err != nil {
		t.Fatal(err)
	}
	stopped, err := h.sys.Stop(context.Background(), top.ID, "enough", "ann")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{mid.ID, top.ID}, stopped); diff != "" {
		t.Errorf("stopped (-want +got):\n%s", diff)
	}
	for _, id := range []string{top.ID, mid.ID} {
		in := h.instance(id)
		if in.State != store.AgentStopped || in.Result != "enough (by ann)" {
			t.Errorf("%s: %+v", id, in)
		}
	}
	if in := h.instance(bg.ID); store.AgentEnded(in.State) {
		t.Errorf("detached agent stopped: %+v", in)
	}
	// The top one reports its stop to its parent; the one below does not
	// (its parent was stopped with it).
	top = h.reported(top.ID)
	if top.ReportError != "" {
		t.Errorf("top's report: %q", top.ReportError)
	}
	h.eventually("top's report", func() bool { return len(h.reports("assistant/main", top.ID)) == 1 })
	if mid = h.reported(mid.ID); mid.ReportError == "" {
		t.Errorf("the grandchild reported to a parent stopped with it")
	}
	// Their logs say they were stopped; their sessions take no input.
	var d event.AgentData
	found := false
	for _, ev := range h.log(mid.ID + "/main") {
		if ev.Kind == event.Agent && ev.Decode(&d) == nil && d.Op == event.AgentStopped {
			found = true
		}
	}
	if !found {
		t.Error("no stopped event in the grandchild's log")
	}
	if _, err := h.k.Runtime.Submit(context.Background(), runtime.Input{Session: mid.ID + "/main", Text: "more"}); !errors.Is(err, runtime.ErrSessionClosed) {
		t.Errorf("input to a stopped agent: %v", err)
	}
	if _, err := h.sys.Stop(context.Background(), top.ID, "again", "ann"); !errors.Is(err, ErrEnded) {
		t.Errorf("stop a stopped agent: %v", err)
	}
	if _, err := h.sys.Stop(context.Background(), "assistant", "", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("stop a definition: %v", err)
	}
}

func TestCancelledTurnStopsItsSubagents(t *testing.T) {
	h := newHarness(t, nil)
	_, child := h.slowParent()
	other := h.startChild(StartRequest{Caller: "helper", Prompt: "slow other", Template: "helper"}) // another agent's turn
	if err := h.k.Runtime.Cancel(context.Background(), "assistant/main"); err != nil {
		t.Fatal(err)
	}
	h.eventually("the child stopped", func() bool { return h.instance(child.ID).State == store.AgentStopped })
	if st := h.instance(other.ID).State; store.AgentEnded(st) {
		t.Errorf("the sub-agent of another agent's turn is %s after the cancel", st)
	}
}

func TestFailedParentStopsItsChildren(t *testing.T) {
	h := newHarness(t, nil)
	release := h.holdTexts("slow top", "slow kid")
	top := h.startChild(StartRequest{Prompt: "slow top", Template: "worker", CallID: "top"})
	h.eventually("the top one's turn running", func() bool { return h.model.Active() == 1 })
	kid, err := h.sys.Start(context.Background(), StartRequest{Caller: top.ID, CallerSession: top.ID + "/main", Turn: top.Turn,
		CallID: "kid", Prompt: "slow kid", Template: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	// The top one's turn ends (done) with its child still running: the
	// top one waits for the child's report and leaves it running; its row
	// failed stops it.
	release[0]()
	if _, err := h.k.Runtime.Wait(context.Background(), top.Turn); err != nil {
		t.Fatal(err)
	}
	if in := h.instance(kid.ID); store.AgentEnded(in.State) {
		t.Fatalf("child of a done parent: %+v", in)
	}
	if _, err := h.k.Store.SetInstanceState(context.Background(), top.ID, store.AgentFailed, "error: failed", 0); err != nil {
		t.Fatal(err)
	}
	in := h.instance(top.ID)
	if err := h.sys.endOf(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if st := h.instance(kid.ID).State; st != store.AgentStopped {
		t.Errorf("child of a failed parent: %s", st)
	}
}
