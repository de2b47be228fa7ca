package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/job"
	"agentd/internal/netguard"
	"agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// receiver is a webhook receiver outside agentd: it records each
// delivery's id header and run, and answers fail's status (0: 200) to
// the n-th request (from 1).
type receiver struct {
	mu   sync.Mutex
	ids  []string
	runs []string
	fail func(n int) int
	srv  *httptest.Server
}

func newReceiver(t *testing.T, fail func(n int) int) *receiver {
	rc := &receiver{fail: fail}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res job.Result
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &res)
		rc.mu.Lock()
		rc.ids = append(rc.ids, r.Header.Get(job.DeliveryHeader))
		rc.runs = append(rc.runs, res.Run+" "+res.Status)
		n := len(rc.ids)
		rc.mu.Unlock()
		if code := rc.fail(n); code != 0 {
			w.WriteHeader(code)
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) got() (ids, runs []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.ids...), append([]string(nil), rc.runs...)
}

// loopback lets a Runner deliver to a receiver on this machine.
func loopback(o *job.Options) *job.Options {
	o.Guard = netguard.New(&netguard.Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	return o
}

// A webhook delivery that fails is tried again, with the same id, up to
// DeliverTries times; the run records when it was delivered, or, each
// try failed, that it was given up and why.
func TestDeliveryTriedAgainThenRecorded(t *testing.T) {
	rc := newReceiver(t, func(n int) int {
		if n <= 2 || n >= 4 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	e := newEnv(t, loopback(&job.Options{DeliverTries: 3, DeliverBackoff: time.Millisecond}))
	e.put(t, "h", `{"agent":"assistant","prompt":"hook","deliver":{"webhook":"`+rc.srv.URL+`/in"}}`)
	ctx := context.Background()
	res, err := e.r.Run(ctx, "h", job.Fire{}, true)
	if err != nil || res.DeliveryError != "" || res.Delivered.IsZero() {
		t.Fatalf("a delivery made at the third try: %+v, %v", res, err)
	}
	ids, _ := rc.got()
	if want := []string{"h:" + res.Run, "h:" + res.Run, "h:" + res.Run}; !cmp.Equal(ids, want) {
		t.Errorf("the tries' ids %q, want %q", ids, want)
	}
	jr, err := e.k.Store.JobRun(ctx, "h", res.Run)
	if err != nil || !jr.DeliveredAt.Equal(res.Delivered) || jr.DeliveryError != "" || jr.Undelivered() {
		t.Errorf("the run delivered as stored: %+v, %v", jr, err)
	}

	failed, err := e.r.Run(ctx, "h", job.Fire{}, true)
	if err != nil || !strings.Contains(failed.DeliveryError, "503") || failed.Delivered.IsZero() {
		t.Fatalf("a delivery that failed every try: %+v, %v", failed, err)
	}
	if ids, _ = rc.got(); len(ids) != 6 {
		t.Errorf("%d requests in all, want 3 + 3 tries", len(ids))
	}
	jr, err = e.k.Store.JobRun(ctx, "h", failed.Run)
	if err != nil || jr.DeliveryError != failed.DeliveryError || jr.DeliveredAt.IsZero() {
		t.Errorf("the run given up as stored: %+v, %v", jr, err)
	}
	if pending, err := e.k.Store.UndeliveredRuns(ctx, "h", 0); err != nil || len(pending) != 0 {
		t.Errorf("undelivered runs: %d, %v; want none", len(pending), err)
	}
}

// TestRecoverDelivers: runs that ended while their delivery was not
// recorded (agentd stopped between the two) are delivered by the next
// Runner's Recover, once: a done run's output, an error run's failure
// alert, and a run with nothing to deliver is recorded as delivered.
func TestRecoverDelivers(t *testing.T) {
	rc := newReceiver(t, func(int) int { return 0 })
	e := newEnv(t, loopback(&job.Options{}))
	ctx := context.Background()
	hook := `"deliver":{"webhook":"` + rc.srv.URL + `/in"},"on_failure":{"webhook":"` + rc.srv.URL + `/alert"}`
	e.put(t, "h", `{"agent":"assistant","prompt":"hook","concurrency":"allow",`+hook+`}`)
	e.put(t, "quiet", `{"agent":"assistant","prompt":"hook","deliver":{"none":true}}`)
	ended := func(name string, i int, status string) string {
		at := time.Date(2026, 11, 26, 8, i, 0, 0, time.UTC)
		r, _, err := e.k.Store.StartRun(ctx, store.JobRun{Job: name, Run: store.RunID(at, ""), ScheduledAt: at,
			Trigger: store.TriggerCron, Session: "assistant/x", Status: store.RunRunning})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.k.Store.FinishRun(ctx, store.JobRun{Job: name, Run: r.Run, Status: status, Output: "out", Error: "boom"}); err != nil {
			t.Fatal(err)
		}
		return r.Run
	}
	done, failed, quiet := ended("h", 0, store.RunDone), ended("h", 1, store.RunError), ended("quiet", 0, store.RunDone)

	r2 := job.New(e.k.Runtime, e.k.Store, testkit.Agents{"assistant": testkit.Agent("assistant")}, loopback(&job.Options{}))
	t.Cleanup(r2.Close)
	e2 := &env{k: e.k, m: e.m, r: r2}
	e2.put(t, "h", `{"agent":"assistant","prompt":"hook","concurrency":"allow",`+hook+`}`)
	e2.put(t, "quiet", `{"agent":"assistant","prompt":"hook","deliver":{"none":true}}`)
	if n, err := r2.Recover(ctx); err != nil || n != 3 {
		t.Fatalf("Recover = %d, %v; want 3", n, err)
	}
	for _, jr := range []struct{ job, run string }{{"h", done}, {"h", failed}, {"quiet", quiet}} {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			got, err := e.k.Store.JobRun(ctx, jr.job, jr.run)
			if err != nil {
				t.Fatal(err)
			}
			if !got.DeliveredAt.IsZero() {
				if got.DeliveryError != "" {
					t.Errorf("%s/%s: delivery error %q", jr.job, jr.run, got.DeliveryError)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s/%s not delivered: %+v", jr.job, jr.run, got)
			}
		}
	}
	if n, err := r2.Recover(ctx); err != nil || n != 0 {
		t.Errorf("Recover again = %d, %v; want 0", n, err)
	}
	ids, runs := rc.got()
	if want := []string{"h:" + done, "h:" + failed}; !cmp.Equal(ids, want) {
		t.Errorf("the deliveries' ids %q, want %q", ids, want)
	}
	if want := []string{done + " done", failed + " error"}; !cmp.Equal(runs, want) {
		t.Errorf("the runs delivered %q, want %q", runs, want)
	}
}

// TestHookDeliveryRace: nodes given one webhook delivery at once (two
// Runners on one store, four requests each) run it once; every other
// request is told it was delivered, with that run.
func TestHookDeliveryRace(t *testing.T) {
	e := hookEnv(t)
	ctx := context.Background()
	e2 := &env{k: e.k, m: e.m, r: job.New(e.k.Runtime, e.k.Store, testkit.Agents{"assistant": testkit.Agent("assistant")},
		&job.Options{Secrets: secret.NewResolver("", &secret.Options{LookupEnv: func(string) (string, bool) { return "s3cret", true }})})}
	t.Cleanup(e2.r.Close)
	e2.put(t, "gh", `{"agent":"assistant","concurrency":"allow","prompt":"event {{payload.action}}: {{payload}}","triggers":[{"webhook":{"secret_env":"HOOK_SECRET"}}]}`)
	h := signed("s3cret", `{"action":"opened"}`, "race-1", time.Now())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var taken []string
	told := map[string]int{}
	for i := range 8 {
		r := e.r
		if i%2 == 1 {
			r = e2.r
		}
		wg.Go(func() {
			res, err := r.Hook(ctx, "gh", h)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				taken = append(taken, res.Run)
			case !errors.Is(err, job.ErrDelivered):
				t.Errorf("request %d: %v", i, err)
			}
			told[res.Run]++
		})
	}
	wg.Wait()
	if len(taken) != 1 {
		t.Fatalf("the delivery was taken by %v, want exactly once", taken)
	}
	if told[taken[0]] != 8 {
		t.Errorf("the runs the requests were told: %v; want all 8 told %s", told, taken[0])
	}
	runs, err := e.k.Store.JobRuns(ctx, "gh", "", 0)
	if err != nil || len(runs) != 1 || runs[0].Delivery != "race-1" {
		t.Errorf("the job's runs: %+v, %v; want the one run of delivery race-1", runs, err)
	}
}

// TestSchedulerPrunes: the Scheduler prunes each active job's runs
// beyond its newest KeepRuns, and keeps a run whose delivery is pending.
func TestSchedulerPrunes(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	e.put(t, "p", `{"agent":"assistant","prompt":"hi","deliver":{"none":true}}`)
	for i := range 6 {
		at := time.Date(2026, 11, 26, 8, i, 0, 0, time.UTC)
		r, _, err := e.k.Store.StartRun(ctx, store.JobRun{Job: "p", Run: store.RunID(at, ""), ScheduledAt: at,
			Trigger: store.TriggerEvery, Status: store.RunRunning})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.k.Store.FinishRun(ctx, store.JobRun{Job: "p", Run: r.Run, Status: store.RunDone}); err != nil {
			t.Fatal(err)
		}
		if i != 0 { // the oldest one's delivery is pending
			if _, err := e.k.Store.RecordDelivery(ctx, "p", r.Run, time.Time{}, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := job.NewScheduler(e.r, e.k.Store, &job.SchedulerOptions{KeepRuns: 2})
	n, err := s.Prune(ctx, time.Now())
	if err != nil || n != 3 {
		t.Fatalf("Prune = %d, %v; want 3 removed", n, err)
	}
	runs, _ := e.k.Store.JobRuns(ctx, "p", "", 0)
	var got []string
	for _, r := range runs {
		got = append(got, r.Run[9:13])
	}
	if want := []string{"0805", "0804", "0800"}; !cmp.Equal(got, want) {
		t.Errorf("the runs kept %v, want %v", got, want)
	}
}

// TestDeliveryHoldsNoOneUp: a run's delivery, however long its tries
// take, holds up neither the jobs chained after it nor its job's next
// queued run: both start once its end is recorded.
func TestDeliveryHoldsNoOneUp(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	rc := newReceiver(t, func(int) int { <-release; return 0 })
	defer once.Do(func() { close(release) })
	e := newEnv(t, loopback(&job.Options{}))
	e.put(t, "a", `{"agent":"assistant","prompt":"a","concurrency":"queue","deliver":{"webhook":"`+rc.srv.URL+`/in"}}`)
	e.put(t, "b", `{"agent":"assistant","prompt":"after [{{parent_output}}]","triggers":[{"chain":{"after":"a"}}]}`)
	ctx := context.Background()
	first, err := e.r.Run(ctx, "a", job.Fire{}, false)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.r.Run(ctx, "a", job.Fire{}, false)
	if err != nil || second.Status != store.RunQueued {
		t.Fatalf("a second run of a queue job: %+v, %v", second, err)
	}
	waitJobRun(t, e.k.Store, "b", ended)
	waitJobRun(t, e.k.Store, "a", func(jr store.JobRun) bool { return jr.Run == second.Run && ended(jr) })
	if jr, err := e.k.Store.JobRun(ctx, "a", first.Run); err != nil || !jr.DeliveredAt.IsZero() {
		t.Errorf("the first run's delivery: %+v, %v; want it still under way", jr, err)
	}
}
