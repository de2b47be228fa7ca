package job_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// fires records the Scheduler's fires in place of a Runner.
type fires struct {
	mu  sync.Mutex
	got map[string][]time.Time // by job
	// triggers are the trigger of each job's last fire.
	triggers map[string]string
	late     []time.Duration
	last     map[string]time.Time // LastRun's answer, by job
	// recovered are the Recover calls: the jobs named, "" for all.
	recovered []string
}

func newFires() *fires {
	return &fires{got: map[string][]time.Time{}, last: map[string]time.Time{}, triggers: map[string]string{}}
}

func (f *fires) Fire(_ context.Context, name, trigger string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got[name] = append(f.got[name], at)
	f.triggers[name] = trigger
	return nil
}

func (f *fires) Recover(_ context.Context, jobs ...string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recovered = append(f.recovered, strings.Join(jobs, ","))
	return 0, nil
}

func (f *fires) LastRun(_ context.Context, name string, _ ...string) (store.JobRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.last[name]; ok {
		return store.JobRun{Job: name, ScheduledAt: t}, nil
	}
	return store.JobRun{}, store.ErrNotFound
}

func (f *fires) of(name string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.got[name]...)
}

// scheduler returns a Runner without a runtime and its Scheduler, firing
// into f, running until the test's bubble ends it.
func scheduler(t *testing.T, f *fires, jobs map[string]string) (*job.Runner, *job.Scheduler, context.CancelFunc) {
	r := job.New(nil, nil, testkit.Agents{"assistant": testkit.Agent("assistant")}, nil)
	for name, spec := range jobs {
		activate(t, r, name, spec)
	}
	s := job.NewScheduler(r, f, &job.SchedulerOptions{Fire: f, Fired: func(_, _ string, due, fired time.Time, _ error) {
		f.mu.Lock()
		f.late = append(f.late, fired.Sub(due))
		f.mu.Unlock()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		r.Close()
	})
	return r, s, cancel
}

func activate(t *testing.T, r *job.Runner, name, spec string) {
	t.Helper()
	if err := r.Activate(context.Background(), &store.Extension{Type: "job", Name: name, Spec: json.RawMessage(spec)}); err != nil {
		t.Fatal(err)
	}
}

// TestSchedulerYearOfCron: a year of `0 8 * * 1-5` in Europe/Berlin,
// across both DST changes, fires on each weekday at 08:00 Berlin time,
// each once, on time.
func TestSchedulerYearOfCron(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, berlin)
		time.Sleep(time.Until(start))
		f := newFires()
		_, s, _ := scheduler(t, f, map[string]string{
			"brief": `{"agent":"assistant","prompt":"p","triggers":[{"cron":"0 8 * * 1-5","tz":"Europe/Berlin"}]}`})
		synctest.Wait()
		if next := s.Next()["brief"]; !next.Equal(time.Date(2026, 1, 1, 8, 0, 0, 0, berlin)) {
			t.Fatalf("next fire %v", next)
		}
		time.Sleep(time.Until(start.AddDate(1, 0, 0)))
		synctest.Wait()

		var want []time.Time
		for d := start; d.Year() == 2026; d = d.AddDate(0, 0, 1) {
			if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
				want = append(want, time.Date(d.Year(), d.Month(), d.Day(), 8, 0, 0, 0, berlin))
			}
		}
		got := f.of("brief")
		if len(want) != 261 {
			t.Fatalf("%d weekdays in 2026", len(want))
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(time.Time.Equal)); diff != "" {
			t.Fatalf("fires (-want +got):\n%s", diff)
		}
		for _, l := range f.late {
			if l != 0 {
				t.Fatalf("a fire %v late", l)
			}
		}
	})
}

// TestSchedulerCatchUpAndChanges: at start a job catches up from its
// last scheduled run per its policy (once: the latest missed fire; all:
// each, up to the cap; skip: none); a job activated later is scheduled
// at once, one changed is rescheduled, one removed fires no more.
func TestSchedulerCatchUpAndChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Date(2026, 3, 2, 12, 0, 30, 0, time.UTC)
		time.Sleep(time.Until(start))
		f := newFires()
		last := start.Add(-10*time.Minute - 30*time.Second) // 11:50:00
		for _, n := range []string{"once", "all", "skip"} {
			f.last[n] = last
		}
		spec := func(policy string) string {
			return `{"agent":"assistant","prompt":"p","triggers":[{"every":"1m","catch_up":"` + policy + `"}]}`
		}
		r, _, _ := scheduler(t, f, map[string]string{"once": spec("once"), "all": spec("all"), "skip": spec("skip")})
		synctest.Wait()
		min := func(m int) time.Time { return last.Add(time.Duration(m) * time.Minute) }
		if got := f.of("once"); !cmp.Equal(got, []time.Time{min(10)}) {
			t.Errorf("once caught up %v", got)
		}
		if got := f.of("all"); len(got) != 10 || !got[0].Equal(min(1)) || !got[9].Equal(min(10)) {
			t.Errorf("all caught up %v", got)
		}
		if got := f.of("skip"); len(got) != 1 || !got[0].Equal(min(10)) { // 12:00:00 is within the grace
			t.Errorf("skip caught up %v", got)
		}

		// Changes at run time.
		activate(t, r, "new", `{"agent":"assistant","prompt":"p","triggers":[{"every":"10s"}]}`)
		r.Deactivate(context.Background(), "once")
		activate(t, r, "all", `{"agent":"assistant","prompt":"p","triggers":[{"every":"30s"}]}`)
		f.mu.Lock()
		f.last["all"] = min(10)
		f.mu.Unlock()
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := f.of("once"); len(got) != 1 {
			t.Errorf("a removed job fired: %v", got)
		}
		// A fire time at the instant of a change is due (12:00:30), and
		// the minute's sleep ends on one (12:01:30).
		if got := f.of("new"); len(got) != 7 || !got[0].Equal(start) || !got[6].Equal(start.Add(time.Minute)) {
			t.Errorf("a new job fired %v", got)
		}
		f.mu.Lock()
		if want := []string{"", "new", "all"}; !cmp.Equal(f.recovered, want) && !cmp.Equal(f.recovered, []string{"", "all", "new"}) {
			t.Errorf("Recover calls %q, want %q: all at the start, then each job activated", f.recovered, want)
		}
		f.mu.Unlock()
		if got := f.of("all")[10:]; !cmp.Equal(got, []time.Time{start, start.Add(30 * time.Second), start.Add(60 * time.Second)}) {
			t.Errorf("a changed job fired %v", got)
		}
	})
}
