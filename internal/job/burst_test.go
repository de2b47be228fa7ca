package job_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"agentd/internal/job"
	"agentd/internal/model"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// pairFirer is a Firer whose fires each wait until another fire is under
// way at the same time: made one after the other, the first would wait
// for ever.
type pairFirer struct {
	mu    sync.Mutex
	in    int           // fires under way
	two   chan struct{} // closed once two were under way at once
	fired int
}

func (f *pairFirer) Fire(ctx context.Context, _, _ string, _ time.Time) error {
	f.mu.Lock()
	f.in++
	if f.in == 2 {
		close(f.two)
	}
	f.mu.Unlock()
	select {
	case <-f.two:
	case <-ctx.Done():
		return ctx.Err()
	}
	f.mu.Lock()
	f.in--
	f.fired++
	f.mu.Unlock()
	return nil
}

func (f *pairFirer) Recover(context.Context, ...string) (int, error) { return 0, nil }

func (f *pairFirer) LastRun(context.Context, string, ...string) (store.JobRun, error) {
	return store.JobRun{}, store.ErrNotFound
}

// Jobs due at one time are fired at once, not one after the other: a
// burst of crons of one minute is accepted at the store's pace, not at
// one fire's each.
func TestSchedulerFiresABurstAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &pairFirer{two: make(chan struct{})}
		r := job.New(nil, nil, testkit.Agents{"assistant": testkit.Agent("assistant")}, nil)
		at := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
		for _, name := range []string{"a", "b"} {
			activate(t, r, name, fmt.Sprintf(`{"agent":"assistant","prompt":"p","triggers":[{"at":%q}]}`, at))
		}
		s := job.NewScheduler(r, f, &job.SchedulerOptions{Fire: f})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			s.Run(ctx)
			close(done)
		}()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		f.mu.Lock()
		fired := f.fired
		f.mu.Unlock()
		cancel()
		<-done
		r.Close()
		if fired != 2 {
			t.Fatalf("%d jobs fired, want 2 (each waits for the other to be under way)", fired)
		}
	})
}

// gatedRuns holds job a's StartRun until job b's has begun: with every
// job's runs taken under one lock, a would wait for b, which waits for
// the lock a holds.
type gatedRuns struct {
	store.JobRunStore
	aIn, bIn chan struct{}
}

func (g *gatedRuns) StartRun(ctx context.Context, jr store.JobRun) (store.JobRun, bool, error) {
	switch jr.Job {
	case "a":
		close(g.aIn)
		select {
		case <-g.bIn:
		case <-ctx.Done():
			return store.JobRun{}, false, ctx.Err()
		}
	case "b":
		close(g.bIn)
	}
	return g.JobRunStore.StartRun(ctx, jr)
}

// Two jobs' runs are taken at once: a run of one job does not wait for a
// run of another to be recorded.
func TestRunsOfTwoJobsAreTakenAtOnce(t *testing.T) {
	m := testkit.NewModel()
	agents := testkit.Agents{"assistant": testkit.Agent("assistant")}
	k := testkit.New(t, &testkit.Options{Model: m, Agents: agents})
	g := &gatedRuns{JobRunStore: k.Store, aIn: make(chan struct{}), bIn: make(chan struct{})}
	r := job.New(k.Runtime, g, agents, nil)
	t.Cleanup(r.Close)
	for _, name := range []string{"a", "b"} {
		activate(t, r, name, `{"agent":"assistant","prompt":"p"}`)
	}
	// A deadlock guard, not a timing: a run taken while the other waits
	// ends far sooner.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	errA := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, "a", job.Fire{}, true)
		errA <- err
	}()
	<-g.aIn
	if _, err := r.Run(ctx, "b", job.Fire{}, true); err != nil {
		t.Fatalf("b: %v", err)
	}
	if err := <-errA; err != nil {
		t.Fatalf("a: %v", err)
	}
}

// countedRuns counts the pages of runs read.
type countedRuns struct {
	store.JobRunStore
	mu    sync.Mutex
	pages int
}

func (c *countedRuns) JobRuns(ctx context.Context, job, before string, limit int) ([]store.JobRun, error) {
	c.mu.Lock()
	c.pages++
	c.mu.Unlock()
	return c.JobRunStore.JobRuns(ctx, job, before, limit)
}

// A fire reads the job's runs for its previous output only if its prompt
// refers to it: a page of runs read on every fire costs a burst of them.
func TestPreviousOutputReadOnlyIfReferred(t *testing.T) {
	m := testkit.NewModel()
	agents := testkit.Agents{"assistant": testkit.Agent("assistant")}
	k := testkit.New(t, &testkit.Options{Model: m, Agents: agents})
	c := &countedRuns{JobRunStore: k.Store}
	r := job.New(k.Runtime, c, agents, nil)
	t.Cleanup(r.Close)
	activate(t, r, "plain", `{"agent":"assistant","prompt":"p"}`)
	activate(t, r, "prev", `{"agent":"assistant","prompt":"after [{{previous_output}}]"}`)
	for _, want := range []struct {
		job    string
		pages  int
		output string
	}{
		{"plain", 0, "re: p"},
		{"plain", 0, "re: p"},
		{"prev", 1, "re: after []"},
		{"prev", 2, "re: after [re: after []]"},
	} {
		res, err := r.Run(t.Context(), want.job, job.Fire{}, true)
		if err != nil || res.Output != want.output {
			t.Fatalf("%s: %+v %v, want output %q", want.job, res, err, want.output)
		}
		c.mu.Lock()
		pages := c.pages
		c.mu.Unlock()
		if pages != want.pages {
			t.Fatalf("after a run of %s: %d pages of runs read, want %d", want.job, pages, want.pages)
		}
	}
}

// The turns of a burst start once every fire of it is accepted: its first
// turns do not take the CPU its later fires need. The fires are made one
// at a time, so that without the hold the first turns would start long
// before the last fire.
func TestBurstTurnsStartOnceAccepted(t *testing.T) {
	const n = 100
	var fired, early atomic.Int32
	m := testkit.NewModel()
	m.Respond = func(context.Context, *model.Request, func(model.Delta)) (*model.Response, error) {
		if fired.Load() < n {
			early.Add(1)
		}
		return &model.Response{Text: "ok", StopReason: "stop"}, nil
	}
	agents := testkit.Agents{"assistant": testkit.Agent("assistant")}
	k := testkit.New(t, &testkit.Options{Model: m, Agents: agents})
	ended := make(chan job.Result, n)
	r := job.New(k.Runtime, k.Store, agents, &job.Options{Ended: func(res job.Result) { ended <- res }})
	t.Cleanup(r.Close)
	s := job.NewScheduler(r, k.Store, &job.SchedulerOptions{FireConcurrency: 1,
		Fired: func(_, _ string, _, _ time.Time, err error) {
			if err != nil {
				t.Error(err)
			}
			fired.Add(1)
		}})
	// A whole second (an at trigger's), far enough ahead that the burst
	// is fired when due, not caught up when scheduled: on a machine so
	// busy that activating the jobs took most of the margin, they are
	// activated again with a larger one.
	for margin := 2 * time.Second; ; margin *= 2 {
		due := time.Now().Add(margin).Truncate(time.Second)
		at := due.UTC().Format(time.RFC3339)
		for i := range n {
			activate(t, r, fmt.Sprintf("j%d", i), fmt.Sprintf(`{"agent":"assistant","prompt":"p","triggers":[{"at":%q}]}`, at))
		}
		if time.Until(due) > margin/4 {
			break
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	for range n {
		select {
		case res := <-ended:
			if res.Status != store.RunDone {
				t.Errorf("run %s/%s ended %s (%s)", res.Job, res.Run, res.Status, res.Error)
			}
		case <-time.After(time.Minute): // a guard, not a timing
			t.Fatalf("%d of %d fires accepted, %d model calls", fired.Load(), n, m.Calls())
		}
	}
	if e := early.Load(); e != 0 {
		t.Errorf("%d of the burst's turns called the model before its %d fires were accepted", e, n)
	}
}
