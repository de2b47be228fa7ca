package agentsys

import (
	"context"
	"errors"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/store"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestHopLimit(t *testing.T) {
	h := newHarness(t, &harnessOptions{cfg: agent.AgentsConfig{MaxHops: 3}})
	rc, _ := h.send("assistant/main", "hello")
	base := StartRequest{Caller: "assistant", CallerSession: "assistant/main", Turn: rc.Turn, Template: "worker", Prompt: "go"}
	ok := base
	ok.Hops, ok.CallID = 2, "c1"
	if _, err := h.sys.Start(context.Background(), ok); err != nil {
		t.Fatalf("hops 2+1 of 3: %v", err)
	}
	over := base
	over.Hops, over.CallID = 3, "c2"
	if _, err := h.sys.Start(context.Background(), over); !errors.Is(err, ErrHops) {
		t.Fatalf("hops 3+1 of 3: %v", err)
	}
	_, _, err := h.sys.Send(context.Background(), SendRequest{Caller: "assistant", CallerSession: "assistant/main", Turn: rc.Turn,
		CallID: "c3", Hops: 3, Target: "assistant", Text: "loop"})
	if !errors.Is(err, ErrHops) {
		t.Fatalf("send past the limit: %v", err)
	}
	_, err = h.sys.Ask(context.Background(), AskRequest{Caller: "assistant", CallerSession: "assistant/main", CallID: "c4",
		Hops: 5, Target: "assistant", Question: "loop?"})
	if !errors.Is(err, ErrHops) {
		t.Fatalf("ask past the limit: %v", err)
	}
	want := []event.AgentData{
		{Op: event.AgentGuard, Guard: "max_hops", Limit: 3, Value: 4, Target: "worker"},
		{Op: event.AgentGuard, Guard: "max_hops", Limit: 3, Value: 4, Target: "assistant"},
		{Op: event.AgentGuard, Guard: "max_hops", Limit: 3, Value: 6, Target: "assistant"},
	}
	if diff := cmp.Diff(want, h.rec.events(), cmpopts.IgnoreFields(event.AgentData{}, "Reason")); diff != "" {
		t.Errorf("guard events (-want +got):\n%s", diff)
	}
}

func TestChildLimits(t *testing.T) {
	h := newHarness(t, &harnessOptions{cfg: agent.AgentsConfig{MaxChildren: 2, MaxDepth: 1, MaxLive: 3}})
	h.allowDetach("assistant")
	h.holdText("slow")
	rc, _ := h.send("assistant/main", "hello")
	start := func(call string, r StartRequest) (store.Instance, error) {
		if r.Caller == "" {
			r.Caller, r.CallerSession, r.Turn = "assistant", "assistant/main", rc.Turn
		}
		r.CallID, r.Prompt = call, "slow"
		if r.Template == "" {
			r.Template = "worker"
		}
		return h.sys.Start(context.Background(), r)
	}
	a, err := start("a", StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := start("b", StartRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := start("c", StartRequest{}); !errors.Is(err, store.ErrLimit) {
		t.Fatalf("third child of 2: %v", err)
	} else if want := "agentsys: start worker: agent limit reached: max_children 2"; err.Error() != want {
		t.Errorf("third child of 2: %q, want %q (the limit, in the words of agentsys alone)", err, want)
	}
	// A child may not start its own: depth 2 of 1.
	if _, err := start("d", StartRequest{Caller: a.ID, CallerSession: a.ID + "/main", Turn: a.Turn}); !errors.Is(err, store.ErrLimit) {
		t.Fatalf("depth 2 of 1: %v", err)
	}
	// A detached agent is no child of the caller's, but counts live.
	if _, err := start("e", StartRequest{Detached: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := start("f", StartRequest{Detached: true}); !errors.Is(err, store.ErrLimit) {
		t.Fatalf("fourth live of 3: %v", err)
	}
	var got []string
	for _, e := range h.rec.events() {
		got = append(got, e.Guard)
	}
	if diff := cmp.Diff([]string{"max_children", "max_depth", "max_live"}, got); diff != "" {
		t.Errorf("guards (-want +got):\n%s", diff)
	}
	// The definition's own max_children is the caller's limit.
	own := *h.defs["assistant"]
	own.Agents.MaxChildren = 5
	if l := h.sys.limits(&own); l.MaxChildren != 5 {
		t.Errorf("limits %+v", l)
	}
}

func TestLimitOf(t *testing.T) {
	for _, c := range []struct {
		err   error
		name  string
		limit int
	}{
		{errors.Join(errors.New("x"), store.ErrLimit), "limit", 0},
		{wrapLimit("max_children 8"), "max_children", 8},
		{wrapLimit("max_live 2000"), "max_live", 2000},
	} {
		if n, l := limitOf(c.err); n != c.name || l != c.limit {
			t.Errorf("%v: %s %d", c.err, n, l)
		}
	}
}

func wrapLimit(s string) error { return errorsf("agentsys: start worker: %w: %s", store.ErrLimit, s) }
