package embed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// flaky wraps a Hashed embedder: it records each call's batch, fails with
// ErrUnavailable while down is set, and rejects any batch holding the text
// "bad".
type flaky struct {
	h *Hashed

	mu      sync.Mutex
	down    bool
	batches [][]string
}

func newFlaky() *flaky { return &flaky{h: NewHashed(8)} }

func (f *flaky) Dim() int     { return f.h.Dim() }
func (f *flaky) Name() string { return "flaky" }

func (f *flaky) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.batches = append(f.batches, append([]string(nil), texts...))
	down := f.down
	f.mu.Unlock()
	if down {
		return nil, fmt.Errorf("%w: connection refused", ErrUnavailable)
	}
	for _, t := range texts {
		if t == "bad" {
			return nil, fmt.Errorf("%w: input rejected", ErrRejected)
		}
	}
	return f.h.Embed(ctx, texts)
}

func (f *flaky) setDown(d bool) {
	f.mu.Lock()
	f.down = d
	f.mu.Unlock()
}

func (f *flaky) calls() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.batches...)
}

// results collects what the callbacks receive.
type results struct {
	mu   sync.Mutex
	vecs map[int64][]float32
	errs map[int64]error
	n    map[int64]int
}

func newResults() *results {
	return &results{vecs: map[int64][]float32{}, errs: map[int64]error{}, n: map[int64]int{}}
}

func (r *results) done(id int64, v []float32, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[id]++
	if err != nil {
		r.errs[id] = err
	} else {
		r.vecs[id] = v
	}
}

func (r *results) count() map[int64]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int64]int{}
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

// start runs q in the background until the test's bubble ends it.
func start(t *testing.T, q *Queue) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- q.Run(ctx) }()
	return func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run = %v", err)
		}
	}
}

func TestQueueBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFlaky()
		q := NewQueue(f, &QueueOptions{BatchSize: 4})
		r := newResults()
		for i := range 10 {
			if !q.Submit(int64(i), fmt.Sprint("text ", i), r.done) {
				t.Fatalf("Submit(%d) refused", i)
			}
		}
		if q.Pending() != 10 {
			t.Fatalf("Pending = %d, want 10", q.Pending())
		}
		stop := start(t, q)
		synctest.Wait()
		var sizes []int
		for _, b := range f.calls() {
			sizes = append(sizes, len(b))
		}
		if diff := cmp.Diff([]int{4, 4, 2}, sizes); diff != "" {
			t.Errorf("batch sizes (-want +got):\n%s", diff)
		}
		for i := range 10 {
			want := embedAll(t, f.h, fmt.Sprint("text ", i))[0]
			if diff := cmp.Diff(want, r.vecs[int64(i)]); diff != "" {
				t.Errorf("vector %d (-want +got):\n%s", i, diff)
			}
		}
		if q.Pending() != 0 {
			t.Errorf("Pending = %d after the work is done", q.Pending())
		}

		// Work submitted while Run waits is picked up.
		q.Submit(42, "later", r.done)
		synctest.Wait()
		if r.count()[42] != 1 {
			t.Errorf("late item done %d times", r.count()[42])
		}
		stop()
	})
}

func TestQueueBackpressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFlaky()
		q := NewQueue(f, &QueueOptions{MaxPending: 3})
		r := newResults()
		for i := range 3 {
			if !q.Submit(int64(i), "x", r.done) {
				t.Fatalf("Submit(%d) refused below the limit", i)
			}
		}
		if q.Submit(3, "x", r.done) {
			t.Fatal("Submit accepted beyond MaxPending")
		}
		if !q.Submit(1, "replaced", r.done) {
			t.Fatal("resubmitting a waiting id was refused")
		}
		if q.Pending() != 3 {
			t.Fatalf("Pending = %d, want 3", q.Pending())
		}
		stop := start(t, q)
		synctest.Wait()
		if diff := cmp.Diff([][]string{{"x", "replaced", "x"}}, f.calls()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		if !q.Submit(3, "x", r.done) {
			t.Error("Submit refused after the queue drained")
		}
		synctest.Wait()
		if diff := cmp.Diff(map[int64]int{0: 1, 1: 1, 2: 1, 3: 1}, r.count()); diff != "" {
			t.Errorf("callbacks (-want +got):\n%s", diff)
		}
		stop()
	})
}

type status struct {
	Up  bool
	Err string
}

func TestQueueOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFlaky()
		f.setDown(true)
		var mu sync.Mutex
		var statuses []status
		q := NewQueue(f, &QueueOptions{
			BatchSize:  2,
			MinBackoff: time.Second,
			MaxBackoff: 4 * time.Second,
			OnStatus: func(up bool, err error) {
				mu.Lock()
				defer mu.Unlock()
				s := status{Up: up}
				if err != nil {
					s.Err = err.Error()
				}
				statuses = append(statuses, s)
			},
		})
		got := func() []status {
			mu.Lock()
			defer mu.Unlock()
			return append([]status(nil), statuses...)
		}
		r := newResults()
		stale := newResults()
		q.Submit(1, "alpha", r.done)
		q.Submit(2, "beta", stale.done)
		q.Submit(3, "gamma", r.done)
		stop := start(t, q)
		synctest.Wait()
		downOnce := []status{{Up: false, Err: "embed: embedder unavailable: connection refused"}}
		if diff := cmp.Diff(downOnce, got()); diff != "" {
			t.Fatalf("statuses (-want +got):\n%s", diff)
		}
		if q.Pending() != 3 {
			t.Fatalf("Pending = %d during the outage, want 3", q.Pending())
		}

		// Several more failed attempts report nothing new.
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if diff := cmp.Diff(downOnce, got()); diff != "" {
			t.Errorf("statuses after more failures (-want +got):\n%s", diff)
		}
		// While down, a newer submission for a waiting id replaces it.
		q.Submit(2, "beta v2", r.done)

		f.setDown(false)
		time.Sleep(4 * time.Second) // the longest backoff
		synctest.Wait()
		want := append(downOnce, status{Up: true})
		if diff := cmp.Diff(want, got()); diff != "" {
			t.Errorf("statuses after recovery (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[int64]int{1: 1, 2: 1, 3: 1}, r.count()); diff != "" {
			t.Errorf("callbacks (-want +got):\n%s", diff)
		}
		if n := len(stale.count()); n != 0 {
			t.Errorf("replaced callback called %d times", n)
		}
		if diff := cmp.Diff(embedAll(t, f.h, "beta v2")[0], r.vecs[2]); diff != "" {
			t.Errorf("id 2 embedded from the old text:\n%s", diff)
		}
		if q.Pending() != 0 {
			t.Errorf("Pending = %d", q.Pending())
		}
		stop()
	})
}

func TestQueueIsolatesBadItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFlaky()
		q := NewQueue(f, &QueueOptions{BatchSize: 8})
		r := newResults()
		for i, text := range []string{"good one", "bad", "good two"} {
			q.Submit(int64(i), text, r.done)
		}
		stop := start(t, q)
		synctest.Wait()
		stop()
		want := [][]string{{"good one", "bad", "good two"}, {"good one"}, {"bad"}, {"good two"}}
		if diff := cmp.Diff(want, f.calls()); diff != "" {
			t.Errorf("batches (-want +got):\n%s", diff)
		}
		if !errors.Is(r.errs[1], ErrRejected) {
			t.Errorf("bad item error = %v, want ErrRejected", r.errs[1])
		}
		if len(r.vecs[0]) != 8 || len(r.vecs[2]) != 8 || r.errs[0] != nil || r.errs[2] != nil {
			t.Errorf("good items: vecs %v errs %v", r.vecs, r.errs)
		}
	})
}

// shortEmbedder breaks the Embedder contract by returning too few vectors.
type shortEmbedder struct{ Hashed }

func (s *shortEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	v, err := s.Hashed.Embed(ctx, texts)
	return v[:len(v)-1], err
}

func TestQueueShortResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewQueue(&shortEmbedder{*NewHashed(4)}, nil)
		r := newResults()
		q.Submit(7, "x", r.done)
		stop := start(t, q)
		synctest.Wait()
		stop()
		if !errors.Is(r.errs[7], ErrBadResponse) {
			t.Errorf("err = %v, want ErrBadResponse", r.errs[7])
		}
	})
}

func TestQueueStopAndResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFlaky()
		f.setDown(true)
		q := NewQueue(f, nil)
		r := newResults()
		q.Submit(1, "kept", r.done)
		q.Submit(2, "no callback", nil)

		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- q.Run(ctx) }()
		synctest.Wait()
		if err := q.Run(ctx); !errors.Is(err, ErrRunning) {
			t.Errorf("second Run = %v, want ErrRunning", err)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if q.Pending() != 2 {
			t.Fatalf("Pending after stop = %d, want 2", q.Pending())
		}

		f.setDown(false)
		stop := start(t, q)
		synctest.Wait()
		stop()
		if diff := cmp.Diff(map[int64]int{1: 1}, r.count()); diff != "" {
			t.Errorf("callbacks (-want +got):\n%s", diff)
		}
		if q.Pending() != 0 {
			t.Errorf("Pending = %d", q.Pending())
		}
	})
}

func TestQueueBackoffGrows(t *testing.T) {
	q := NewQueue(NewHashed(4), &QueueOptions{MinBackoff: time.Second, MaxBackoff: 10 * time.Second})
	var got []time.Duration
	for i := range 6 {
		got = append(got, q.backoff(i))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if d := q.backoff(1000); d != 10*time.Second {
		t.Errorf("backoff(1000) = %v", d)
	}
}
