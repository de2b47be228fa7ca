package agentsys

import (
	"context"
	"fmt"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
)

// The hook is cheap for turns that are not an instance's: they never
// reach the supervisor.
func TestEndedSkipsOtherTurns(t *testing.T) {
	h := newHarness(t, &harnessOptions{noRun: true, noHook: true})
	done := event.TurnEndData{Status: event.StatusDone}
	h.sys.Ended(store.Session{ID: 1, Agent: "assistant", Key: "main"}, store.InboxItem{ID: 5}, done)
	h.sys.Ended(store.Session{ID: 1, Agent: "assistant", Key: "main"}, store.InboxItem{ID: 6}, event.TurnEndData{Status: event.StatusCancelled})
	id := h.sys.ids.next()
	h.sys.Ended(store.Session{ID: 2, Agent: id, Key: "ask:assistant"}, store.InboxItem{ID: 7}, done)
	h.sys.Ended(store.Session{ID: 2, Agent: id, Key: "main"}, store.InboxItem{ID: 8, Silent: true}, done)
	if n := len(h.sys.sup.ch); n != 0 {
		t.Errorf("%d ends handed to the supervisor", n)
	}
	h.sys.Ended(store.Session{ID: 2, Agent: id, Key: "main"}, store.InboxItem{ID: 9}, done)
	h.sys.noteTurn(10)
	h.sys.Ended(store.Session{ID: 1, Agent: "assistant", Key: "main"}, store.InboxItem{ID: 10}, event.TurnEndData{Status: event.StatusCancelled})
	if n := len(h.sys.sup.ch); n != 2 {
		t.Errorf("%d ends handed to the supervisor, want 2", n)
	}
}

// An end the supervisor never heard of (a full channel) is found by the
// periodic sweep once the instance has been quiet for a sweep's time.
func TestSweepFindsALostEnd(t *testing.T) {
	h := newHarness(t, &harnessOptions{noHook: true, sweep: 5 * time.Millisecond})
	in := h.startChild(StartRequest{Prompt: "task", Template: "worker"})
	if _, err := h.k.Runtime.Wait(context.Background(), in.Turn); err != nil {
		t.Fatal(err)
	}
	h.now.add(time.Minute) // quiet for longer than a sweep
	if got := h.reported(in.ID); got.State != store.AgentDone {
		t.Errorf("swept %+v", got)
	}
}

// A cancelled turn's end the supervisor never heard of (a full channel)
// is found by the periodic sweep: the sub-agents it started are stopped
// without waiting for a restart's Recover.
func TestSweepStopsTheChildrenOfACancelledTurn(t *testing.T) {
	h := newHarness(t, &harnessOptions{noHook: true, sweep: 5 * time.Millisecond})
	_, child := h.slowParent()
	if err := h.k.Runtime.Cancel(context.Background(), "assistant/main"); err != nil {
		t.Fatal(err)
	}
	h.eventually("the child stopped by the sweep", func() bool { return h.instance(child.ID).State == store.AgentStopped })
}

// Many agents ending at once are each finished and reported once.
func TestManyAgentsReportOnce(t *testing.T) {
	h := newHarness(t, nil)
	const n = 30
	ids := make([]string, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			in, err := h.sys.Start(context.Background(), StartRequest{Template: "worker", Prompt: fmt.Sprint("task ", i),
				Key: fmt.Sprint("k", i), ReportTo: "assistant/inbox"})
			ids[i] = in.ID
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if in := h.reported(id); in.State != store.AgentDone || in.ReportError != "" {
			t.Errorf("%s: %+v", id, in)
		}
	}
	h.eventually("every report logged", func() bool {
		got := 0
		for _, id := range ids {
			got += len(h.reports("assistant/inbox", id))
		}
		return got >= n
	})
	for _, id := range ids {
		if k := len(h.reports("assistant/inbox", id)); k != 1 {
			t.Errorf("%s reported %d times", id, k)
		}
	}
}
