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

// A task whose turn ends done while a sub-agent of it still works does not
// finish: it stays running, its session open, until the sub-agent's report
// is delivered (a loud one starts its next turn, a silent one settles it
// again), so that no report meets it closed. The supervisor is driven by
// hand, end by end.
func TestTaskWaitsForItsSubAgentsReports(t *testing.T) {
	for _, report := range []string{store.ReportLoud, store.ReportSilent} {
		t.Run(report, func(t *testing.T) {
			h := newHarness(t, &harnessOptions{noRun: true})
			ctx := context.Background()
			release := h.holdTexts("parent task", "child task")
			p := h.startChild(StartRequest{Prompt: "parent task", Template: "worker"})
			h.eventually("the parent's turn running", func() bool { return h.model.Active() == 1 })
			c, err := h.sys.Start(ctx, StartRequest{Caller: p.Agent, CallerSession: mainSession(p.Agent), Turn: p.Turn, CallID: "call_1",
				Prompt: "child task", Template: "worker", Report: report})
			if err != nil {
				t.Fatal(err)
			}
			release[0]()
			if _, err := h.k.Runtime.Wait(ctx, p.Turn); err != nil {
				t.Fatal(err)
			}
			h.supervise(func() bool { return len(h.sys.sup.ch) == 0 })
			if got := h.instance(p.ID); got.State != store.AgentRunning {
				t.Fatalf("the parent with a sub-agent at work is %s, want running", got.State)
			}
			release[1]()
			h.supervise(func() bool { return !h.instance(p.ID).ReportedAt.IsZero() })
			if got := h.instance(c.ID); got.State != store.AgentDone || got.ReportError != "" {
				t.Errorf("the sub-agent ended %s, report error %q; want done, delivered", got.State, got.ReportError)
			}
			if got := h.instance(p.ID); got.State != store.AgentDone || got.ReportError != "" {
				t.Errorf("the parent ended %s, report error %q; want done, delivered", got.State, got.ReportError)
			}
			if n := len(h.reports(mainSession(p.Agent), c.ID)); n != 1 {
				t.Errorf("the parent's log holds %d reports of its sub-agent, want 1", n)
			}
		})
	}
}

// supervise does the supervisor's work by hand (a harness made with
// noRun) until done holds: the turn ends handed to it, then the sessions
// it is to close again.
func (h *harness) supervise(done func() bool) {
	h.t.Helper()
	p := h.sys.sup
	h.eventually("the supervisor's work", func() bool {
		select {
		case e := <-p.ch:
			p.handle(context.Background(), e)
			return false
		default:
		}
		retry := p.retry
		p.retry = make(map[string]ended)
		for _, e := range retry {
			p.handle(context.Background(), e)
		}
		return done()
	})
}
