package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/store"
)

// endDelivered ends r done and records its delivery.
func endDelivered(t testing.TB, s Store, r store.JobRun) {
	t.Helper()
	if _, err := s.FinishRun(t.Context(), store.JobRun{Job: r.Job, Run: r.Run, Status: store.RunDone}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordDelivery(t.Context(), r.Job, r.Run, time.Time{}, ""); err != nil {
		t.Fatal(err)
	}
}

// runIDs returns the ids of runs.
func runIDs(runs []store.JobRun) []string {
	ids := []string{}
	for _, r := range runs {
		ids = append(ids, r.Run)
	}
	return ids
}

// A done, error or skipped run's delivery (its output, its failure
// alert) is pending until it is recorded, once: UndeliveredRuns lists
// the job's pending ones oldest first (not the open or cancelled runs,
// nor another job's), across a reopen;
// RecordDelivery records it made or given up, and a second record, or
// one of an open run, is ErrConflict.
func testJobRunDelivery(t *testing.T, x *suite) {
	name := x.name()
	s := x.open(t, name)
	ctx := t.Context()
	end := func(i int, status string) store.JobRun {
		r := mustStartRun(t, s, fire("j", i, store.TriggerEvery))
		if status == store.RunRunning {
			return r
		}
		got, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: r.Run, Status: status, Output: fmt.Sprint("out ", i)})
		if err != nil {
			t.Fatal(err)
		}
		if !got.DeliveredAt.IsZero() || got.DeliveryError != "" || got.Undelivered() != (status == store.RunDone || status == store.RunError) {
			t.Errorf("run %d ended %s: delivered at %v (%q), undelivered %v", i, status, got.DeliveredAt, got.DeliveryError, got.Undelivered())
		}
		return got
	}
	end(3, store.RunError)
	end(0, store.RunDone)
	open := end(1, store.RunRunning)
	end(2, store.RunCancelled)
	end(4, store.RunDone)
	sk := fire("j", 5, store.TriggerEvery)
	sk.Status, sk.Error = store.RunSkipped, "busy"
	mustStartRun(t, s, sk)
	other := mustStartRun(t, s, fire("k", 0, store.TriggerEvery))
	if _, err := s.FinishRun(ctx, store.JobRun{Job: "k", Run: other.Run, Status: store.RunDone}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = x.open(t, name)

	pending, err := s.UndeliveredRuns(ctx, "j", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{store.RunID(runAt(0), ""), store.RunID(runAt(3), ""), store.RunID(runAt(4), ""), store.RunID(runAt(5), "")}
	if d := cmp.Diff(want, runIDs(pending)); d != "" {
		t.Errorf("the undelivered runs (-want +got):\n%s", d)
	}
	if len(pending) == 4 && (pending[0].Output != "out 0" || !pending[3].Undelivered() || pending[3].Error != "busy") {
		t.Errorf("an undelivered run as listed: %+v", pending[0])
	}
	if page, err := s.UndeliveredRuns(ctx, "j", 2); err != nil || len(page) != 2 {
		t.Errorf("UndeliveredRuns(j, 2) = %d runs, %v; want 2", len(page), err)
	}

	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	got, err := s.RecordDelivery(ctx, "j", want[0], at, "")
	if err != nil || !got.DeliveredAt.Equal(at) || got.DeliveryError != "" || got.Undelivered() || got.Output != "out 0" {
		t.Errorf("RecordDelivery(made) = %+v, %v", got, err)
	}
	before := time.Now()
	failed, err := s.RecordDelivery(ctx, "j", want[1], time.Time{}, "webhook answered 503 Service Unavailable")
	if err != nil || failed.DeliveredAt.Before(before.Add(-time.Second)) || failed.DeliveryError != "webhook answered 503 Service Unavailable" {
		t.Errorf("RecordDelivery(given up) = %+v, %v; want about now, with its reason", failed, err)
	}
	if _, err := s.RecordDelivery(ctx, "j", want[0], time.Time{}, "again"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second RecordDelivery = %v, want ErrConflict", err)
	}
	if _, err := s.RecordDelivery(ctx, "j", open.Run, time.Time{}, ""); !errors.Is(err, store.ErrConflict) {
		t.Errorf("RecordDelivery of a running run = %v, want ErrConflict", err)
	}
	if _, err := s.RecordDelivery(ctx, "j", store.RunID(runAt(9), ""), time.Time{}, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RecordDelivery of a run never taken = %v, want ErrNotFound", err)
	}
	if _, err := s.RecordDelivery(ctx, "no/such", want[0], time.Time{}, ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("RecordDelivery of an invalid job = %v, want ErrInvalid", err)
	}
	if read, err := s.JobRun(ctx, "j", want[0]); err != nil || !read.DeliveredAt.Equal(at) || read.DeliveryError != "" {
		t.Errorf("the run after a refused second record: %+v, %v; want it as first recorded", read, err)
	}
	pending, err = s.UndeliveredRuns(ctx, "j", 0)
	if d := cmp.Diff(want[2:], runIDs(pending)); err != nil || d != "" {
		t.Errorf("the undelivered runs after two records (-want +got): %v\n%s", err, d)
	}
	if k, err := s.UndeliveredRuns(ctx, "k", 0); err != nil || len(k) != 1 {
		t.Errorf("another job's undelivered runs: %d, %v; want 1", len(k), err)
	}
	if _, err := s.UndeliveredRuns(ctx, "j", -1); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("UndeliveredRuns with limit -1 = %v, want ErrInvalid", err)
	}
}

// A job takes a webhook delivery once: a StartRun of a delivery the job
// has a run of, whatever the run's id, returns that run as not created,
// also to callers racing (nodes given the same delivery at once); runs
// without a delivery, and another job's run of the same delivery id,
// are runs of their own.
func testJobRunDeliveryUnique(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	hook := func(i int, node, delivery string) store.JobRun {
		r := fire("j", i, store.TriggerWebhook)
		r.Run = store.RunID(runAt(i), node)
		r.Node, r.Delivery = node, delivery
		return r
	}
	first := mustStartRun(t, s, hook(0, "n1", "d-1"))
	if first.Delivery != "d-1" {
		t.Errorf("the run taken has delivery %q, want d-1", first.Delivery)
	}
	again, created, err := s.StartRun(ctx, hook(1, "n2", "d-1"))
	if err != nil || created {
		t.Fatalf("StartRun of a delivery taken = created %v, %v; want the run taken before", created, err)
	}
	if d := cmp.Diff(first, again); d != "" {
		t.Errorf("StartRun of a delivery taken returned (-taken +returned):\n%s", d)
	}
	if got, err := s.DeliveryRun(ctx, "j", "d-1"); err != nil || got.Run != first.Run {
		t.Errorf("DeliveryRun(j, d-1) = %q, %v; want %q", got.Run, err, first.Run)
	}
	if _, err := s.DeliveryRun(ctx, "j", "d-2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeliveryRun of a delivery never taken = %v, want ErrNotFound", err)
	}
	if _, err := s.DeliveryRun(ctx, "j", ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeliveryRun of no delivery = %v, want ErrNotFound", err)
	}
	mustStartRun(t, s, hook(2, "n1", ""))
	mustStartRun(t, s, hook(3, "n1", ""))
	other := hook(0, "n1", "d-1")
	other.Job = "k"
	mustStartRun(t, s, other)
	long := hook(4, "n1", string(make([]byte, store.MaxRunDelivery+1)))
	if _, _, err := s.StartRun(ctx, long); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("StartRun with a delivery id over %d bytes = %v, want ErrInvalid", store.MaxRunDelivery, err)
	}

	raceStartRun(t, s, "one delivery", func(i int, node string) store.JobRun { return hook(10+i, node, "d-race") })
	runs, err := s.JobRuns(ctx, "j", "", 0)
	if err != nil || len(runs) != 4 {
		t.Errorf("the job's runs after the race: %v, %v; want 4", runIDs(runs), err)
	}
}

// PruneRuns with a time removes, of the runs beyond the newest keep, only
// those scheduled before it: the newest keep stay whatever their age; it
// never removes the newest run, an open run or one whose delivery is
// pending, whatever their age.
func testJobRunPruneAge(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	for i := range 8 {
		r := mustStartRun(t, s, fire("j", i, store.TriggerEvery))
		switch i {
		case 1: // running
		case 2: // done, its delivery pending
			if _, err := s.FinishRun(ctx, store.JobRun{Job: "j", Run: r.Run, Status: store.RunDone}); err != nil {
				t.Fatal(err)
			}
		default:
			endDelivered(t, s, r)
		}
	}
	sk := fire("j", 3, store.TriggerEvery)
	sk.Run, sk.Status, sk.Error = store.RunID(runAt(3), "skipped"), store.RunSkipped, "busy"
	mustStartRun(t, s, sk)
	if _, err := s.RecordDelivery(ctx, "j", sk.Run, time.Time{}, ""); err != nil { // its failure alert
		t.Fatal(err)
	}
	if n, err := s.PruneRuns(ctx, "j", 100, runAt(6)); err != nil || n != 0 {
		t.Errorf("PruneRuns(j, 100, the sixth fire) = %d, %v; want none removed: all are among the newest 100", n, err)
	}
	n, err := s.PruneRuns(ctx, "j", 2, runAt(4))
	if err != nil || n != 3 {
		t.Errorf("PruneRuns(j, 2, the fourth fire) = %d, %v; want 3 removed", n, err)
	}
	runs, err := s.JobRuns(ctx, "j", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{store.RunID(runAt(7), ""), store.RunID(runAt(6), ""), store.RunID(runAt(5), ""), store.RunID(runAt(4), ""),
		store.RunID(runAt(2), ""), store.RunID(runAt(1), "")}
	if d := cmp.Diff(want, runIDs(runs)); d != "" {
		t.Errorf("the runs kept: the newest 2, those beyond them not older than the fourth fire, the pending and the open (-want +got):\n%s", d)
	}
	if n, err := s.PruneRuns(ctx, "j", 1, runAt(60)); err != nil || n != 3 {
		t.Errorf("PruneRuns(j, 1, after every fire) = %d, %v; want 3 removed (all but the newest, open and pending)", n, err)
	}
	if last, err := s.LastRun(ctx, "j"); err != nil || last.Run != want[0] {
		t.Errorf("LastRun after the prunes = %q, %v; want %q", last.Run, err, want[0])
	}
}

// A job takes a webhook request once: a StartRun of a MAC the job has a
// run of, whatever its delivery id (another, or none) and run id,
// returns that run as not created, also to callers racing; the MAC is
// kept across a reopen, another job's run of the same MAC is a run of
// its own, and a MAC that is not lowercase hex is ErrInvalid.
func testJobRunMACUnique(t *testing.T, x *suite) {
	name := x.name()
	s := x.open(t, name)
	ctx := t.Context()
	mac := func(b byte) string { return strings.Repeat(fmt.Sprintf("%02x", b), 32) }
	hook := func(i int, node, delivery, m string) store.JobRun {
		r := fire("j", i, store.TriggerWebhook)
		r.Run = store.RunID(runAt(i), node)
		r.Node, r.Delivery, r.MAC = node, delivery, m
		return r
	}
	first := mustStartRun(t, s, hook(0, "n1", "d-1", mac(1)))
	if first.MAC != mac(1) {
		t.Errorf("the run taken has MAC %q, want %q", first.MAC, mac(1))
	}
	s.Close()
	s = x.open(t, name)
	for _, d := range []string{"d-2", ""} {
		again, created, err := s.StartRun(ctx, hook(1, "n2", d, mac(1)))
		if err != nil || created {
			t.Fatalf("StartRun of a MAC taken, delivery %q = created %v, %v; want the run taken before", d, created, err)
		}
		if diff := cmp.Diff(first, again); diff != "" {
			t.Errorf("StartRun of a MAC taken, delivery %q, returned (-taken +returned):\n%s", d, diff)
		}
	}
	if got, err := s.MACRun(ctx, "j", mac(1)); err != nil || got.Run != first.Run {
		t.Errorf("MACRun(j, mac 1) = %q, %v; want %q", got.Run, err, first.Run)
	}
	for _, m := range []string{mac(2), ""} {
		if _, err := s.MACRun(ctx, "j", m); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MACRun of %q, never taken = %v, want ErrNotFound", m, err)
		}
	}
	mustStartRun(t, s, hook(2, "n1", "", mac(2)))
	mustStartRun(t, s, hook(3, "n1", "", ""))
	mustStartRun(t, s, hook(4, "n1", "", ""))
	other := hook(0, "n1", "", mac(1))
	other.Job = "k"
	mustStartRun(t, s, other)
	for _, bad := range []string{strings.ToUpper(mac(0xab)), mac(0xab)[1:], "zz", strings.Repeat("a", store.MaxRunMAC+2)} {
		if _, _, err := s.StartRun(ctx, hook(5, "n1", "", bad)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("StartRun with MAC %q = %v, want ErrInvalid", bad, err)
		}
		if _, err := s.MACRun(ctx, "j", bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("MACRun of %q = %v, want ErrInvalid", bad, err)
		}
	}

	raceStartRun(t, s, "one MAC under 8 delivery ids", func(i int, node string) store.JobRun {
		return hook(10+i, node, "d-race-"+node, mac(9))
	})
	runs, err := s.JobRuns(ctx, "j", "", 0)
	if err != nil || len(runs) != 5 {
		t.Errorf("the job's runs after the race: %v, %v; want 5", runIDs(runs), err)
	}
}

// raceStartRun has 8 callers ("nodes") take the runs run(i, node) gives
// at once, runs that are one fire (what says so is what: a delivery id,
// a MAC): exactly one must take it, and all 8 be told that run.
func raceStartRun(t *testing.T, s store.JobRunStore, what string, run func(i int, node string) store.JobRun) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won []string
	told := map[string]int{}
	for i := range 8 {
		wg.Go(func() {
			node := fmt.Sprintf("n%d", i)
			got, created, err := s.StartRun(t.Context(), run(i, node))
			if err != nil {
				t.Errorf("StartRun by %s: %v", node, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if created {
				won = append(won, got.Run)
			}
			told[got.Run]++
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("the racing StartRuns of %s: %v took it, want exactly one", what, won)
	}
	if told[won[0]] != 8 {
		t.Errorf("the runs the racing callers were told: %v; want all 8 told %s", told, won[0])
	}
}
