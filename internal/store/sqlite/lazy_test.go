package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
)

// TestEnqueueLazy: in synchronous=FULL a lazy item commits without being
// counted durable, and Synced then has the writer sync (one more request)
// unless a later commit did (none); in synchronous=NORMAL every commit is
// as durable as the store makes anything, so Synced asks nothing. An item
// with an idempotency key cannot be lazy.
func TestEnqueueLazy(t *testing.T) {
	for _, mode := range []string{SyncFull, SyncNormal} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"), &Options{Synchronous: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			sess, _, err := s.Session(ctx, "a", "k")
			if err != nil {
				t.Fatal(err)
			}
			lazy := func() func(context.Context) error {
				t.Helper()
				it, committed, synced, err := s.EnqueueLazy(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "hi"})
				if err != nil {
					t.Fatal(err)
				}
				if err := committed(); err != nil {
					t.Fatal(err)
				}
				if p, err := s.Pending(ctx, sess.ID); err != nil || len(p) == 0 || p[len(p)-1].ID != it.ID {
					t.Fatalf("pending after a lazy enqueue = %v, %v; want item %d last", p, err, it.ID)
				}
				return synced
			}

			before := s.synced.Load()
			synced := lazy()
			if got := s.synced.Load() != before; got != (mode == SyncNormal) {
				t.Errorf("a lazy commit counted durable: %v, want %v", got, mode == SyncNormal)
			}
			reqs := s.Stats().Requests
			if err := synced(ctx); err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			if mode == SyncFull {
				want = 1 // the sync asked for
			}
			if got := s.Stats().Requests - reqs; got != want {
				t.Errorf("Synced with no commit after the item: %d writer requests, want %d", got, want)
			}

			synced = lazy()
			if err := s.Commit(ctx, &store.Batch{Session: sess.ID, Events: []event.Event{event.New(sess.ID, 1, event.Text, event.TextData{Text: "x"})}}); err != nil {
				t.Fatal(err)
			}
			reqs = s.Stats().Requests
			if err := synced(ctx); err != nil {
				t.Fatal(err)
			}
			if got := s.Stats().Requests - reqs; got != 0 {
				t.Errorf("Synced after a synced commit: %d writer requests, want 0", got)
			}

			_, _, _, err = s.EnqueueLazy(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "hi", IdempotencyKey: "k"})
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("a lazy item with an idempotency key: %v, want ErrInvalid", err)
			}
		})
	}
}
