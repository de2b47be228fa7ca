package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"agentd/internal/store"
)

// CoalesceDelay is how long a write that may wait is held back to share a
// sync with the turn's next write. With a fast model the whole turn lands in
// one sync; with a slow one, each write is durable (and shown) within this
// delay plus a sync.
const CoalesceDelay = 2 * time.Millisecond

// writer hands one turn's batches to its log, in the order they were
// written: the model's steps, every tool goroutine's results and the
// lifecycle's records. A write whose loss in a crash is harmless (the turn
// resumes from before it) may be held back for up to CoalesceDelay and
// merged into the next write, to share its sync; every other write waits
// until everything written before it is durable, then is itself made
// durable before write returns. Nothing reaches the log before the turn's
// input is durable in the inbox.
//
// A crash leaves a prefix of the writes handed over, in order: the log
// commits in the order it is handed batches, and a batch is handed to it
// under mu, so no write made meanwhile (another tool's result, the timer's
// hand-over) can reach it ahead of an earlier one.
type writer struct {
	log Log
	// ctx is for the timer's hand-overs: they happen even if the turn is
	// cancelled.
	ctx context.Context
	// durable, if not nil, waits until the turn's input is durable
	// (Turn.Durable).
	durable func() error

	mu      sync.Mutex   // guards the fields below; tool goroutines and the timer write too
	carry   *store.Batch // writes held back, merged, for the next write or the timer
	armed   bool         // the timer will hand carry over
	timer   *time.Timer
	closed  bool
	pending []func() error // waits of the writes handed to the log, oldest first
}

// newWriter returns the writer of a turn that writes to log; durable is
// Turn.Durable.
func newWriter(ctx context.Context, log Log, durable func() error) *writer {
	return &writer{log: log, ctx: context.WithoutCancel(ctx), durable: durable}
}

// write logs a batch. With later, the batch may wait up to CoalesceDelay to
// be merged with the turn's next write; that is only for writes whose loss
// in a crash is harmless (the turn resumes from before them). Otherwise it
// waits for every earlier write, then commits b (with anything held back
// first) and waits for it.
func (w *writer) write(ctx context.Context, b *store.Batch, later bool) error {
	w.mu.Lock()
	w.takeCarry(b)
	if later {
		w.carry = b
		w.arm()
		w.mu.Unlock()
		return nil
	}
	w.disarm()
	err := w.flushLocked()
	if err == nil {
		err = w.inputDurable()
	}
	if err != nil {
		w.mu.Unlock()
		return err
	}
	// Handed over under mu, waited for after: writes made meanwhile queue
	// behind it, and their syncs may overlap with its own.
	wait := w.log.Commit(ctx, b)
	w.mu.Unlock()
	return wait()
}

// takeCarry puts the writes held back in front of b. w.mu is held.
func (w *writer) takeCarry(b *store.Batch) {
	c := w.carry
	if c == nil {
		return
	}
	b.Events = append(c.Events, b.Events...)
	b.Usage = append(c.Usage, b.Usage...)
	if b.State == "" {
		b.State = c.State
	}
	w.carry = nil
}

// arm makes the timer hand carry over within CoalesceDelay, unless it will
// already. w.mu is held.
func (w *writer) arm() {
	if w.armed {
		return
	}
	w.armed = true
	if w.timer == nil {
		w.timer = time.AfterFunc(CoalesceDelay, w.handOver)
	} else {
		w.timer.Reset(CoalesceDelay)
	}
}

// disarm stops the timer: a write is about to take carry. w.mu is held.
func (w *writer) disarm() {
	if w.armed {
		w.timer.Stop()
		w.armed = false
	}
}

// inputDurable waits for the turn's input to be durable (Turn.Durable
// waits once; later calls return its result).
func (w *writer) inputDurable() error {
	if w.durable == nil {
		return nil
	}
	if err := w.durable(); err != nil {
		return fmt.Errorf("engine: input not accepted: %w: %w", errStore, err)
	}
	return nil
}

// handOver gives the held-back writes to the log when no later write came
// to take them within CoalesceDelay. Their durability is waited for by the
// next write, or by close.
func (w *writer) handOver() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	b := w.carry
	if w.closed || b == nil {
		return
	}
	w.carry = nil
	if err := w.inputDurable(); err != nil {
		w.pending = append(w.pending, func() error { return err })
		return
	}
	w.pending = append(w.pending, w.log.Commit(w.ctx, b))
}

// flushLocked waits for every write handed over, in order, and returns the
// first error. w.mu is held.
func (w *writer) flushLocked() error {
	var first error
	for _, wait := range w.pending {
		if err := wait(); err != nil && first == nil {
			first = err
		}
	}
	w.pending = w.pending[:0]
	return first
}

// close stops the timer and waits for every write handed over; writes
// still held back are dropped (the turn did not end: it resumes from the
// log at the next start).
func (w *writer) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	return w.flushLocked()
}
