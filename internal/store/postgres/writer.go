package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentd/internal/event"
	"agentd/internal/store"
)

// op is the kind of a write request.
type op uint8

const (
	opCommit op = iota + 1
	opEnqueue
)

// request is one write handed to the writer goroutine. The caller fills
// the inputs, the writer the results, then signals reply; the caller reads
// the results only after that. Inputs are copies, so a caller that gives up
// waiting (ctx) leaves nothing of its own behind that the writer still
// uses, apart from event payload bytes.
type request struct {
	ctx context.Context
	op  op

	// opCommit
	session int64
	state   string
	events  []event.Event
	done    []int64
	usage   []store.Usage
	title   string // the title of the batch's first input with one ("" if none)
	epoch   int64  // the session's lease epoch the commit is fenced by (0: none)

	// opEnqueue (also its result)
	item store.InboxItem

	// results
	duplicate bool
	err       error

	reply chan struct{} // capacity 1
}

func newRequest(ctx context.Context, o op) *request {
	return &request{ctx: ctx, op: o, reply: make(chan struct{}, 1)}
}

// send hands r to the writer and waits for its answer. On a nil error the
// results in r are valid. On an error r must not be used: if ctx ended
// after the writer accepted r, the writer may still perform the write.
func (s *Store) send(ctx context.Context, r *request) error {
	if err := s.hand(ctx, r); err != nil {
		return err
	}
	return store.Await(ctx, r.reply)
}

// hand gives r to the writer without waiting for the answer.
func (s *Store) hand(ctx context.Context, r *request) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ErrClosed
	}
	session := r.session
	if r.op == opEnqueue {
		session = r.item.Session
	}
	select {
	case s.reqs[uint64(session)%uint64(len(s.reqs))] <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writer commits the requests of the queue in groups.
type writer struct {
	s *Store
	i int // its index among the store's writers
}

// run is a writer goroutine. It ends when reqs is closed and drained.
func (w *writer) run(reqs <-chan *request, maxBatch int) {
	group := make([]*request, 0, maxBatch)
	for r := range reqs {
		group = append(group[:0], r)
	drain:
		for len(group) < maxBatch {
			select {
			case r, ok := <-reqs:
				if !ok {
					break drain
				}
				group = append(group, r)
			default:
				break drain
			}
		}
		w.runGroup(group)
		for i, r := range group {
			group[i] = nil
			r.reply <- struct{}{} // r belongs to its caller from here on
		}
	}
}

// errApply is a request the group cannot apply (its own error is in the
// request): the group is rolled back and its requests applied one by one.
var errApply = errors.New("request not applied")

// runGroup commits a group of requests in one transaction, or, when one
// of them cannot be applied, each in its own, and sets every request's err.
func (w *writer) runGroup(group []*request) {
	st := &w.s.stats
	st.requests.Add(int64(len(group)))
	if n := int64(len(group)); n > st.largest.Load() {
		st.largest.Store(n)
	}
	live := group[:0:0]
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err // the caller gave up before its turn: skip it
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx := context.Background()
	conn, err := w.s.acquire(ctx)
	if err != nil {
		w.fail(live, fmt.Errorf("postgres: connect: %w", classify(err)))
		return
	}
	defer conn.Release()
	now := time.Now().UnixNano()
	if err := w.apply(ctx, conn, live, now); !errors.Is(err, errApply) {
		if err != nil {
			w.fail(live, err)
		}
		return
	}
	st.retried.Add(1)
	for _, r := range live {
		r.err = nil
		if err := w.apply(ctx, conn, []*request{r}, now); err != nil && !errors.Is(err, errApply) {
			r.err = err
		}
		if r.err != nil {
			w.s.log.Debug("store write failed", "op", r.op, "err", r.err)
		}
	}
}

// fail gives err to every request without an error of its own.
func (w *writer) fail(group []*request, err error) {
	w.s.log.Error("store group write failed", "requests", len(group), "err", err)
	w.s.lostConn(err)
	for _, r := range group {
		if r.err == nil {
			r.err = err
		}
	}
}

// step is one statement of a request and how to read its result.
type step struct {
	sql  string
	args []any
	read func(br pgx.BatchResults) error
}

// apply sends the requests' statements in one round trip, which
// PostgreSQL runs as one implicit transaction, committed (and flushed) at
// its end unless a statement fails: then it is rolled back whole. apply
// returns errApply when a request failed (its err says why); another
// error when the round trip as a whole failed.
func (w *writer) apply(ctx context.Context, conn *pgxpool.Conn, reqs []*request, now int64) error {
	committed := false
	w.s.fan.begin(w.i)
	defer func() { w.s.fan.end(w.i, reqs, committed) }()
	b := &pgx.Batch{}
	var steps [][]step
	for _, r := range reqs {
		var ss []step
		switch r.op {
		case opCommit:
			ss = commitSteps(r, w.s.nodeID, now)
		case opEnqueue:
			ss = enqueueSteps(r, now)
		}
		for _, s := range ss {
			b.Queue(s.sql, s.args...)
		}
		steps = append(steps, ss)
	}
	br := conn.SendBatch(ctx, b)
	failed := false
reading:
	for i, r := range reqs {
		for _, s := range steps[i] {
			if err := s.read(br); err != nil {
				r.err = err
				failed = true
				break reading
			}
		}
	}
	if err := br.Close(); err != nil && !failed {
		return fmt.Errorf("postgres: write: %w", classify(err))
	}
	if failed {
		return errApply
	}
	committed = true
	w.s.stats.commits.Add(1)
	return nil
}

// refused reports whether err is agentd_refuse's: a write that found what
// it refers to missing.
func refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "P0002"
}
