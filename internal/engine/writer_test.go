package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
)

// heldLog is a Log that records the batches handed to it, in order, and
// makes each durable only when the test releases it.
type heldLog struct {
	mu     sync.Mutex
	handed []*store.Batch
	done   []chan error // by position in handed
}

func (l *heldLog) Commit(ctx context.Context, b *store.Batch) func() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan error, 1)
	l.handed = append(l.handed, b)
	l.done = append(l.done, ch)
	return func() error { return <-ch }
}

// release makes the i-th batch handed over durable, or failed with err.
func (l *heldLog) release(i int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done[i] <- err
}

// texts returns the texts of the events of each batch handed over.
func (l *heldLog) texts() [][]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]string
	for _, b := range l.handed {
		var texts []string
		for _, e := range b.Events {
			var d event.TextData
			e.Decode(&d)
			texts = append(texts, d.Text)
		}
		out = append(out, texts)
	}
	return out
}

// batch is a batch of text events with the given texts.
func batch(texts ...string) *store.Batch {
	b := &store.Batch{Session: 1}
	for _, t := range texts {
		b.Events = append(b.Events, event.New(1, 7, event.Text, event.TextData{Text: t}))
	}
	return b
}

func wantHanded(t *testing.T, l *heldLog, want [][]string) {
	t.Helper()
	if diff := cmp.Diff(want, l.texts()); diff != "" {
		t.Errorf("batches handed to the log (-want +got):\n%s", diff)
	}
}

// Writes that may wait are held back and merged, then handed over
// together once the delay passes with no other write.
func TestWriterMergesHeldBackWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &heldLog{}
		w := newWriter(t.Context(), l, nil)
		a := batch("a")
		a.State, a.Usage = store.StateActive, []store.Usage{{Session: 1, Model: "m"}}
		if err := w.write(t.Context(), a, true); err != nil {
			t.Fatal(err)
		}
		if err := w.write(t.Context(), batch("b"), true); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		wantHanded(t, l, nil)
		time.Sleep(CoalesceDelay)
		synctest.Wait()
		wantHanded(t, l, [][]string{{"a", "b"}})
		b := l.handed[0]
		if b.State != store.StateActive || len(b.Usage) != 1 {
			t.Errorf("merged batch: state %q, usage %+v", b.State, b.Usage)
		}
		l.release(0, nil)
		if err := w.close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
}

// A write that may not wait takes what is held back in front of it, in one
// batch, keeping its own state if it has one; the timer then has nothing
// to hand over.
func TestWriterSyncWriteTakesHeldBack(t *testing.T) {
	for _, tc := range []struct{ own, want string }{{"", store.StateActive}, {store.StateIdle, store.StateIdle}} {
		synctest.Test(t, func(t *testing.T) {
			l := &heldLog{}
			w := newWriter(t.Context(), l, nil)
			a := batch("a")
			a.State = store.StateActive
			w.write(t.Context(), a, true)
			done := make(chan error)
			go func() {
				c := batch("c")
				c.State = tc.own
				done <- w.write(t.Context(), c, false)
			}()
			synctest.Wait()
			wantHanded(t, l, [][]string{{"a", "c"}})
			if got := l.handed[0].State; got != tc.want {
				t.Errorf("own state %q: batch state %q, want %q", tc.own, got, tc.want)
			}
			l.release(0, nil)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * CoalesceDelay)
			synctest.Wait()
			wantHanded(t, l, [][]string{{"a", "c"}})
		})
	}
}

// A write waits until every write handed over before it is durable before
// it is handed over itself, then waits for its own durability.
func TestWriterOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &heldLog{}
		w := newWriter(t.Context(), l, nil)
		w.write(t.Context(), batch("a"), true)
		time.Sleep(CoalesceDelay)
		synctest.Wait()
		wantHanded(t, l, [][]string{{"a"}}) // handed over, not yet durable
		done := make(chan error, 1)
		go func() { done <- w.write(t.Context(), batch("b"), false) }()
		synctest.Wait()
		wantHanded(t, l, [][]string{{"a"}})
		l.release(0, nil)
		synctest.Wait()
		wantHanded(t, l, [][]string{{"a"}, {"b"}})
		select {
		case err := <-done:
			t.Fatalf("write returned %v before its batch was durable", err)
		default:
		}
		l.release(1, nil)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// A held-back write that fails to become durable fails the turn's next
// write, which is then not handed over: nothing after a lost write may
// become durable.
func TestWriterEarlierFailureStopsLaterWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &heldLog{}
		w := newWriter(t.Context(), l, nil)
		w.write(t.Context(), batch("a"), true)
		time.Sleep(CoalesceDelay)
		synctest.Wait()
		disk := errors.New("disk full")
		l.release(0, disk)
		if err := w.write(t.Context(), batch("b"), false); !errors.Is(err, disk) {
			t.Errorf("write after a failed one: %v, want %v", err, disk)
		}
		wantHanded(t, l, [][]string{{"a"}})
	})
}

// close drops what is still held back (the turn resumes from the log) and
// waits for what was handed over, returning its error.
func TestWriterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &heldLog{}
		w := newWriter(t.Context(), l, nil)
		w.write(t.Context(), batch("a"), true)
		time.Sleep(CoalesceDelay)
		synctest.Wait()
		w.write(t.Context(), batch("dropped"), true)
		done := make(chan error, 1)
		go func() { done <- w.close() }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("close returned %v before the write handed over was durable", err)
		default:
		}
		disk := errors.New("disk full")
		l.release(0, disk)
		if err := <-done; !errors.Is(err, disk) {
			t.Errorf("close: %v, want %v", err, disk)
		}
		time.Sleep(10 * CoalesceDelay)
		synctest.Wait()
		wantHanded(t, l, [][]string{{"a"}})
	})
}

// Nothing reaches the log before the turn's input is durable; if it never
// becomes durable, nothing does.
func TestWriterWaitsForInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &heldLog{}
		accepted := make(chan error, 1)
		w := newWriter(t.Context(), l, sync.OnceValue(func() error { return <-accepted }))
		w.write(t.Context(), batch("a"), true)
		done := make(chan error, 1)
		go func() { done <- w.write(t.Context(), batch("b"), false) }()
		synctest.Wait()
		wantHanded(t, l, nil)
		lost := errors.New("inbox write failed")
		accepted <- lost
		if err := <-done; !errors.Is(err, lost) || !errors.Is(err, errStore) {
			t.Errorf("write: %v, want errStore and %v", err, lost)
		}
		w.write(t.Context(), batch("c"), true)
		time.Sleep(CoalesceDelay)
		synctest.Wait()
		wantHanded(t, l, nil)
		if err := w.close(); !errors.Is(err, lost) {
			t.Errorf("close: %v, want %v", err, lost)
		}
	})
}
