package embed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrRunning is returned by Queue.Run when the queue is already running.
var ErrRunning = errors.New("embed: queue already running")

// Defaults for QueueOptions.
const (
	DefaultMaxPending      = 4096
	DefaultQueueMinBackoff = time.Second
	DefaultQueueMaxBackoff = time.Minute
)

// QueueOptions configures a Queue. A nil *QueueOptions means all defaults.
type QueueOptions struct {
	// Logger receives outage and recovery messages; nil discards them.
	Logger *slog.Logger
	// BatchSize is the most texts passed to one Embed call; default
	// DefaultBatchSize.
	BatchSize int
	// MaxPending bounds the items waiting or being embedded; when it is
	// reached Submit reports false. Default DefaultMaxPending.
	MaxPending int
	// OnStatus, if set, is called from Run's goroutine when the embedder
	// goes down (up false, with the error) and when it works again (up
	// true, nil error): once per transition, starting from up.
	OnStatus func(up bool, err error)
	// MinBackoff is the wait after the first failure while the embedder is
	// down; it doubles with each further failure up to MaxBackoff. Defaults
	// DefaultQueueMinBackoff and DefaultQueueMaxBackoff.
	MinBackoff, MaxBackoff time.Duration
}

// Queue embeds texts in the background. Callers Submit work and return at
// once; the goroutine running Run embeds pending items in batches and hands
// each vector to the item's callback.
//
// While the embedder is down (an error wrapping ErrUnavailable or ErrAuth),
// items stay queued and Run retries with growing backoff, reporting the
// outage and the recovery through OnStatus. Any other error fails the items
// it concerns: a failing batch is retried one item at a time, so one bad
// text does not fail the others, and an item that fails alone gets the
// error.
type Queue struct {
	e        Embedder
	log      *slog.Logger
	batch    int
	max      int
	onStatus func(bool, error)
	minB     time.Duration
	maxB     time.Duration
	wake     chan struct{} // a signal that work was submitted; capacity 1

	mu       sync.Mutex
	items    map[int64]*item // waiting, by id
	order    []int64         // ids of waiting items, oldest first
	inflight int             // items handed to the embedder
	solo     int             // the next solo batches are of one item each
	running  bool
}

type item struct {
	id   int64
	text string
	done func(id int64, v []float32, err error)
}

// NewQueue returns a queue feeding e.
func NewQueue(e Embedder, o *QueueOptions) *Queue {
	var opt QueueOptions
	if o != nil {
		opt = *o
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = DefaultBatchSize
	}
	if opt.MaxPending <= 0 {
		opt.MaxPending = DefaultMaxPending
	}
	if opt.MinBackoff <= 0 {
		opt.MinBackoff = DefaultQueueMinBackoff
	}
	if opt.MaxBackoff < opt.MinBackoff {
		opt.MaxBackoff = max(DefaultQueueMaxBackoff, opt.MinBackoff)
	}
	return &Queue{
		e:        e,
		log:      opt.Logger,
		batch:    opt.BatchSize,
		max:      opt.MaxPending,
		onStatus: opt.OnStatus,
		minB:     opt.MinBackoff,
		maxB:     opt.MaxBackoff,
		wake:     make(chan struct{}, 1),
		items:    make(map[int64]*item),
	}
}

// Submit queues text for embedding under id and reports whether it was
// accepted. It never blocks. When the queue is full it returns false and the
// caller keeps the item unembedded, to submit again later. Submitting an id
// that is still waiting replaces its text and callback.
//
// done, if not nil, is called once from Run's goroutine with the vector or
// the error. It must not block for long; it may call Submit.
func (q *Queue) Submit(id int64, text string, done func(id int64, v []float32, err error)) bool {
	q.mu.Lock()
	if it, ok := q.items[id]; ok {
		it.text, it.done = text, done
		q.mu.Unlock()
		return true
	}
	if len(q.items)+q.inflight >= q.max {
		q.mu.Unlock()
		return false
	}
	q.items[id] = &item{id: id, text: text, done: done}
	q.order = append(q.order, id)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// Pending returns the number of items submitted and not yet finished,
// including those being embedded.
func (q *Queue) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) + q.inflight
}

// Run embeds submitted items until ctx is done, then returns nil; items not
// yet embedded stay queued for a later Run. Only one Run may be active at a
// time; another returns ErrRunning.
func (q *Queue) Run(ctx context.Context) error {
	q.mu.Lock()
	if q.running {
		q.mu.Unlock()
		return ErrRunning
	}
	q.running = true
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.running = false
		q.mu.Unlock()
	}()

	up, failures := true, 0
	for {
		batch := q.take()
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-q.wake:
				continue
			}
		}
		texts := make([]string, len(batch))
		for i, it := range batch {
			texts[i] = it.text
		}
		vecs, err := q.e.Embed(ctx, texts)
		if err == nil && len(vecs) != len(batch) {
			err = fmt.Errorf("%w: %s returned %d vectors for %d texts", ErrBadResponse, q.e.Name(), len(vecs), len(batch))
		}
		switch {
		case err != nil && ctx.Err() != nil:
			q.requeue(batch, false)
			return nil
		case err != nil && down(err):
			q.requeue(batch, false)
			if up {
				up = false
				q.log.Warn("embedder down; memory recall falls back to keyword search", "embedder", q.e.Name(), "err", err)
				q.status(false, err)
			}
			t := time.NewTimer(q.backoff(failures))
			failures++
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		}
		if !up {
			up = true
			q.log.Info("embedder back up", "embedder", q.e.Name(), "after_failures", failures)
			q.status(true, nil)
		}
		failures = 0
		if err != nil && len(batch) > 1 {
			q.requeue(batch, true)
			continue
		}
		q.finish(batch, vecs, err)
	}
}

// take removes the next batch from the waiting items and counts it as in
// flight.
func (q *Queue) take() []*item {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(q.batch, len(q.order))
	if q.solo > 0 && n > 0 {
		n = 1
		q.solo--
	}
	batch := make([]*item, n)
	for i, id := range q.order[:n] {
		batch[i] = q.items[id]
		delete(q.items, id)
	}
	q.order = q.order[n:]
	q.inflight += n
	return batch
}

// requeue puts a batch back at the head of the queue, except items whose id
// was submitted again meanwhile: the newer submission replaces them. With
// solo, the items are then taken one at a time.
func (q *Queue) requeue(batch []*item, solo bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inflight -= len(batch)
	head := make([]int64, 0, len(batch)+len(q.order))
	for _, it := range batch {
		if _, newer := q.items[it.id]; newer {
			continue
		}
		q.items[it.id] = it
		head = append(head, it.id)
	}
	if solo {
		q.solo += len(head)
	}
	q.order = append(head, q.order...)
}

// finish hands results to the callbacks.
func (q *Queue) finish(batch []*item, vecs [][]float32, err error) {
	q.mu.Lock()
	q.inflight -= len(batch)
	q.mu.Unlock()
	for i, it := range batch {
		if it.done == nil {
			continue
		}
		if err != nil {
			it.done(it.id, nil, err)
		} else {
			it.done(it.id, vecs[i], nil)
		}
	}
}

// backoff returns the wait after the given number of earlier consecutive
// failures.
func (q *Queue) backoff(failures int) time.Duration {
	d := q.minB
	for range failures {
		if d >= q.maxB/2 {
			return q.maxB
		}
		d *= 2
	}
	return min(d, q.maxB)
}

func (q *Queue) status(up bool, err error) {
	if q.onStatus != nil {
		q.onStatus(up, err)
	}
}
