package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
)

// MaxText bounds the text of one input, in bytes: about 250,000 tokens,
// more than a model's context takes in one message. A larger input could
// only fail at the model after filling the log, the cache and the search
// index.
const MaxText = 1 << 20

// earlyStore is the optional ability of a store to give an inbox item its
// id before the item is synced, so that its turn can start while the sync
// runs (see sqlite.Store.EnqueueEarly).
type earlyStore interface {
	EnqueueEarly(ctx context.Context, item store.InboxItem) (store.InboxItem, bool, func() error, error)
}

// lazyStore is the optional ability of a store to commit an inbox item
// without a sync of its own, for a sender who learns of its acceptance
// only with its turn's answer, which is synced after it (see
// sqlite.Store.EnqueueLazy): a one-step turn then waits for one sync.
type lazyStore interface {
	EnqueueLazy(ctx context.Context, item store.InboxItem) (store.InboxItem, func() error, func(context.Context) error, error)
}

// waiting is a sender that waits for its input's turn to end. lazy (set
// by the sender) allows the input, if it has no idempotency key, to be
// committed without its own sync; enqueue sets end, the channel the turn's
// end is sent on (nil for a duplicate), and synced when the input may not
// be durable yet: the sender calls it before telling anyone the input was
// accepted.
type waiting struct {
	lazy   bool
	end    chan event.TurnEndData
	synced func(context.Context) error
}

// Input is something to put in a session's inbox.
type Input struct {
	Session        string // "<agent>/<key>"
	Text           string
	Source         string // cli, api, ...
	IdempotencyKey string
	// System marks a system or inter-agent message (from Origin); Silent
	// ones are logged and enter the next turn's context without starting one.
	System bool
	Silent bool
	Origin string
	// Options are the message lifecycle's options (engine.LifecycleOptions
	// as JSON); nil for the defaults.
	Options json.RawMessage
	// Images are attached images: at most model.MaxImages, each of a type
	// and size model.CheckImage accepts. They go into the log with the
	// message and into every later context that holds it.
	Images []model.Image
	// Reopen reopens the session first if it is closed (see Reopen);
	// without it, a closed session refuses the input with ErrSessionClosed.
	Reopen bool
	// Hops counts the agent messages that led to this input: 0 for a
	// person's, the sender's input's hops + 1 for an agent's. It goes
	// into the inbox item and the input event.
	Hops int
}

// Receipt acknowledges an accepted input.
type Receipt struct {
	Session   string `json:"session"`
	SessionID int64  `json:"session_id"`
	Turn      int64  `json:"turn"`                // the inbox item id; the turn's events carry it
	Duplicate bool   `json:"duplicate,omitempty"` // an input with this idempotency key was accepted before
}

// Submit persists an input in its session's inbox and schedules it. It
// returns once the input is durable; the turn runs in the background.
func (r *Runtime) Submit(ctx context.Context, in Input) (Receipt, error) {
	return r.submit(ctx, in, nil)
}

// Message is the Daemon's message(): it sends in (whose Options are the
// lifecycle options), waits for the turn, and returns the lifecycle object
// assembled from the turn's events.
func (r *Runtime) Message(ctx context.Context, in Input) (Receipt, *engine.Object, error) {
	rc, _, err := r.Send(ctx, in)
	if err != nil {
		return rc, nil, err
	}
	it, err := r.st.InboxItem(ctx, rc.Turn)
	if err != nil {
		return rc, nil, err
	}
	evs, err := r.st.TurnEvents(ctx, it.Session, it.ID)
	if err != nil {
		return rc, nil, err
	}
	agentID, _, _ := strings.Cut(rc.Session, "/")
	def, ok := r.o.Agents.Get(agentID)
	if !ok {
		return rc, nil, fmt.Errorf("%w: %s", ErrUnknownAgent, agentID)
	}
	if o, ok := r.o.Engine.(Objects); ok {
		return rc, o.Object(def, it, evs, rc.Session), nil
	}
	return rc, engine.BuildObject(def, it, evs, rc.Session), nil
}

// Record appends events to a session's log outside any turn (for example
// the results of start-up calls), creating the session if needed, under
// the session's lease (outside).
func (r *Runtime) Record(ctx context.Context, addr string, evs ...event.Event) error {
	agentID, key, err := r.address(addr)
	if err != nil {
		return err
	}
	sess, err := r.lookup(ctx, agentID, key)
	if err != nil {
		return err
	}
	for i := range evs {
		evs[i].Session = sess.s.ID
	}
	return r.outside(ctx, sess, func(epoch int64) error {
		return r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: evs, Epoch: epoch})
	})
}

// Send submits an input and waits for its turn to end. A duplicate input
// waits for, or returns, the original's result.
func (r *Runtime) Send(ctx context.Context, in Input) (Receipt, event.TurnEndData, error) {
	w := waiting{lazy: true}
	rc, err := r.submit(ctx, in, &w)
	if err != nil {
		return rc, event.TurnEndData{}, err
	}
	end, err := r.waitFor(ctx, rc.Turn, w.end)
	if w.synced != nil {
		// The answer's sync has made the input durable, unless the turn
		// ended without one; then this syncs.
		if serr := w.synced(ctx); serr != nil {
			return Receipt{}, event.TurnEndData{}, fmt.Errorf("runtime: accept input: %w", serr)
		}
	}
	return rc, end, err
}

// submit accepts in and queues it; with wait, the sender waits for its
// turn (see waiting).
func (r *Runtime) submit(ctx context.Context, in Input, wait *waiting) (Receipt, error) {
	sess, err := r.accept(ctx, &in)
	if err != nil {
		return Receipt{}, err
	}
	return r.submitTo(ctx, sess, in, wait)
}

// accept checks an input and returns the session it goes to, created if
// needed: a refused input creates none.
func (r *Runtime) accept(ctx context.Context, in *Input) (*session, error) {
	agentID, key, err := r.address(in.Session)
	if err != nil {
		return nil, err
	}
	if err := checkInput(in); err != nil {
		return nil, err
	}
	if r.closing.Load() { // before the session is made
		return nil, ErrClosed
	}
	return r.lookup(ctx, agentID, key)
}

// submitTo queues in, accepted for sess, reopening sess first if asked to.
func (r *Runtime) submitTo(ctx context.Context, sess *session, in Input, wait *waiting) (Receipt, error) {
	if rc, dup, err := r.accepted(ctx, sess, in); err != nil || dup {
		return rc, err
	}
	if sess.isStopped() && sess.state() != store.StateClosed {
		return Receipt{}, closedErr(in.Session) // being stopped: closed once its queue is refused
	}
	if sess.state() == store.StateClosed {
		if !in.Reopen {
			return Receipt{}, closedErr(in.Session)
		}
		if _, err := r.reopen(ctx, sess); err != nil {
			return Receipt{}, err
		}
	}
	kind := event.Input
	if in.System || in.Silent {
		kind = event.SystemMessage
	}
	if len(in.Options) > 0 {
		if _, err := engine.ParseLifecycleOptions(in.Options); err != nil {
			return Receipt{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
	}
	item := store.InboxItem{Session: sess.s.ID, Kind: kind, Text: in.Text, Source: in.Source, Origin: in.Origin,
		IdempotencyKey: in.IdempotencyKey, Silent: in.Silent, Options: in.Options, Images: engine.ImageRefs(in.Images), Hops: in.Hops}
	return r.enqueue(ctx, sess, item, wait)
}

// accepted answers a redelivery of an input sess took before, whatever
// sess's state: closed or being stopped, sess refuses new input, but an
// input it already has is acknowledged again (Duplicate), as Enqueue
// would on an open session. A sender that lost its first receipt to a
// crash learns that it was accepted, not that it was refused.
func (r *Runtime) accepted(ctx context.Context, sess *session, in Input) (Receipt, bool, error) {
	if in.IdempotencyKey == "" || !sess.isStopped() && sess.state() != store.StateClosed {
		return Receipt{}, false, nil // an open session's Enqueue dedups
	}
	it, err := r.st.InboxByKey(ctx, sess.s.ID, in.IdempotencyKey)
	if errors.Is(err, store.ErrNotFound) {
		return Receipt{}, false, nil
	} else if err != nil {
		return Receipt{}, false, fmt.Errorf("runtime: accept input: %w", err)
	}
	return Receipt{Session: sess.s.Address(), SessionID: sess.s.ID, Turn: it.ID, Duplicate: true}, true, nil
}

// checkInput refuses an input without text, with text over MaxText, or
// with an image that model.CheckImages refuses.
func checkInput(in *Input) error {
	if strings.TrimSpace(in.Text) == "" {
		return ErrEmptyInput
	}
	if len(in.Text) > MaxText {
		return fmt.Errorf("%w: the text is %d bytes, at most %d", ErrTooLarge, len(in.Text), MaxText)
	}
	if in.Hops < 0 {
		return fmt.Errorf("runtime: an input's hops are %d, not 0 or more", in.Hops)
	}
	return model.CheckImages(in.Images)
}

// enqueue puts item in sess's inbox, durably (or, for a lazy wait, in
// the order of the store's writes), and schedules it. With wait, wait.end
// is set to the channel the item's end is sent on, unless the item is a
// duplicate of one accepted before.
func (r *Runtime) enqueue(ctx context.Context, sess *session, item store.InboxItem, wait *waiting) (Receipt, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return Receipt{}, ErrClosed
	}
	var (
		stored  store.InboxItem
		dup     bool
		durable func() error
		err     error
	)
	ls, lazy := r.st.(lazyStore)
	if lazy = lazy && wait != nil && wait.lazy && item.IdempotencyKey == ""; lazy {
		stored, durable, wait.synced, err = ls.EnqueueLazy(ctx, item)
	} else if es, ok := r.st.(earlyStore); ok {
		stored, dup, durable, err = es.EnqueueEarly(ctx, item)
		if durable != nil {
			durable = sync.OnceValue(durable)
		}
	} else {
		stored, dup, err = r.st.Enqueue(ctx, item)
	}
	if err != nil {
		return Receipt{}, fmt.Errorf("runtime: accept input: %w", err)
	}
	rc := Receipt{Session: sess.s.Address(), SessionID: sess.s.ID, Turn: stored.ID, Duplicate: dup}
	if dup {
		return rc, nil
	}
	if wait != nil {
		wait.end = r.addWaiter(stored.ID)
	}
	// The session may have been evicted from the cache since lookup: queue
	// on the registered one (or register this one again), under r.mu so
	// that eviction cannot come between.
	r.mu.Lock()
	if cur := r.sessions[sess.s.ID]; cur != nil {
		sess = cur
	} else {
		r.sessions[sess.s.ID] = sess
		r.byAddr[sess.s.Address()] = sess
		sess.elt, sess.used = r.lru.PushFront(sess), time.Now()
	}
	sess.mu.Lock()
	r.admit(sess, queued{item: stored, durable: durable})
	interrupt := sess.cancel != nil && stored.Kind == event.Input && !stored.Silent
	cancel := sess.cancel
	sess.mu.Unlock()
	r.mu.Unlock()
	if interrupt {
		if def, ok := r.o.Agents.Get(sess.s.Agent); ok && def.Inbox.Mode == agent.ModeInterrupt {
			cancel(engine.ErrInterrupted)
		}
	}
	r.kick(sess)
	// The turn may already be running; the input is acknowledged only once
	// it is durable, or, lazily committed, once it is in the store's
	// order of writes (its sender learns later, see waiting). If it never
	// gets there, the worker drops it.
	if durable != nil {
		if err := durable(); err != nil {
			if wait != nil {
				r.dropWaiter(stored.ID, wait.end)
			}
			return Receipt{}, fmt.Errorf("runtime: accept input: %w", err)
		}
	}
	return rc, nil
}
