package agentsys

import (
	"context"
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
