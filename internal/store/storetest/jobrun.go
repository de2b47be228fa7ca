package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/store"
)

// runAt is the scheduled time of the i-th fire of the runs' tests.
func runAt(i int) time.Time {
	return time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
}

// fire is a run of job taken by trigger at its i-th scheduled time.
func fire(job string, i int, trigger string) store.JobRun {
	at := runAt(i)
	return store.JobRun{Job: job, Run: store.RunID(at, ""), ScheduledAt: at, Trigger: trigger,
		Session: "briefer/job:" + job + ":" + store.RunID(at, ""), Status: store.RunRunning, Node: "n1"}
}

func mustStartRun(t testing.TB, s Store, r store.JobRun) store.JobRun {
	t.Helper()
	got, created, err := s.StartRun(t.Context(), r)
	if err != nil || !created {
		t.Fatalf("StartRun(%s/%s) = created %v, %v; want a new run", r.Job, r.Run, created, err)
	}
	return got
}

// A run is taken once: a second StartRun of its id returns the run as
// the first took it, whatever it is given, before and after the store is
// opened again.
func testJobRunStart(t *testing.T, x *suite) {
	name := x.name()
	s := x.open(t, name)
	ctx := t.Context()
	r := fire("digest", 0, store.TriggerCron)
	r.Payload = json.RawMessage(`{ "reason" : "morning" }`)
	before := time.Now()
	got := mustStartRun(t, s, r)
	want := r
	want.Payload = json.RawMessage(`{"reason":"morning"}`)
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(store.JobRun{}, "StartedAt")); d != "" {
		t.Errorf("the run taken (-want +got):\n%s", d)
	}
	if got.StartedAt.Before(before.Add(-time.Second)) || got.StartedAt.Location() != time.UTC {
		t.Errorf("StartedAt = %v, want about now in UTC", got.StartedAt)
	}
	again := r
	again.Node, again.Status, again.Trigger = "n2", store.RunQueued, store.TriggerManual
	other, created, err := s.StartRun(ctx, again)
	if err != nil || created {
		t.Fatalf("StartRun again = created %v, %v; want the run taken before", created, err)
	}
	if d := cmp.Diff(got, other); d != "" {
		t.Errorf("StartRun again returned (-taken +returned):\n%s", d)
	}
	s.Close()
	s = x.open(t, name)
	if _, created, err := s.StartRun(ctx, again); err != nil || created {
		t.Errorf("StartRun after reopening = created %v, %v; want the run taken before", created, err)
	}
	read, err := s.JobRun(ctx, "digest", r.Run)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(got, read); d != "" {
		t.Errorf("JobRun after reopening (-taken +read):\n%s", d)
	}
	if _, err := s.JobRun(ctx, "digest", store.RunID(runAt(1), "")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("JobRun of a run never taken = %v, want ErrNotFound", err)
	}
	if _, err := s.JobRun(ctx, "other", r.Run); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("JobRun of another job's run id = %v, want ErrNotFound", err)
	}
}

// Of callers racing to take one fire (nodes, a restart), exactly one
// takes it, and every other is told the run it took.
func testJobRunConcurrentStart(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	seen := map[string]int{}
	for i := range 8 {
		wg.Go(func() {
			r := fire("poll", 3, store.TriggerEvery)
			r.Node = fmt.Sprintf("n%d", i)
			got, created, err := s.StartRun(ctx, r)
			if err != nil {
				t.Errorf("StartRun by %s: %v", r.Node, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if created {
				won = append(won, r.Node)
			}
			seen[got.Node]++
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("the racing StartRuns: taken by %v, want exactly one", won)
	}
	if seen[won[0]] != 8 {
		t.Errorf("the nodes the callers were told took the run: %v; want all 8 told %s", seen, won[0])
	}
	if runs, err := s.JobRuns(ctx, "poll", "", 0); err != nil || len(runs) != 1 {
		t.Errorf("JobRuns after the race = %d runs, %v; want 1", len(runs), err)
	}
}

// An open run moves forward only: queued to running to an end, or
// queued straight to an end; an ended run stays as it ended.
func testJobRunFinish(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	q := fire("j", 0, store.TriggerWebhook)
	q.Status = store.RunQueued
	taken := mustStartRun(t, s, q)
	started := time.Date(2026, 11, 26, 8, 0, 5, 0, time.UTC)
	running, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: q.Run, Status: store.RunRunning, StartedAt: started})
	if err != nil {
		t.Fatalf("FinishRun(queued → running): %v", err)
	}
	if running.Status != store.RunRunning || !running.StartedAt.Equal(started) || !running.EndedAt.IsZero() {
		t.Errorf("after queued → running: %+v", running)
	}
	if _, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: q.Run, Status: store.RunRunning}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("FinishRun(running → running) = %v, want ErrConflict", err)
	}
	ended := started.Add(90 * time.Second)
	end := store.JobRun{Job: "j", Run: q.Run, Status: store.RunDone, EndedAt: ended, Steps: 4, TokensIn: 1200, TokensOut: 340,
		CostUSD: 0.0123, Output: "Three new issues; none urgent."}
	done, err := s.FinishRun(ctx, end)
	if err != nil {
		t.Fatalf("FinishRun(running → done): %v", err)
	}
	want := taken
	want.Status, want.StartedAt, want.EndedAt, want.Steps, want.TokensIn, want.TokensOut, want.CostUSD, want.Output =
		store.RunDone, started, ended, 4, 1200, 340, 0.0123, end.Output
	if d := cmp.Diff(want, done); d != "" {
		t.Errorf("the run done (-want +got):\n%s", d)
	}
	for _, st := range []string{store.RunError, store.RunRunning, store.RunCancelled} {
		if _, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: q.Run, Status: st}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("FinishRun(done → %s) = %v, want ErrConflict", st, err)
		}
	}
	if read, err := s.JobRun(ctx, "j", q.Run); err != nil || read.Status != store.RunDone || read.Output != end.Output {
		t.Errorf("the run after the refused finishes: %+v, %v", read, err)
	}

	q2 := fire("j", 1, store.TriggerChain)
	q2.Status = store.RunQueued
	mustStartRun(t, s, q2)
	c, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: q2.Run, Status: store.RunCancelled, Error: "agentd stopped"})
	if err != nil || c.Status != store.RunCancelled || c.EndedAt.IsZero() || c.Error != "agentd stopped" {
		t.Errorf("FinishRun(queued → cancelled) = %+v, %v", c, err)
	}

	sk := fire("j", 2, store.TriggerCron)
	sk.Status, sk.Error = store.RunSkipped, "the run before was still running"
	skipped := mustStartRun(t, s, sk)
	if !skipped.EndedAt.Equal(skipped.StartedAt) || skipped.Error != sk.Error {
		t.Errorf("a run taken as skipped: %+v; want ended as it started, with its reason", skipped)
	}
	if _, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: sk.Run, Status: store.RunDone}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("FinishRun(skipped → done) = %v, want ErrConflict", err)
	}
	if _, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: store.RunID(runAt(9), ""), Status: store.RunDone}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FinishRun of a run never taken = %v, want ErrNotFound", err)
	}
}

// A job's runs list newest first, page by page with the last run's id
// as the cursor, whatever order they were taken in; another job's runs
// are not among them.
func testJobRunsOrder(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	for _, i := range []int{3, 0, 6, 1, 5, 2, 4} {
		mustStartRun(t, s, fire("j", i, store.TriggerEvery))
	}
	mustStartRun(t, s, fire("k", 10, store.TriggerEvery))
	// A manual run in the same millisecond as a fire sorts after it.
	manual := fire("j", 6, store.TriggerManual)
	manual.Run = store.RunID(runAt(6), "ab12")
	mustStartRun(t, s, manual)
	var got []string
	before := ""
	for page := 0; page < 10; page++ {
		runs, err := s.JobRuns(ctx, "j", before, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > 3 {
			t.Fatalf("page %d: %d runs, limit 3", page, len(runs))
		}
		if len(runs) == 0 {
			break
		}
		for _, r := range runs {
			got = append(got, r.Run)
		}
		before = runs[len(runs)-1].Run
	}
	want := []string{manual.Run}
	for i := 6; i >= 0; i-- {
		want = append(want, store.RunID(runAt(i), ""))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the runs page by page (-want +got):\n%s", d)
	}
	all, err := s.JobRuns(ctx, "j", "", 0)
	if err != nil || len(all) != 8 {
		t.Errorf("JobRuns with the default limit = %d runs, %v; want 8", len(all), err)
	}
	if none, err := s.JobRuns(ctx, "none", "", 0); err != nil || none == nil || len(none) != 0 {
		t.Errorf("JobRuns of a job without runs = %#v, %v; want empty", none, err)
	}
}

// OpenRuns lists all of a job's queued and running runs, oldest first,
// however many ended runs are newer (more than a page of JobRuns can
// hold); ended runs and another job's open runs are not among them.
func testJobRunsOpen(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	queued := fire("j", 1, store.TriggerEvery)
	queued.Status = store.RunQueued
	mustStartRun(t, s, queued)
	mustStartRun(t, s, fire("j", 0, store.TriggerEvery))
	mustStartRun(t, s, fire("k", 0, store.TriggerEvery))
	ended := mustStartRun(t, s, fire("j", 2, store.TriggerEvery))
	ended.Status = store.RunDone
	if _, err := s.FinishRun(ctx, ended); err != nil {
		t.Fatal(err)
	}
	for i := 3; i < 3+store.MaxRunLimit+1; i++ {
		r := fire("j", i, store.TriggerEvery)
		r.Status, r.Error = store.RunSkipped, "busy"
		mustStartRun(t, s, r)
	}
	open, err := s.OpenRuns(ctx, "j")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range open {
		got = append(got, r.Run+" "+r.Status)
	}
	want := []string{store.RunID(runAt(0), "") + " running", store.RunID(runAt(1), "") + " queued"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the open runs (-want +got):\n%s", d)
	}
	if none, err := s.OpenRuns(ctx, "none"); err != nil || none == nil || len(none) != 0 {
		t.Errorf("OpenRuns of a job without runs = %#v, %v; want empty", none, err)
	}
	if _, err := s.OpenRuns(ctx, "no/such"); err == nil {
		t.Error("OpenRuns of an invalid job name: no error")
	}
}

// LastRun is the newest run taken, of any trigger or of the ones asked
// for: a schedule catches up from its own last fire.
func testJobRunLast(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	if _, err := s.LastRun(ctx, "j"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LastRun of a job without runs = %v, want ErrNotFound", err)
	}
	mustStartRun(t, s, fire("j", 1, store.TriggerCron))
	mustStartRun(t, s, fire("j", 0, store.TriggerCron))
	mustStartRun(t, s, fire("j", 2, store.TriggerEvery))
	mustStartRun(t, s, fire("j", 4, store.TriggerWebhook))
	mustStartRun(t, s, fire("k", 9, store.TriggerCron))
	for _, c := range []struct {
		triggers []string
		want     int
	}{
		{nil, 4},
		{[]string{store.TriggerCron}, 1},
		{[]string{store.TriggerCron, store.TriggerEvery}, 2},
		{[]string{store.TriggerWebhook, store.TriggerManual}, 4},
	} {
		got, err := s.LastRun(ctx, "j", c.triggers...)
		if err != nil || !got.ScheduledAt.Equal(runAt(c.want)) {
			t.Errorf("LastRun(j, %v) = %v, %v; want the run scheduled at %v", c.triggers, got.ScheduledAt, err, runAt(c.want))
		}
	}
	if _, err := s.LastRun(ctx, "j", store.TriggerWatch); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LastRun(j, watch) = %v, want ErrNotFound", err)
	}
}

// PruneRuns keeps a job's newest runs and every open one, and leaves the
// other jobs' alone.
func testJobRunPrune(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	for i := range 6 {
		r := mustStartRun(t, s, fire("j", i, store.TriggerEvery))
		if i != 1 { // the run at 1 is still running
			endDelivered(t, s, r)
		}
		mustStartRun(t, s, fire("k", i, store.TriggerEvery))
	}
	n, err := s.PruneRuns(ctx, "j", 2, time.Time{})
	if err != nil || n != 3 {
		t.Fatalf("PruneRuns(j, 2) = %d, %v; want 3 removed", n, err)
	}
	runs, err := s.JobRuns(ctx, "j", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Run)
	}
	want := []string{store.RunID(runAt(5), ""), store.RunID(runAt(4), ""), store.RunID(runAt(1), "")}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the runs kept (-want +got):\n%s", d)
	}
	if n, err := s.PruneRuns(ctx, "j", 10, time.Time{}); err != nil || n != 0 {
		t.Errorf("PruneRuns(j, 10) = %d, %v; want nothing removed", n, err)
	}
	if k, err := s.JobRuns(ctx, "k", "", 0); err != nil || len(k) != 6 {
		t.Errorf("another job's runs after the prune: %d, %v; want 6", len(k), err)
	}
	if last, err := s.LastRun(ctx, "j"); err != nil || last.Run != want[0] {
		t.Errorf("LastRun after the prune = %q, %v; want %q", last.Run, err, want[0])
	}
}

// A run keeps at most store.MaxRunOutput bytes of output and
// MaxRunError of error, cut at a character boundary and marked, as valid
// text; a payload above MaxRunPayload is replaced by its size.
func testJobRunCaps(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	r := fire("j", 0, store.TriggerWebhook)
	r.Payload = json.RawMessage(`{"body":"` + strings.Repeat("x", store.MaxRunPayload) + `"}`)
	got := mustStartRun(t, s, r)
	if want := fmt.Sprintf(`{"truncated":true,"bytes":%d}`, store.MaxRunPayload+11); string(got.Payload) != want {
		t.Errorf("an oversized payload is stored as %.80s, want %s", got.Payload, want)
	}
	out := strings.Repeat("é", store.MaxRunOutput) // two bytes each
	end, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: r.Run, Status: store.RunError, Output: out,
		Error: "bad\x00byte \xff" + strings.Repeat("e", store.MaxRunError)})
	if err != nil {
		t.Fatal(err)
	}
	read, err := s.JobRun(ctx, "j", r.Run)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		what, s string
		max     int
		prefix  string
	}{
		{"output", read.Output, store.MaxRunOutput, "éé"},
		{"error", read.Error, store.MaxRunError, "bad\uFFFDbyte \uFFFDeee"},
	} {
		if len(f.s) > f.max || !utf8.ValidString(f.s) || strings.ContainsRune(f.s, 0) || !strings.HasPrefix(f.s, f.prefix) ||
			!strings.Contains(f.s, "cut:") {
			t.Errorf("%s stored: %d bytes (max %d), valid %v, starts %.20q, ends %q", f.what, len(f.s), f.max,
				utf8.ValidString(f.s), f.s, f.s[max(0, len(f.s)-40):])
		}
	}
	if d := cmp.Diff(end, read); d != "" {
		t.Errorf("FinishRun's run and the run read differ (-finish +read):\n%s", d)
	}
	small := fire("j", 1, store.TriggerWebhook)
	small.Payload = json.RawMessage(`[1, 2]`)
	if got := mustStartRun(t, s, small); string(got.Payload) != `[1,2]` {
		t.Errorf("a small payload is stored as %s, want [1,2]", got.Payload)
	}
}

// A bad run, end or query is ErrInvalid and writes nothing.
func testJobRunInvalid(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	ok := fire("j", 0, store.TriggerCron)
	bad := func(f func(r *store.JobRun)) store.JobRun { r := ok; f(&r); return r }
	for what, r := range map[string]store.JobRun{
		"no job":               bad(func(r *store.JobRun) { r.Job = "" }),
		"a job with a slash":   bad(func(r *store.JobRun) { r.Job = "a/b" }),
		"no run id":            bad(func(r *store.JobRun) { r.Run = "" }),
		"a run id with space":  bad(func(r *store.JobRun) { r.Run += " x" }),
		"a long run id":        bad(func(r *store.JobRun) { r.Run += "-" + strings.Repeat("a", store.MaxRunID) }),
		"a run id of another":  bad(func(r *store.JobRun) { r.Run = store.RunID(runAt(1), "") }),
		"no scheduled time":    bad(func(r *store.JobRun) { r.ScheduledAt = time.Time{} }),
		"an unknown trigger":   bad(func(r *store.JobRun) { r.Trigger = "sometimes" }),
		"no trigger":           bad(func(r *store.JobRun) { r.Trigger = "" }),
		"a start that is done": bad(func(r *store.JobRun) { r.Status = store.RunDone }),
		"no status":            bad(func(r *store.JobRun) { r.Status = "" }),
		"a payload not JSON":   bad(func(r *store.JobRun) { r.Payload = json.RawMessage(`{"a":`) }),
		"a session not text":   bad(func(r *store.JobRun) { r.Session = "a/\xff" }),
	} {
		if _, _, err := s.StartRun(ctx, r); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("StartRun with %s = %v, want ErrInvalid", what, err)
		}
	}
	if runs, err := s.JobRuns(ctx, "j", "", 0); err != nil || len(runs) != 0 {
		t.Errorf("the refused runs wrote %d, %v", len(runs), err)
	}
	mustStartRun(t, s, ok)
	for what, end := range map[string]store.JobRun{
		"status queued":     {Job: "j", Run: ok.Run, Status: store.RunQueued},
		"an unknown status": {Job: "j", Run: ok.Run, Status: "finished"},
		"negative steps":    {Job: "j", Run: ok.Run, Status: store.RunDone, Steps: -1},
		"negative tokens":   {Job: "j", Run: ok.Run, Status: store.RunDone, TokensOut: -1},
		"a NaN cost":        {Job: "j", Run: ok.Run, Status: store.RunDone, CostUSD: math.NaN()},
		"no run id":         {Job: "j", Status: store.RunDone},
	} {
		if _, err := s.FinishRun(ctx, end); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("FinishRun with %s = %v, want ErrInvalid", what, err)
		}
	}
	if r, err := s.JobRun(ctx, "j", ok.Run); err != nil || r.Status != store.RunRunning {
		t.Errorf("the run after the refused ends: %+v, %v; want it running", r, err)
	}
	if _, err := s.JobRuns(ctx, "j", "", -1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("JobRuns with limit -1 = %v, want ErrInvalid", err)
	}
	if _, err := s.LastRun(ctx, "j", "sometimes"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("LastRun of an unknown trigger = %v, want ErrInvalid", err)
	}
	if _, err := s.JobRun(ctx, "", ok.Run); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("JobRun of no job = %v, want ErrInvalid", err)
	}
	for _, keep := range []int{0, -1} {
		if _, err := s.PruneRuns(ctx, "j", keep, time.Time{}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("PruneRuns(j, %d) = %v, want ErrInvalid", keep, err)
		}
	}
}

// After Close every method of the runs is ErrClosed.
func testJobRunClosed(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	r := mustStartRun(t, s, fire("j", 0, store.TriggerCron))
	s.Close()
	errs := map[string]error{}
	_, _, errs["StartRun"] = s.StartRun(ctx, fire("j", 1, store.TriggerCron))
	_, errs["FinishRun"] = s.FinishRun(ctx, store.JobRun{Job: "j", Run: r.Run, Status: store.RunDone})
	_, errs["JobRuns"] = s.JobRuns(ctx, "j", "", 0)
	_, errs["JobRun"] = s.JobRun(ctx, "j", r.Run)
	_, errs["LastRun"] = s.LastRun(ctx, "j")
	_, errs["PruneRuns"] = s.PruneRuns(ctx, "j", 1, time.Time{})
	_, errs["RecordDelivery"] = s.RecordDelivery(ctx, "j", r.Run, time.Time{}, "")
	_, errs["UndeliveredRuns"] = s.UndeliveredRuns(ctx, "j", 0)
	_, errs["DeliveryRun"] = s.DeliveryRun(ctx, "j", "d1")
	_, errs["MACRun"] = s.MACRun(ctx, "j", "ab")
	for m, err := range errs {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", m, err)
		}
	}
}

// Of callers racing to end one run (a node's end and a person's cancel),
// exactly one ends it, and the run is as that one ended it.
func testJobRunConcurrentFinish(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	r := mustStartRun(t, s, fire("j", 0, store.TriggerCron))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	for i := range 8 {
		wg.Go(func() {
			out := fmt.Sprintf("end %d", i)
			_, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: r.Run, Status: store.RunDone, Output: out})
			switch {
			case err == nil:
				mu.Lock()
				won = append(won, out)
				mu.Unlock()
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("FinishRun %d = %v, want nil or ErrConflict", i, err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("the racing FinishRuns: %v ended the run, want exactly one", won)
	}
	if got, err := s.JobRun(ctx, "j", r.Run); err != nil || got.Output != won[0] {
		t.Errorf("the run after the race: output %q, %v; want %q", got.Output, err, won[0])
	}
}
