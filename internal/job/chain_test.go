package job_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"agentd/internal/extension"
	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// waitJobRun polls the job's runs in the store until one satisfies ok.
func waitJobRun(t *testing.T, s store.JobRunStore, name string, ok func(store.JobRun) bool) store.JobRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		runs, err := s.JobRuns(context.Background(), name, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, jr := range runs {
			if ok(jr) {
				return jr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: no run as wanted among %+v", name, runs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ended(jr store.JobRun) bool { return !jr.EndedAt.IsZero() }

// TestChainFiresOnceAfterItsParent: a run of a ends; b, chained after a
// on success, runs once with a's output and a's run as its payload, in a
// run whose id is derived from a's run; c, chained on failure, does not.
// Recover, on this Runner or on a second one (a restart, another node),
// fires nothing more.
func TestChainFiresOnceAfterItsParent(t *testing.T) {
	e := newEnv(t, nil)
	e.put(t, "a", `{"agent":"assistant","prompt":"report"}`)
	e.put(t, "b", `{"agent":"assistant","prompt":"after [{{parent_output}}] {{payload.status}}","triggers":[{"chain":{"after":"a","on":"success"}}]}`)
	e.put(t, "c", `{"agent":"assistant","prompt":"alert","triggers":[{"chain":{"after":"a","on":"failure"}}]}`)
	ctx := context.Background()
	parent, err := e.r.Run(ctx, "a", job.Fire{}, true)
	if err != nil {
		t.Fatal(err)
	}
	child := waitJobRun(t, e.k.Store, "b", ended)
	if child.Trigger != store.TriggerChain || child.Output != "re: after [re: report] done" || !child.ScheduledAt.Equal(parent.Ended) {
		t.Fatalf("chained run %+v after %+v", child, parent)
	}
	var p job.Result
	if err := json.Unmarshal(child.Payload, &p); err != nil || p.Run != parent.Run || p.Job != "a" {
		t.Fatalf("chained run's payload %s: %v", child.Payload, err)
	}
	r2 := job.New(e.k.Runtime, e.k.Store, testkit.Agents{"assistant": testkit.Agent("assistant")}, nil)
	defer r2.Close()
	e2 := &env{k: e.k, m: e.m, r: r2}
	for _, n := range []string{"a", "b", "c"} {
		spec, _ := e.r.Job(n)
		raw, _ := json.Marshal(spec)
		e2.put(t, n, string(raw))
	}
	for _, r := range []*job.Runner{e.r, r2} {
		if _, err := r.Recover(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]int{"b": 1, "c": 0} {
		if runs, _ := e.k.Store.JobRuns(ctx, name, "", 0); len(runs) != want {
			t.Fatalf("job %s: %d runs, want %d: %+v", name, len(runs), want, runs)
		}
	}
}

// TestChainRecoverStartsAMissedChild: a parent run whose end was recorded
// but whose chained run was never started (a crash in between) has it
// started by Recover, once however often Recover runs; a parent run
// older than ChainWindow does not, nor one that ended before the chained
// job's row was written.
func TestChainRecoverStartsAMissedChild(t *testing.T) {
	e := newEnv(t, nil)
	e.put(t, "a", `{"agent":"assistant","prompt":"report"}`)
	ctx := context.Background()
	now := time.Now()
	if err := e.r.Activate(ctx, &store.Extension{Type: "job", Name: "b", UpdatedAt: now.Add(-time.Hour),
		Spec: json.RawMessage(`{"agent":"assistant","prompt":"after [{{parent_output}}]","triggers":[{"chain":{"after":"a","on":"either"}}]}`)}); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{now.Add(-time.Minute), now.Add(-2 * time.Hour), now.Add(-job.ChainWindow - time.Hour)} {
		jr := store.JobRun{Job: "a", Run: store.RunID(at, "x"), ScheduledAt: at, Trigger: store.TriggerManual, Session: "assistant/x", Status: store.RunRunning}
		if _, _, err := e.k.Store.StartRun(ctx, jr); err != nil {
			t.Fatal(err)
		}
		if _, err := e.k.Store.FinishRun(ctx, store.JobRun{Job: "a", Run: jr.Run, Status: store.RunError, Output: "half", EndedAt: at.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := e.r.Recover(ctx); err != nil {
			t.Fatal(err)
		}
	}
	child := waitJobRun(t, e.k.Store, "b", ended)
	if child.Output != "re: after [half]" {
		t.Fatalf("chained run %+v", child)
	}
	if runs, _ := e.k.Store.JobRuns(ctx, "b", "", 0); len(runs) != 1 {
		t.Fatalf("%d chained runs: %+v", len(runs), runs)
	}
}

// TestChainCycleRefused: a chain that closes a cycle, of two jobs or
// more, is refused when the row is saved, naming the field and the
// cycle; a job after itself too.
func TestChainCycleRefused(t *testing.T) {
	e := newEnv(t, nil)
	e.put(t, "a", `{"agent":"assistant","prompt":"p","triggers":[{"chain":{"after":"b"}}]}`)
	e.put(t, "c", `{"agent":"assistant","prompt":"p","triggers":[{"chain":{"after":"a"}}]}`)
	for _, c := range []struct{ name, spec, want string }{
		{"b", `{"agent":"assistant","prompt":"p","triggers":[{"every":"1h"},{"chain":{"after":"a"}}]}`,
			"/spec/triggers/1/chain/after: a chain cannot close a cycle: b → a → b"},
		{"b", `{"agent":"assistant","prompt":"p","triggers":[{"chain":{"after":"c"}}]}`,
			"/spec/triggers/0/chain/after: a chain cannot close a cycle: b → c → a → b"},
		{"d", `{"agent":"assistant","prompt":"p","triggers":[{"chain":{"after":"d"}}]}`,
			"/spec/triggers/0/chain/after: a job cannot follow itself"},
	} {
		errs := e.r.Check(context.Background(), &extension.Doc{Type: "job", Name: c.name, Spec: json.RawMessage(c.spec)})
		if len(errs) != 1 || errs[0].Pointer+": "+errs[0].Message != c.want {
			t.Errorf("%s %s: %v, want %s", c.name, c.spec, errs, c.want)
		}
		// Resumed (activated without a save's check), it is refused too.
		err := e.r.Activate(context.Background(), &store.Extension{Type: "job", Name: c.name, Spec: json.RawMessage(c.spec)})
		if c.name != "d" && (err == nil || !strings.Contains(err.Error(), "cycle")) {
			t.Errorf("%s activated: %v", c.name, err)
		}
	}
	// b after a alone is no cycle when a is not after b.
	e.put(t, "a", `{"agent":"assistant","prompt":"p"}`)
	e.put(t, "b", `{"agent":"assistant","prompt":"p","triggers":[{"chain":{"after":"c"}}]}`)
}

// pollRun does act, then polls the job's runs until one satisfies ok,
// doing act again every second while none does.
func pollRun(t *testing.T, s store.JobRunStore, name string, act func(), ok func(store.JobRun) bool) store.JobRun {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		act()
		for range 100 {
			runs, err := s.JobRuns(context.Background(), name, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, jr := range runs {
				if ok(jr) {
					return jr
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: no run as wanted", name)
		}
	}
}
