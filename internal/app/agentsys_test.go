package app

import (
	"context"
	"testing"
	"time"

	"agentd/internal/agentsys"
	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// A person's background agent runs as an instance of its template (the
// registry resolves its id), finishes and reports to the session named.
func TestAgentSystemWired(t *testing.T) {
	a := newBench(t, "match *\nsay finished\n", "normal")
	if a.AgentSys == nil {
		t.Fatal("no agent system")
	}
	ctx := context.Background()
	in, err := a.AgentSys.Start(ctx, agentsys.StartRequest{Template: "bench", Prompt: "work", Key: "k1", ReportTo: "bench/inbox"})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := a.Agents.Get(in.ID)
	if !ok || d.Template != "bench" || d.Type != store.InstanceBackground {
		t.Fatalf("the registry resolves %s to %+v", in.ID, d)
	}
	end, err := a.Runtime.Wait(ctx, in.Turn)
	if err != nil || end.Status != event.StatusDone {
		t.Fatalf("the agent's turn: %+v %v", end, err)
	}
	// The runtime's Ended hook, or the sweep, finishes it; recovery does
	// the same at once.
	if err := a.AgentSys.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := a.AgentSys.Status(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != store.AgentDone || st.Result != "finished" || st.ReportedAt.IsZero() || st.ReportError != "" {
		t.Errorf("status %+v", st)
	}
	// The report is accepted once; its turn logs it.
	reports := func() int {
		sess, err := a.Store.SessionByAddress(ctx, "bench", "inbox")
		if err != nil {
			t.Fatal(err)
		}
		evs, err := a.Store.Events(ctx, sess.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			var d event.InputData
			if ev.Kind == event.SystemMessage && ev.Decode(&d) == nil && d.Origin == in.ID {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); reports() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if n := reports(); n != 1 {
		t.Errorf("%d reports in bench/inbox", n)
	}
}

// A guard's event is logged in the caller's session and published.
func TestAgentGuardEventLogged(t *testing.T) {
	a := newBench(t, "match *\nsay ok\n", "normal")
	ctx := context.Background()
	rc, _, err := a.Runtime.Send(ctx, runtime.Input{Session: "bench/main", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	sub := a.Bus.Subscribe(rc.SessionID, 16)
	defer sub.Close()
	d := event.AgentData{Op: event.AgentGuard, Guard: "max_hops", Limit: 10, Value: 11, Target: "other"}
	if err := (agentEvents{a.Store, a.Bus}).RecordAgent(ctx, "bench/main", rc.Turn, d); err != nil {
		t.Fatal(err)
	}
	ev := <-sub.C
	var got event.AgentData
	if ev.Kind != event.Agent || ev.Seq == 0 || ev.Turn != rc.Turn || ev.Decode(&got) != nil || got != d {
		t.Errorf("published %+v (%+v)", ev, got)
	}
}
