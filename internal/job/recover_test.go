package job_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// TestRecoverRunsOnce: a fire recorded but not submitted (agentd stopped
// between StartRun and Submit), and one stopped while its turn ran, are
// each run once by the next Runner's Recover: the first is submitted,
// the second's input is found by its idempotency key and waited for;
// both end done, with one model call each.
func TestRecoverRunsOnce(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	agents := testkit.Agents{"assistant": testkit.Agent("assistant")}
	spec := `{"agent":"assistant","prompt":"{{job}} at {{fired_at}}"}`
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

	// The first Runner stops between StartRun and Submit.
	crash := job.New(e.k.Runtime, e.k.Store, agents, &job.Options{BeforeSubmit: func(store.JobRun) error { return errors.New("crash") }})
	(&env{k: e.k, m: e.m, r: crash}).put(t, "a", spec)
	if _, err := crash.Run(ctx, "a", job.Fire{At: at, Trigger: store.TriggerCron}, false); err == nil {
		t.Fatal("run went on past the crash")
	}
	crash.Close()

	// The second stops while its turn runs.
	g := e.m.Gate("b at 2026-11-26T08:00:00Z")
	r2 := job.New(e.k.Runtime, e.k.Store, agents, nil)
	(&env{k: e.k, m: e.m, r: r2}).put(t, "b", spec)
	if _, err := r2.Run(ctx, "b", job.Fire{At: at, Trigger: store.TriggerEvery}, false); err != nil {
		t.Fatal(err)
	}
	<-g.Entered
	r2.Close()
	for _, name := range []string{"a", "b"} {
		if jr, err := e.k.Store.LastRun(ctx, name); err != nil || jr.Status != store.RunRunning {
			t.Fatalf("%s before recovery: %+v %v", name, jr, err)
		}
	}

	// The next start recovers both; firing the same times again is no
	// second run.
	r3 := job.New(e.k.Runtime, e.k.Store, agents, nil)
	t.Cleanup(r3.Close)
	e3 := &env{k: e.k, m: e.m, r: r3}
	e3.put(t, "a", spec)
	e3.put(t, "b", spec)
	if n, err := r3.Recover(ctx); err != nil || n != 2 {
		t.Fatalf("Recover = %d, %v; want 2", n, err)
	}
	if n, err := r3.Recover(ctx); err != nil || n != 0 {
		t.Fatalf("Recover again = %d, %v; want 0 (the runs are in flight)", n, err)
	}
	g.Open()
	for _, name := range []string{"a", "b"} {
		jr := waitRun(t, e.k.Store, name)
		if want := "re: " + name + " at 2026-11-26T08:00:00Z"; jr.Status != store.RunDone || jr.Output != want {
			t.Fatalf("%s after recovery: %+v, want done with %q", name, jr, want)
		}
		if err := r3.Fire(ctx, name, jr.Trigger, at); err != nil {
			t.Fatal(err)
		}
		if runs, _ := e.k.Store.JobRuns(ctx, name, "", 0); len(runs) != 1 {
			t.Fatalf("%s has %d runs, want 1", name, len(runs))
		}
	}
	if n := e.m.Calls(); n != 2 {
		t.Fatalf("%d model calls, want 2", n)
	}
}

// waitRun waits for the job's last run to end.
func waitRun(t *testing.T, s store.JobRunStore, name string) store.JobRun {
	t.Helper()
	for {
		jr, err := s.LastRun(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !jr.EndedAt.IsZero() {
			return jr
		}
		time.Sleep(5 * time.Millisecond)
	}
}
