package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
)

// ErrInvalid is returned (wrapped) for a request the store refuses before
// writing anything: a missing session, an unknown state, a bad payload.
// It is store.ErrInvalid.
var ErrInvalid = store.ErrInvalid

// Commit writes b in one transaction and waits until it is durable. It
// assigns the events consecutive sequence numbers after the session's last
// one and writes them back into b.Events, together with the session id and,
// where it was zero, the commit time. A batch without events may still set
// the state, mark inbox items done and record usage.
//
// A batch with a session also sets the session's updated_at. Commit does not
// keep b, but event payloads (Data) must not be changed while it runs, nor,
// if ctx ends first, until the write has happened. On an error other than
// ctx's, nothing of b is written; on any error b is unchanged.
func (s *Store) Commit(ctx context.Context, b *store.Batch) error {
	if b == nil {
		return fmt.Errorf("sqlite: commit: %w: nil batch", ErrInvalid)
	}
	if err := store.CheckBatch(b); err != nil {
		return fmt.Errorf("sqlite: commit: %w: %v", ErrInvalid, err)
	}
	if b.Session == 0 && len(b.Done) == 0 && len(b.Usage) == 0 {
		return nil // nothing to write
	}
	r := s.getRequest(ctx, opCommit)
	r.session, r.state = b.Session, b.State
	r.events = append(r.events, b.Events...)
	r.done = append(r.done, b.Done...)
	r.usage = append(r.usage, b.Usage...)
	if err := s.send(ctx, r); err != nil {
		return err
	}
	err := r.err
	if err == nil {
		copy(b.Events, r.events)
	}
	s.putRequest(r)
	return err
}

// CommitAsync hands b to the writer now, behind every write handed over
// before it, and returns a function that waits until b is durable (or
// failed) and returns the result, as Commit would. Writes handed over by one
// goroutine become durable in the order it handed them over, so a caller
// can keep working — call a model, run an idempotent tool — while its last
// write is being synced. The returned function must be called exactly once;
// b's events get their Seq when it returns nil.
func (s *Store) CommitAsync(ctx context.Context, b *store.Batch) func() error {
	if b == nil {
		return func() error { return fmt.Errorf("sqlite: commit: %w: nil batch", ErrInvalid) }
	}
	if err := store.CheckBatch(b); err != nil {
		return func() error { return fmt.Errorf("sqlite: commit: %w: %v", ErrInvalid, err) }
	}
	if b.Session == 0 && len(b.Done) == 0 && len(b.Usage) == 0 {
		return func() error { return nil }
	}
	// The write must not be skipped because the caller's ctx ends before
	// the writer reaches it: once handed over, it happens.
	ctx = context.WithoutCancel(ctx)
	r := s.getRequest(ctx, opCommit)
	r.session, r.state = b.Session, b.State
	r.events = append(r.events, b.Events...)
	r.done = append(r.done, b.Done...)
	r.usage = append(r.usage, b.Usage...)
	if err := s.hand(ctx, r); err != nil {
		return func() error { return err }
	}
	return func() error {
		<-r.reply
		err := r.err
		if err == nil {
			copy(b.Events, r.events)
		}
		s.putRequest(r)
		return err
	}
}

// Enqueue persists a pending inbox item and returns it with its id (the
// turn id). If the session already has an item with the same non-empty
// IdempotencyKey, it returns that item with duplicate = true and writes
// nothing. item.State is ignored; a zero CreatedAt becomes now.
func (s *Store) Enqueue(ctx context.Context, item store.InboxItem) (store.InboxItem, bool, error) {
	if it, dup, err := s.checkEnqueue(ctx, item); err != nil || dup {
		return it, dup, err
	}
	r := s.getRequest(ctx, opEnqueue)
	item.ID = s.nextInbox.Add(1)
	r.item = item
	if err := s.send(ctx, r); err != nil {
		return store.InboxItem{}, false, err
	}
	it, dup, err := r.item, r.duplicate, r.err
	s.putRequest(r)
	if err != nil {
		return store.InboxItem{}, false, err
	}
	return it, dup, nil
}

// checkEnqueue validates an item and answers a redelivery of one already
// stored.
func (s *Store) checkEnqueue(ctx context.Context, item store.InboxItem) (store.InboxItem, bool, error) {
	switch {
	case item.Session <= 0:
		return store.InboxItem{}, false, fmt.Errorf("sqlite: enqueue: %w: session id %d", ErrInvalid, item.Session)
	case item.Kind != event.Input && item.Kind != event.SystemMessage && item.Kind != event.Reset && item.Kind != event.CompactRequest:
		return store.InboxItem{}, false, fmt.Errorf("sqlite: enqueue: %w: kind %q, want %q, %q, %q or %q",
			ErrInvalid, item.Kind, event.Input, event.SystemMessage, event.Reset, event.CompactRequest)
	case item.Hops < 0:
		return store.InboxItem{}, false, fmt.Errorf("sqlite: enqueue: %w: hops %d", ErrInvalid, item.Hops)
	}
	if item.IdempotencyKey != "" {
		// Most duplicates are redeliveries of something stored long ago:
		// answer them from a reader without queueing for the writer.
		it, err := scanInbox(s.r.inboxByKey.QueryRowContext(ctx, item.Session, item.IdempotencyKey))
		if err == nil {
			return it, true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return store.InboxItem{}, false, s.readErr("enqueue", err)
		}
	}
	return store.InboxItem{}, false, nil
}

// EnqueueEarly is Enqueue that returns as soon as the writer has given the
// item its id, while its transaction is still to be synced, with a function
// that waits until the item is durable (or failed). A caller can start
// work on the item meanwhile — anything it writes later is handed to the
// writer after the item, so it can never be durable without it — but must
// not tell anyone the item was accepted before durable returns nil.
// durable must be called exactly once when err is nil.
func (s *Store) EnqueueEarly(ctx context.Context, item store.InboxItem) (stored store.InboxItem, duplicate bool, durable func() error, err error) {
	done := func() error { return nil }
	if it, dup, err := s.checkEnqueue(ctx, item); err != nil || dup {
		return it, dup, done, err
	}
	item.ID = s.nextInbox.Add(1)
	if item.CreatedAt.IsZero() {
		item.CreatedAt = time.Now().UTC()
	}
	r := s.getRequest(context.WithoutCancel(ctx), opEnqueue)
	// Without an idempotency key the item cannot turn out a duplicate: it
	// is complete now, with its id, and the caller need not wait for the
	// writer at all until it needs durability.
	r.item, r.wantEarly = item, item.IdempotencyKey != ""
	if err := s.hand(ctx, r); err != nil {
		return store.InboxItem{}, false, nil, err
	}
	finish := func() error {
		<-r.reply
		err := r.err
		s.putRequest(r)
		return err
	}
	if !r.wantEarly {
		item.State = store.InboxPending
		return item, false, finish, nil
	}
	select {
	case e := <-r.early:
		if e.err != nil {
			finish()
			return store.InboxItem{}, false, nil, e.err
		}
		if e.dup {
			// Stored before, by a delivery that raced this one: durable.
			return e.item, true, done, finish()
		}
		return e.item, false, finish, nil
	case <-r.reply:
		// Done already (both channels were ready), or the group failed
		// before this request was applied.
		var e earlyResult
		applied := false
		select {
		case e = <-r.early:
			applied = true
		default:
		}
		err := r.err
		s.putRequest(r)
		if err == nil && !applied {
			err = errors.New("sqlite: enqueue: not applied")
		}
		if err != nil {
			return store.InboxItem{}, false, nil, err
		}
		return e.item, e.dup, done, nil
	}
}

// Session returns the session agent/key, creating it in state created if it
// does not exist. Concurrent callers for a new address all get the same
// session; exactly one of them sees created = true.
func (s *Store) Session(ctx context.Context, agent, key string) (store.Session, bool, error) {
	switch {
	case agent == "" || key == "":
		return store.Session{}, false, fmt.Errorf("sqlite: session: %w: empty agent or key (%q, %q)", ErrInvalid, agent, key)
	case strings.Contains(agent, "/"):
		return store.Session{}, false, fmt.Errorf("sqlite: session: %w: agent id %q contains '/'", ErrInvalid, agent)
	}
	if s.isDown.Load() {
		return store.Session{}, false, store.ErrClosed
	}
	sess, err := scanSession(s.r.sessionByKey.QueryRowContext(ctx, agent, key))
	if err == nil {
		return sess, false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return store.Session{}, false, s.readErr("session", err)
	}
	r := s.getRequest(ctx, opSession)
	r.agent, r.key = agent, key
	if err := s.send(ctx, r); err != nil {
		return store.Session{}, false, err
	}
	sess, created, err := r.sess, r.created, r.err
	s.putRequest(r)
	if err != nil {
		return store.Session{}, false, err
	}
	return sess, created, nil
}

// SaveAgent records an agent definition, replacing any earlier one with the
// same id. A zero UpdatedAt becomes now.
func (s *Store) SaveAgent(ctx context.Context, a store.AgentRecord) error {
	if a.ID == "" {
		return fmt.Errorf("sqlite: save agent: %w: empty id", ErrInvalid)
	}
	if len(a.Definition) > 0 && !json.Valid(a.Definition) {
		return fmt.Errorf("sqlite: save agent %q: %w: definition is not valid JSON", a.ID, ErrInvalid)
	}
	r := s.getRequest(ctx, opSaveAgent)
	r.rec = a
	if err := s.send(ctx, r); err != nil {
		return err
	}
	err := r.err
	s.putRequest(r)
	return err
}
