package sqlite

import (
	"context"
	"fmt"
	"sync"
	"time"

	"agentd/internal/store"
)

// An inbox item whose sender waits for its turn's answer need not be synced
// on its own: the answer is, and the write-ahead log is one file written in
// order, so the sync that makes the answer durable makes every commit
// before it durable too. EnqueueLazy commits such an item in a group
// without a sync when every request of the group allows it (SQLite's
// synchronous=NORMAL for that one transaction), and says when a later sync
// has covered it. A one-step turn then waits for one sync instead of two.
//
// What a crash between the two can lose is an item nobody was told was
// accepted: its sender learns only with the answer, or by asking Synced.
// Readers may see the item in the inbox before it is durable (a moment:
// the turn's next write is synced); the log's events, and so the stream,
// only ever come from synced commits.

// EnqueueLazy is EnqueueEarly for an item without an idempotency key (so
// never a duplicate) whose sender waits for something the item's turn
// writes later. committed
// returns once the item's transaction has committed (synced or not) or
// failed: the turn may write after it, as after EnqueueEarly's durable.
// synced returns once the item is durable, asking the writer for a sync
// if no later commit has made it so; it calls committed first. Both may be
// called more than once; committed must be called when err is nil.
func (s *Store) EnqueueLazy(ctx context.Context, item store.InboxItem) (stored store.InboxItem, committed func() error, synced func(context.Context) error, err error) {
	if item.IdempotencyKey != "" {
		// Its duplicates are found by readers, who would find it before
		// it is durable.
		return store.InboxItem{}, nil, nil, fmt.Errorf("sqlite: enqueue: %w: a lazy item with an idempotency key", ErrInvalid)
	}
	if _, _, err := s.checkEnqueue(ctx, item); err != nil {
		return store.InboxItem{}, nil, nil, err
	}
	item.ID = s.nextInbox.Add(1)
	if item.CreatedAt.IsZero() {
		item.CreatedAt = time.Now().UTC()
	}
	r := s.getRequest(context.WithoutCancel(ctx), opEnqueue)
	r.item, r.lazy = item, true
	if err := s.hand(ctx, r); err != nil {
		return store.InboxItem{}, nil, nil, err
	}
	var group uint64
	committed = sync.OnceValue(func() error {
		<-r.reply
		err := r.err
		group = r.group
		s.putRequest(r)
		return err
	})
	synced = func(ctx context.Context) error {
		if err := committed(); err != nil {
			return err
		}
		if s.synced.Load() >= group {
			return nil
		}
		return s.sync(ctx)
	}
	item.State = store.InboxPending
	return item, committed, synced, nil
}

// sync has the writer commit a synced write (the probe's page), which
// makes every commit before it durable.
func (s *Store) sync(ctx context.Context) error {
	r := s.getRequest(ctx, opProbe)
	if err := s.send(ctx, r); err != nil {
		return err
	}
	err := r.err
	s.putRequest(r)
	return err
}
