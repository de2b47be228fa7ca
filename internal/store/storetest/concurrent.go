package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
)

// Asyncer is the optional ability of a store to take a write at once and
// report its durability later, keeping the order writes were handed over.
type Asyncer interface {
	CommitAsync(ctx context.Context, b *store.Batch) func() error
}

// Concurrent deliveries of one input with one idempotency key store it
// once: every caller gets the same item, exactly one of them as new.
func testEnqueueConcurrentSameKey(t *testing.T, x *suite) {
	s := x.newStore(t)
	sess := mustSession(t, s, "assistant", "chat:alice")
	const callers = 20
	ids := make([]int64, callers)
	dups := make([]bool, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			it, dup, err := s.Enqueue(t.Context(), store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "once", IdempotencyKey: "k1"})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], dups[i] = it.ID, dup
		})
	}
	wg.Wait()
	if n := len(slices.DeleteFunc(slices.Clone(dups), func(d bool) bool { return d })); n != 1 {
		t.Errorf("%d callers were told the input is new, want 1", n)
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("callers got items %v, want one", ids)
		}
	}
	pending, err := s.Pending(t.Context(), sess.ID)
	if err != nil || len(pending) != 1 {
		t.Errorf("pending = %d items, %v; want 1", len(pending), err)
	}
}

// A write that fails beside others in flight fails alone: the others are
// written, nothing of it is.
func testFailureIsolated(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	const writers = 30
	ids := make([]int64, writers)
	for i := range ids {
		ids[i] = mustSession(t, s, "assistant", fmt.Sprint("k", i)).ID
	}
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			b := &store.Batch{Session: ids[i], Events: []event.Event{input(0, 1, "hello")}, State: store.StateActive}
			if i%3 == 0 {
				b.Done = []int64{1_000_000 + int64(i)} // no such inbox item: the batch fails
			}
			errs[i] = s.Commit(ctx, b)
		})
	}
	wg.Wait()
	for i, err := range errs {
		sess, rerr := s.SessionByID(ctx, ids[i])
		if rerr != nil {
			t.Fatal(rerr)
		}
		if i%3 == 0 {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("writer %d: %v, want ErrNotFound", i, err)
			}
			if sess.LastSeq != 0 || sess.State != store.StateCreated {
				t.Errorf("writer %d failed but its session is at seq %d, state %s", i, sess.LastSeq, sess.State)
			}
			continue
		}
		if err != nil {
			t.Errorf("writer %d failed with a failing neighbour: %v", i, err)
		}
		if sess.LastSeq != 1 || sess.State != store.StateActive {
			t.Errorf("writer %d: session at seq %d, state %s; want 1, active", i, sess.LastSeq, sess.State)
		}
	}
}

// Writes handed over asynchronously by one goroutine are numbered in the
// order it handed them over, and each is durable when its wait returns.
func testCommitAsyncOrder(t *testing.T, x *suite) {
	s := x.newStore(t)
	as, ok := s.(Asyncer)
	if !ok {
		t.Skip("the store has no asynchronous commits")
	}
	ctx := t.Context()
	sess := mustSession(t, s, "assistant", "chat:alice")
	other := mustSession(t, s, "assistant", "chat:bob")
	const n = 50
	waits := make([]func() error, n)
	batches := make([]*store.Batch, n)
	for i := range n {
		id := sess.ID
		if i%2 == 1 {
			id = other.ID // interleaved with another session's writes
		}
		batches[i] = &store.Batch{Session: id, Events: []event.Event{text(0, 1, fmt.Sprint(i))}}
		waits[i] = as.CommitAsync(ctx, batches[i])
	}
	for i, wait := range waits {
		if err := wait(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		evs, err := s.Events(ctx, batches[i].Session, batches[i].Events[0].Seq-1, 1)
		if err != nil || len(evs) != 1 || string(evs[0].Data) != string(batches[i].Events[0].Data) {
			t.Fatalf("write %d is not readable once durable: %v, %v", i, evs, err)
		}
	}
	var got []int64
	for i := 0; i < n; i += 2 {
		got = append(got, batches[i].Events[0].Seq)
	}
	want := make([]int64, 0, n/2)
	for i := range n / 2 {
		want = append(want, int64(i+1))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("seqs in hand-over order (-want +got):\n%s", diff)
	}
}

// A query's words must all occur, in any order; a piece of several words
// (joined by punctuation) is a phrase; a word ending in * is a prefix;
// case and the accents of Latin letters do not matter.
func testSearchHistoryWords(t *testing.T, x *suite) {
	s := x.newStore(t)
	sess := mustSession(t, s, "alice", "chat:1")
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{
		input(0, 1, "The lock timeout hit the migration"),         // 1
		text(0, 1, "A timeout, then the lock was released"),       // 2
		input(0, 2, "Le CAFÉ est fermé; the migrations are done"), // 3
		text(0, 2, "Nothing here"),                                // 4
	}})
	for _, tc := range []struct {
		q    string
		want []int64
	}{
		{"lock timeout", []int64{1, 2}},
		{"timeout lock", []int64{1, 2}},
		{"lock-timeout", []int64{1}}, // a phrase: adjacent, in order
		{"timeout-lock", nil},
		{"lock garden", nil}, // every word must occur
		{"migration", []int64{1}},
		{"migration*", []int64{1, 3}},
		{"migr", nil},
		{"cafe FERME", []int64{3}},
		{"Café", []int64{3}},
	} {
		hits, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: tc.q})
		if err != nil {
			t.Fatalf("%q: %v", tc.q, err)
		}
		var got []int64
		for _, h := range hits {
			got = append(got, h.Event.Seq)
		}
		slices.Sort(got)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q: seqs (-want +got):\n%s", tc.q, diff)
		}
	}
}
