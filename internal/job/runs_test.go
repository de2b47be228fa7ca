package job_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// TestRunsAreRecorded: every run is in the run store with its status,
// figures and output; the previous output a prompt is given is the last
// done run's from the store, so a new Runner (a restart) has it.
func TestRunsAreRecorded(t *testing.T) {
	e := newEnv(t, nil)
	spec := `{"agent":"assistant","prompt":"n{{payload.n}} after [{{previous_output}}]"}`
	e.put(t, "brief", spec)
	ctx := context.Background()
	first, err := e.r.Run(ctx, "brief", job.Fire{Payload: map[string]string{"n": "1"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	// A second Runner over the same store, as after a restart.
	r2 := job.New(e.k.Runtime, e.k.Store, testkit.Agents{"assistant": testkit.Agent("assistant")}, nil)
	defer r2.Close()
	e2 := &env{k: e.k, m: e.m, r: r2}
	e2.put(t, "brief", spec)
	second, err := r2.Run(ctx, "brief", job.Fire{Payload: map[string]string{"n": "2"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := "re: n2 after [re: n1 after []]"; second.Output != want {
		t.Fatalf("second output %q, want %q", second.Output, want)
	}
	runs, err := e.k.Store.JobRuns(ctx, "brief", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []job.Result
	for _, jr := range runs {
		got = append(got, job.ResultOf(jr))
	}
	want := []job.Result{second, first}
	for i := range want {
		want[i].Turn = 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("runs (-returned +stored):\n%s", diff)
	}
	if first.Status != store.RunDone || first.Trigger != store.TriggerManual || first.Steps != 1 || first.TokensIn == 0 || first.Ended.IsZero() {
		t.Fatalf("first run %+v", first)
	}
}

// TestConcurrencyFromTheStore: a run left open in the store (by a node
// that stopped) counts for the concurrency policy: a skip job's fire is
// recorded as a skipped run, a queue job's waits as a queued run.
func TestConcurrencyFromTheStore(t *testing.T) {
	e := newEnv(t, nil)
	e.put(t, "s", `{"agent":"assistant","prompt":"s"}`)
	e.put(t, "q", `{"agent":"assistant","prompt":"q","concurrency":"queue"}`)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	for _, name := range []string{"s", "q"} {
		if _, _, err := e.k.Store.StartRun(ctx, store.JobRun{Job: name, Run: store.RunID(at, ""), ScheduledAt: at,
			Trigger: store.TriggerCron, Session: "assistant/x", Status: store.RunRunning}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.r.Run(ctx, "s", job.Fire{}, false)
	if !errors.Is(err, job.ErrRunning) || res.Status != store.RunSkipped {
		t.Fatalf("skip job: %+v %v", res, err)
	}
	if jr, err := e.k.Store.JobRun(ctx, "s", res.Run); err != nil || jr.Status != store.RunSkipped || jr.Error == "" {
		t.Fatalf("skipped run stored as %+v %v", jr, err)
	}
	res, err = e.r.Run(ctx, "q", job.Fire{}, false)
	if err != nil || res.Status != store.RunQueued {
		t.Fatalf("queue job: %+v %v", res, err)
	}
}

// TestOpenRunBehindManyRuns: a run left open behind more ended runs than
// a page of history holds (a skip job's fires, skipped while its run
// hangs) still counts for the concurrency policy, and a restart's
// Recover still resumes it: the open runs are read as such, not found
// among the newest.
func TestOpenRunBehindManyRuns(t *testing.T) {
	e := newEnv(t, nil)
	e.put(t, "s", `{"agent":"assistant","prompt":"s"}`)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	if _, _, err := e.k.Store.StartRun(ctx, store.JobRun{Job: "s", Run: store.RunID(at, ""), ScheduledAt: at,
		Trigger: store.TriggerEvery, Session: "assistant/x", Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= store.MaxRunLimit+1; i++ {
		at := at.Add(time.Duration(i) * time.Second)
		if _, _, err := e.k.Store.StartRun(ctx, store.JobRun{Job: "s", Run: store.RunID(at, ""), ScheduledAt: at,
			Trigger: store.TriggerEvery, Session: "assistant/x", Status: store.RunSkipped, Error: "busy"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.k.Store.RecordDelivery(ctx, "s", store.RunID(at, ""), time.Time{}, ""); err != nil { // its alert, none
			t.Fatal(err)
		}
	}
	res, err := e.r.Run(ctx, "s", job.Fire{}, false)
	if !errors.Is(err, job.ErrRunning) || res.Status != store.RunSkipped {
		t.Fatalf("a fire with a run open: %+v %v; want it skipped", res, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) { // its alert recorded
		if jr, err := e.k.Store.JobRun(ctx, "s", res.Run); err != nil || !jr.DeliveredAt.IsZero() || time.Now().After(deadline) {
			break
		}
	}
	if n, err := e.r.Recover(ctx, "s"); err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v; want the open run resumed", n, err)
	}
}

// TestScheduledFireOnce: a scheduled fire's run id and idempotency key
// come from its scheduled time: fired again (a restart, another node),
// it is taken once.
func TestScheduledFireOnce(t *testing.T) {
	e := newEnv(t, nil)
	e.put(t, "j", `{"agent":"assistant","prompt":"at {{fired_at}}","concurrency":"allow"}`)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	res, err := e.r.Run(ctx, "j", job.Fire{At: at, Trigger: store.TriggerCron}, true)
	if err != nil || res.Run != "20261126T080000.000Z" || res.Output != "re: at 2026-11-26T08:00:00Z" {
		t.Fatalf("fire: %+v %v", res, err)
	}
	if _, err := e.r.Run(ctx, "j", job.Fire{At: at, Trigger: store.TriggerCron}, true); !errors.Is(err, job.ErrTaken) {
		t.Fatalf("second fire: %v, want ErrTaken", err)
	}
	if err := e.r.Fire(ctx, "j", store.TriggerCron, at); err != nil {
		t.Fatalf("Fire of a taken time: %v", err)
	}
	if n := e.m.Calls(); n != 1 {
		t.Fatalf("%d model requests, want 1", n)
	}
}

// TestSkippedRunAlerts: a fire a skip job skips (its run before is still
// running) is a failure the job's on_failure hears of, once, and the
// skipped run records its alert delivered.
func TestSkippedRunAlerts(t *testing.T) {
	e := newEnv(t, nil)
	e.put(t, "s", `{"agent":"assistant","prompt":"s","on_failure":{"session":"assistant/alerts"}}`)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	if _, _, err := e.k.Store.StartRun(ctx, store.JobRun{Job: "s", Run: store.RunID(at, ""), ScheduledAt: at,
		Trigger: store.TriggerCron, Session: "assistant/x", Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	res, err := e.r.Run(ctx, "s", job.Fire{}, false)
	if !errors.Is(err, job.ErrRunning) || res.Status != store.RunSkipped {
		t.Fatalf("skip job: %+v %v", res, err)
	}
	var jr store.JobRun
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if jr, err = e.k.Store.JobRun(ctx, "s", res.Run); err != nil {
			t.Fatal(err)
		}
		if !jr.DeliveredAt.IsZero() || time.Now().After(deadline) {
			break
		}
	}
	if jr.DeliveredAt.IsZero() || jr.DeliveryError != "" {
		t.Fatalf("the skipped run's alert: %+v", jr)
	}
	// The alert is accepted when its delivery is recorded, and logged
	// when its turn takes it up.
	var alerts []string
	for deadline := time.Now().Add(30 * time.Second); len(alerts) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		_, evs, err := e.k.Runtime.Events(ctx, "assistant/alerts", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			var d event.InputData
			if ev.Kind == event.SystemMessage && ev.Decode(&d) == nil {
				alerts = append(alerts, d.Text)
			}
		}
	}
	if len(alerts) != 1 || !strings.Contains(alerts[0], "job s run "+res.Run+" was skipped: run "+store.RunID(at, "")+" was still running") {
		t.Errorf("the alerts in assistant/alerts: %q", alerts)
	}
}
