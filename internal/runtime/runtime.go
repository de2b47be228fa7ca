// Package runtime is agentd's kernel: it accepts inputs into per-session
// inboxes (durably, deduplicated by idempotency key), runs each session's
// turns strictly in order with one worker goroutine that exists only while
// the session has work, runs many sessions in parallel under a global cap,
// and on start resumes every turn a previous process left unfinished.
// Each turn it hands the engine carries its log (engine.Turn.Log): a batch
// is committed to the store, then the session's cached context follows it
// and its events are published on the bus.
//
// Lock order: Runtime.mu, then session.mu. Neither is held across I/O.
package runtime

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
)

// Sentinel errors.
var (
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrInvalidAgent: the agent's file does not load and no earlier
	// version of it did; the error holds the file's problems.
	ErrInvalidAgent  = errors.New("agent file invalid")
	ErrBadAddress    = errors.New("bad session address")
	ErrEmptyInput    = errors.New("empty input")
	ErrBadOptions    = errors.New("bad message options")
	ErrClosed        = errors.New("agentd is shutting down")
	ErrNoTurn        = errors.New("no turn running")
	ErrSessionClosed = errors.New("session closed")
	ErrBusy          = errors.New("session busy")
	// ErrBadImage: an input's image was refused (type, size or count);
	// the error says which and why.
	ErrBadImage = model.ErrBadImage
	// ErrTooLarge: an input's text is longer than MaxText; the error says
	// by how much.
	ErrTooLarge = errors.New("input too large")
	// ErrNoSession: the session named does not exist. It matches
	// store.ErrNotFound too.
	ErrNoSession error = noSession{}
)

type noSession struct{}

func (noSession) Error() string        { return "session not found" }
func (noSession) Is(target error) bool { return target == store.ErrNotFound }

// MaxText bounds the text of one input, in bytes: about 250,000 tokens,
// more than a model's context takes in one message. A larger input could
// only fail at the model after filling the log, the cache and the search
// index.
const MaxText = 1 << 20

// Agents gives the current definition of an agent.
type Agents interface {
	Get(id string) (*agent.Definition, bool)
}

// AgentFiles is the optional ability of Agents to say why an agent's file
// does not load, so that a message to it says so rather than that there
// is no such agent.
type AgentFiles interface {
	FileError(id string) error
}

// Turns runs one turn (the engine).
type Turns interface {
	Run(ctx context.Context, t *engine.Turn) (event.TurnEndData, error)
}

// Objects is the optional ability of Turns to build a turn's lifecycle
// object with what only the engine knows (the approval of a turn that
// called no tool server); without it the object is engine.BuildObject's.
type Objects interface {
	Object(d *agent.Definition, item store.InboxItem, evs []event.Event, channel string) *engine.Object
}

// Compactor is the optional ability of Turns to compact a session's
// context on request.
type Compactor interface {
	Compact(ctx context.Context, t *engine.Turn) (event.TurnEndData, error)
}

// Options configure a Runtime. Store, Agents and Engine are required.
type Options struct {
	Store  store.Store
	Agents Agents
	Engine Turns
	Bus    *event.Bus // nil: a new one
	Logger *slog.Logger
	// MaxConcurrentTurns caps turns running at once (default 256).
	MaxConcurrentTurns int
	// CacheSessions bounds how many idle sessions keep their recent context
	// in memory (default 1024), and CacheBytes how much memory those
	// contexts may take together (default 16 MiB); past either, the least
	// recently used idle sessions' contexts are dropped (and reloaded from
	// the log when needed).
	CacheSessions int
	CacheBytes    int64
}

// Runtime owns sessions, inboxes and session workers.
type Runtime struct {
	o      Options
	st     store.Store
	bus    *event.Bus
	log    *slog.Logger
	sem    chan struct{}
	ctx    context.Context // cancelled with engine.ErrShutdown on Close
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // session workers
	// closing is set when Close begins: workers start no further queued
	// item. stopped is closed once every worker has exited, so that whoever
	// still waits for a turn learns it will not end in this process.
	closing atomic.Bool
	stopped chan struct{}

	mu       sync.Mutex
	closed   bool
	sessions map[int64]*session
	byAddr   map[string]*session
	lru      *list.List // idle cached sessions, most recent at front
	waiters  map[int64][]chan event.TurnEndData

	cached atomic.Int64 // bytes held by sessions' cached conversations
}

// session is the in-memory side of a session. Its fields are guarded by
// mu, except s.ID/Agent/Key which never change.
type session struct {
	s   store.Session
	elt *list.Element // in Runtime.lru while idle

	mu      sync.Mutex
	queue   []queued
	working bool                    // a worker goroutine exists
	cancel  context.CancelCauseFunc // of the running turn, nil if none
	conv    *engine.Conversation    // the context since the last reset; nil until loaded
	// published is the state last published as a session_state event.
	published string
}

type queued struct {
	item      store.InboxItem
	recovered bool // from a previous process: may have events already
	// durable waits until the item is durable; nil if it was when queued.
	durable func() error
}

// earlyStore is the optional ability of a store to give an inbox item its
// id before the item is synced, so that its turn can start while the sync
// runs (see sqlite.Store.EnqueueEarly).
type earlyStore interface {
	EnqueueEarly(ctx context.Context, item store.InboxItem) (store.InboxItem, bool, func() error, error)
}

// New returns a runtime. Call Start to resume unfinished work and Close to stop.
func New(o *Options) *Runtime {
	r := &Runtime{o: *o, st: o.Store, bus: o.Bus, log: o.Logger}
	if r.bus == nil {
		r.bus = event.NewBus()
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	n := o.MaxConcurrentTurns
	if n <= 0 {
		n = 256
	}
	if r.o.CacheSessions <= 0 {
		r.o.CacheSessions = 1024
	}
	if r.o.CacheBytes <= 0 {
		r.o.CacheBytes = 16 << 20
	}
	r.sem = make(chan struct{}, n)
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	r.stopped = make(chan struct{})
	r.sessions = make(map[int64]*session)
	r.byAddr = make(map[string]*session)
	r.lru = list.New()
	r.waiters = make(map[int64][]chan event.TurnEndData)
	return r
}

// Bus returns the bus on which durable events are published after commit,
// along with live text deltas.
func (r *Runtime) Bus() *event.Bus { return r.bus }

// Start resumes every session with unprocessed inbox items, including turns
// a previous process left unfinished.
func (r *Runtime) Start(ctx context.Context) (resumed int, err error) {
	ids, err := r.st.PendingSessions(ctx)
	if err != nil {
		return 0, fmt.Errorf("runtime: find pending sessions: %w", err)
	}
	for _, id := range ids {
		s, err := r.st.SessionByID(ctx, id)
		if err != nil {
			return resumed, fmt.Errorf("runtime: resume session %d: %w", id, err)
		}
		items, err := r.st.Pending(ctx, id)
		if err != nil {
			return resumed, fmt.Errorf("runtime: resume session %d: %w", id, err)
		}
		sess := r.session(s)
		sess.mu.Lock()
		for _, it := range items {
			sess.queue = append(sess.queue, queued{item: it, recovered: true})
		}
		sess.mu.Unlock()
		r.log.Info("resuming session", "session", s.Address(), "pending", len(items))
		r.kick(sess)
		resumed++
	}
	return resumed, nil
}

// ParseAddress splits "<agent>/<key>". The key may not be empty; neither
// part may contain "/" or control characters.
func ParseAddress(addr string) (agentID, key string, err error) {
	a, k, ok := strings.Cut(addr, "/")
	if !ok || a == "" || k == "" || strings.Contains(k, "/") || hasControl(addr) || len(addr) > 512 || !utf8.ValidString(addr) {
		return "", "", fmt.Errorf("%w %q: want <agent>/<key>, e.g. assistant/chat:alice", ErrBadAddress, addr)
	}
	return a, k, nil
}

func hasControl(s string) bool {
	for _, c := range s {
		if c < 0x20 || (c >= 0x7f && c <= 0x9f) {
			return true
		}
	}
	return false
}

// address parses a session address and checks that its agent exists.
func (r *Runtime) address(addr string) (agentID, key string, err error) {
	if agentID, key, err = ParseAddress(addr); err != nil {
		return "", "", err
	}
	if _, ok := r.o.Agents.Get(agentID); !ok {
		return "", "", r.noAgent(agentID)
	}
	return agentID, key, nil
}

// noAgent says why there is no definition of agent id: its file is
// invalid, or there is no such agent.
func (r *Runtime) noAgent(id string) error {
	if f, ok := r.o.Agents.(AgentFiles); ok {
		if err := f.FileError(id); err != nil {
			return fmt.Errorf("agent %q: %w: %w", id, ErrInvalidAgent, err)
		}
	}
	return fmt.Errorf("%w %q", ErrUnknownAgent, id)
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
// the results of start-up calls), creating the session if needed.
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
	return r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: evs})
}

// Send submits an input and waits for its turn to end. A duplicate input
// waits for, or returns, the original's result.
func (r *Runtime) Send(ctx context.Context, in Input) (Receipt, event.TurnEndData, error) {
	var ch chan event.TurnEndData
	rc, err := r.submit(ctx, in, &ch)
	if err != nil {
		return rc, event.TurnEndData{}, err
	}
	if ch == nil { // duplicate: wait by id
		end, err := r.Wait(ctx, rc.Turn)
		return rc, end, err
	}
	end, err := r.await(ctx, rc.Turn, ch)
	return rc, end, err
}

func (r *Runtime) submit(ctx context.Context, in Input, wait *chan event.TurnEndData) (Receipt, error) {
	agentID, key, err := r.address(in.Session)
	if err != nil {
		return Receipt{}, err
	}
	if err := checkInput(&in); err != nil {
		return Receipt{}, err
	}
	if r.closing.Load() { // before the session is made
		return Receipt{}, ErrClosed
	}
	sess, err := r.lookup(ctx, agentID, key)
	if err != nil {
		return Receipt{}, err
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
		IdempotencyKey: in.IdempotencyKey, Silent: in.Silent, Options: in.Options, Images: engine.ImageRefs(in.Images)}
	return r.enqueue(ctx, sess, item, wait)
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
	return model.CheckImages(in.Images)
}

func (r *Runtime) enqueue(ctx context.Context, sess *session, item store.InboxItem, wait *chan event.TurnEndData) (Receipt, error) {
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
	if es, ok := r.st.(earlyStore); ok {
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
		*wait = r.addWaiter(stored.ID)
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
		sess.elt = r.lru.PushFront(sess)
	}
	sess.mu.Lock()
	sess.queue = append(sess.queue, queued{item: stored, durable: durable})
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
	// it is durable. (If it never becomes durable, the worker drops it.)
	if durable != nil {
		if err := durable(); err != nil {
			if wait != nil {
				r.dropWaiter(stored.ID, *wait)
			}
			return Receipt{}, fmt.Errorf("runtime: accept input: %w", err)
		}
	}
	return rc, nil
}

// Wait waits for a turn to end and returns how it ended.
func (r *Runtime) Wait(ctx context.Context, turn int64) (event.TurnEndData, error) {
	ch := r.addWaiter(turn)
	// The state is read even if ctx is already done, so that a caller who
	// does not want to wait still learns whether the turn has ended.
	rctx := context.WithoutCancel(ctx)
	it, err := r.st.InboxItem(rctx, turn)
	if err != nil {
		r.dropWaiter(turn, ch)
		return event.TurnEndData{}, fmt.Errorf("runtime: turn %d: %w", turn, err)
	}
	if it.State == store.InboxDone {
		r.dropWaiter(turn, ch)
		return r.turnResult(rctx, it)
	}
	return r.await(ctx, turn, ch)
}

// await waits for the end of a turn on ch (from addWaiter) until ctx is
// done, or until the runtime has stopped without ending the turn: then
// the error is ErrClosed, and the turn resumes at the next start.
//
// Once the runtime has stopped, that outcome is the answer even if ctx is
// done too: a server that stops serving right after the runtime cancels
// its requests, and the waiter must still say how the turn went.
func (r *Runtime) await(ctx context.Context, turn int64, ch chan event.TurnEndData) (event.TurnEndData, error) {
	select {
	case end := <-ch:
		return end, nil
	case <-ctx.Done():
	case <-r.stopped:
	}
	defer r.dropWaiter(turn, ch)
	select {
	case end := <-ch: // it ended as the runtime stopped, or as ctx ended
		return end, nil
	default:
	}
	if r.isStopped() {
		return event.TurnEndData{}, fmt.Errorf("%w: turn %d did not end before it stopped; it goes on when agentd starts again", ErrClosed, turn)
	}
	return event.TurnEndData{}, ctx.Err()
}

// isStopped reports whether Close has stopped every worker.
func (r *Runtime) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// turnResult reads a finished turn's end from the log.
func (r *Runtime) turnResult(ctx context.Context, it store.InboxItem) (event.TurnEndData, error) {
	evs, err := r.st.TurnEvents(ctx, it.Session, it.ID)
	if err != nil {
		return event.TurnEndData{}, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == event.TurnEnd {
			var d event.TurnEndData
			err := evs[i].Decode(&d)
			return d, err
		}
	}
	// Silent messages and resets end without a turn.
	return event.TurnEndData{Status: event.StatusDone}, nil
}

func (r *Runtime) addWaiter(turn int64) chan event.TurnEndData {
	ch := make(chan event.TurnEndData, 1)
	r.mu.Lock()
	r.waiters[turn] = append(r.waiters[turn], ch)
	r.mu.Unlock()
	return ch
}

func (r *Runtime) dropWaiter(turn int64, ch chan event.TurnEndData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.waiters[turn]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(r.waiters, turn)
	} else {
		r.waiters[turn] = ws
	}
}

func (r *Runtime) notify(turn int64, end event.TurnEndData) {
	r.mu.Lock()
	ws := r.waiters[turn]
	delete(r.waiters, turn)
	r.mu.Unlock()
	for _, w := range ws {
		w <- end
	}
}

// Reset appends a reset marker after whatever is queued: the context
// restarts after it and the session keeps its id. A session that does not
// exist is store.ErrNotFound.
func (r *Runtime) Reset(ctx context.Context, addr, reason string) (Receipt, error) {
	agentID, key, err := r.address(addr)
	if err != nil {
		return Receipt{}, err
	}
	sess, err := r.existing(ctx, agentID, key)
	if err != nil {
		return Receipt{}, err
	}
	var ch chan event.TurnEndData
	rc, err := r.enqueue(ctx, sess, store.InboxItem{Session: sess.s.ID, Kind: event.Reset, Text: reason, Source: "reset"}, &ch)
	if err != nil {
		return rc, err
	}
	_, err = r.await(ctx, rc.Turn, ch)
	return rc, err
}

// Compact asks for the session's context to be compacted, focusing the
// summary on focus (may be ""), in order behind its queued inputs, and
// waits for it. A session that does not exist is store.ErrNotFound.
func (r *Runtime) Compact(ctx context.Context, addr, focus string) (Receipt, event.TurnEndData, error) {
	agentID, key, err := r.address(addr)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	sess, err := r.existing(ctx, agentID, key)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	if sess.state() == store.StateClosed {
		return Receipt{}, event.TurnEndData{}, closedErr(addr)
	}
	var ch chan event.TurnEndData
	rc, err := r.enqueue(ctx, sess, store.InboxItem{Session: sess.s.ID, Kind: event.CompactRequest, Text: focus, Source: "compact"}, &ch)
	if err != nil {
		return rc, event.TurnEndData{}, err
	}
	end, err := r.await(ctx, rc.Turn, ch)
	return rc, end, err
}

// setConv replaces the session's cached conversation, keeping the cache's
// byte count. sess.mu is held.
func (r *Runtime) setConv(sess *session, c *engine.Conversation) {
	var d int64
	if sess.conv != nil {
		d -= int64(sess.conv.Size())
	}
	if c != nil {
		d += int64(c.Size())
	}
	sess.conv = c
	r.cached.Add(d)
}

// CachedBytes is roughly how much memory the cached conversations take.
func (r *Runtime) CachedBytes() int64 { return r.cached.Load() }

// trimCache drops the cached conversations of the least recently used idle
// sessions while the cache is over its byte budget.
func (r *Runtime) trimCache() {
	if r.cached.Load() <= r.o.CacheBytes {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for e := r.lru.Back(); e != nil && r.cached.Load() > r.o.CacheBytes*9/10; e = e.Prev() {
		sess := e.Value.(*session)
		if sess.mu.TryLock() {
			if !sess.working && sess.conv != nil {
				r.setConv(sess, nil)
			}
			sess.mu.Unlock()
		}
	}
}

func (s *session) state() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s.State
}

// CloseSession closes a session: it keeps its log and refuses new input
// until it is reopened. A session with a running or queued turn is not
// closed (ErrBusy); one that does not exist is store.ErrNotFound.
func (r *Runtime) CloseSession(ctx context.Context, addr string) error {
	agentID, key, err := r.address(addr)
	if err != nil {
		return err
	}
	sess, err := r.existing(ctx, agentID, key)
	if err != nil {
		return err
	}
	sess.mu.Lock()
	busy := sess.working || len(sess.queue) > 0
	sess.mu.Unlock()
	if busy {
		return fmt.Errorf("%w: %s has a turn running or queued; cancel it or wait", ErrBusy, addr)
	}
	ev := event.New(sess.s.ID, 0, event.Marker, event.MarkerData{Name: "closed"})
	return r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, State: store.StateClosed, Events: []event.Event{ev}})
}

// Reopen reopens a closed session: it takes input again, its context
// continuing where it stopped. It reports whether the session was closed;
// reopening an open one changes nothing. A session that does not exist is
// store.ErrNotFound.
func (r *Runtime) Reopen(ctx context.Context, addr string) (bool, error) {
	agentID, key, err := r.address(addr)
	if err != nil {
		return false, err
	}
	sess, err := r.existing(ctx, agentID, key)
	if err != nil {
		return false, err
	}
	return r.reopen(ctx, sess)
}

// reopen logs a "reopened" marker and makes a closed session idle.
func (r *Runtime) reopen(ctx context.Context, sess *session) (bool, error) {
	if sess.state() != store.StateClosed {
		return false, nil
	}
	ev := event.New(sess.s.ID, 0, event.Marker, event.MarkerData{Name: "reopened"})
	if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, State: store.StateIdle, Events: []event.Event{ev}}); err != nil {
		return false, err
	}
	return true, nil
}

// closedErr is the error of input to a closed session, saying how to reopen it.
func closedErr(addr string) error {
	return fmt.Errorf("%w: %s (reopen it first, or send with reopen)", ErrSessionClosed, addr)
}

// Cancel cancels the running turn of a session. Queued inputs still run.
func (r *Runtime) Cancel(ctx context.Context, addr string) error {
	agentID, key, err := r.address(addr)
	if err != nil {
		return err
	}
	// A session with a running turn is in memory (working sessions are
	// never evicted); looking one up must not create it.
	r.mu.Lock()
	sess := r.byAddr[agentID+"/"+key]
	r.mu.Unlock()
	var cancel context.CancelCauseFunc
	if sess != nil {
		sess.mu.Lock()
		cancel = sess.cancel
		sess.mu.Unlock()
	}
	if cancel == nil {
		return fmt.Errorf("%w in %s", ErrNoTurn, addr)
	}
	cancel(engine.ErrCancelled)
	return nil
}

// lookup returns the in-memory session for an address, loading or creating
// it in the store.
func (r *Runtime) lookup(ctx context.Context, agentID, key string) (*session, error) {
	addr := agentID + "/" + key
	r.mu.Lock()
	sess := r.byAddr[addr]
	if sess != nil {
		r.touch(sess)
	}
	r.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	s, _, err := r.st.Session(ctx, agentID, key)
	if err != nil {
		return nil, fmt.Errorf("runtime: session %s: %w", addr, err)
	}
	return r.session(s), nil
}

// existing returns the in-memory session for an address that exists in
// the store, or store.ErrNotFound: unlike lookup, it creates none.
func (r *Runtime) existing(ctx context.Context, agentID, key string) (*session, error) {
	addr := agentID + "/" + key
	r.mu.Lock()
	sess := r.byAddr[addr]
	if sess != nil {
		r.touch(sess)
	}
	r.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	s, err := r.st.SessionByAddress(ctx, agentID, key)
	if err != nil {
		return nil, sessionErr(addr, err)
	}
	return r.session(s), nil
}

// sessionErr is err of reading the session addr: ErrNoSession if it does
// not exist.
func sessionErr(addr string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNoSession, addr)
	}
	return fmt.Errorf("runtime: session %s: %w", addr, err)
}

// session returns the in-memory session for s, adding it if needed.
func (r *Runtime) session(s store.Session) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sess := r.sessions[s.ID]; sess != nil {
		r.touch(sess)
		return sess
	}
	sess := &session{s: s}
	r.sessions[s.ID] = sess
	r.byAddr[s.Address()] = sess
	sess.elt = r.lru.PushFront(sess)
	r.evict()
	return sess
}

// touch marks sess recently used. r.mu is held.
func (r *Runtime) touch(sess *session) {
	if sess.elt != nil {
		r.lru.MoveToFront(sess.elt)
	}
}

// evict drops the least recently used idle sessions beyond the cache bound.
// r.mu is held.
func (r *Runtime) evict() {
	for e := r.lru.Back(); e != nil && r.lru.Len() > r.o.CacheSessions; {
		prev := e.Prev()
		sess := e.Value.(*session)
		if sess.mu.TryLock() {
			if !sess.working && len(sess.queue) == 0 {
				r.setConv(sess, nil)
				r.lru.Remove(e)
				sess.elt = nil
				delete(r.sessions, sess.s.ID)
				delete(r.byAddr, sess.s.Address())
			}
			sess.mu.Unlock()
		}
		e = prev
	}
}

// kick starts a worker for sess if it has work and none is running.
func (r *Runtime) kick(sess *session) {
	sess.mu.Lock()
	if sess.working || len(sess.queue) == 0 {
		sess.mu.Unlock()
		return
	}
	sess.working = true
	sess.mu.Unlock()
	r.mu.Lock()
	if r.closed {
		// Closed: the item stays pending in the inbox for the next start.
		r.mu.Unlock()
		sess.mu.Lock()
		sess.working = false
		sess.mu.Unlock()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go r.work(sess)
}

// work runs a session's queue in order, then exits.
func (r *Runtime) work(sess *session) {
	defer r.wg.Done()
	for {
		sess.mu.Lock()
		// Closing: the running turn finished; what is queued waits in the
		// inbox for the next start.
		if len(sess.queue) == 0 || r.ctx.Err() != nil || r.closing.Load() {
			sess.working = false
			sess.mu.Unlock()
			return
		}
		q := sess.queue[0]
		sess.mu.Unlock()

		select {
		case r.sem <- struct{}{}:
		case <-r.ctx.Done():
			continue
		}
		end, err := r.process(sess, q)
		<-r.sem
		if err != nil && q.durable != nil && q.durable() != nil {
			// The input never became durable and its sender was told so.
			sess.mu.Lock()
			sess.queue = sess.queue[1:]
			r.setConv(sess, nil)
			sess.mu.Unlock()
			continue
		}
		if err != nil {
			if errors.Is(err, engine.ErrShutdown) || r.ctx.Err() != nil {
				continue // left for the next start
			}
			r.log.Error("turn failed; will retry", "session", sess.s.Address(), "turn", q.item.ID, "err", err)
			// The log could not be written. Keep the item and retry after a
			// pause rather than lose or reorder it.
			select {
			case <-time.After(time.Second):
			case <-r.ctx.Done():
			}
			sess.mu.Lock()
			sess.queue[0].recovered = true
			r.setConv(sess, nil)
			sess.mu.Unlock()
			continue
		}
		sess.mu.Lock()
		sess.queue = sess.queue[1:]
		// A session whose queue is empty is idle before its waiters hear
		// of the end, so that one closed right after its reply is not busy.
		idle := len(sess.queue) == 0
		if idle {
			sess.working = false
		}
		sess.mu.Unlock()
		r.notify(q.item.ID, end)
		if idle {
			return
		}
	}
}

// process handles one inbox item and returns how it ended; the caller
// tells the waiters.
func (r *Runtime) process(sess *session, q queued) (event.TurnEndData, error) {
	ctx := r.ctx
	it := q.item
	switch {
	case it.Kind == event.Reset:
		ev := event.New(sess.s.ID, it.ID, event.Reset, event.MarkerData{Name: "reset", Reason: it.Text})
		if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: []event.Event{ev}, Done: []int64{it.ID}}); err != nil {
			return event.TurnEndData{}, err
		}
		return event.TurnEndData{Status: event.StatusDone}, nil
	case it.Silent:
		ev := event.New(sess.s.ID, it.ID, event.SystemMessage, event.InputData{Text: it.Text, Source: it.Source, Origin: it.Origin, Silent: true, IdempotencyKey: it.IdempotencyKey, Images: it.Images})
		if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: []event.Event{ev}, Done: []int64{it.ID}}); err != nil {
			return event.TurnEndData{}, err
		}
		return event.TurnEndData{Status: event.StatusDone}, nil
	}
	var err error
	if sess.state() == store.StateClosed {
		// Closed after this input was accepted: end it rather than reopen.
		end := event.TurnEndData{Status: event.StatusError, Reason: "the session was closed before this input's turn"}
		ev := event.New(sess.s.ID, it.ID, event.TurnEnd, end)
		if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: []event.Event{ev}, Done: []int64{it.ID}, State: store.StateClosed}); err != nil {
			return event.TurnEndData{}, err
		}
		return end, nil
	}
	def, ok := r.o.Agents.Get(sess.s.Agent)
	if !ok {
		// The agent's file was removed after the input was accepted: end the
		// turn with an error rather than lose the input silently.
		end := event.TurnEndData{Status: event.StatusError, Reason: fmt.Sprintf("agent %q is no longer defined", sess.s.Agent)}
		ev := event.New(sess.s.ID, it.ID, event.TurnEnd, end)
		if err := r.commit(ctx, sess, &store.Batch{Session: sess.s.ID, Events: []event.Event{ev}, Done: []int64{it.ID}}); err != nil {
			return event.TurnEndData{}, err
		}
		return end, nil
	}
	t := &engine.Turn{Log: turnLog{r, sess}, ID: it.ID, Session: sess.s, Agent: def, Item: it, Durable: q.durable, Recovered: q.recovered}
	if q.recovered {
		prior, err := r.st.TurnEvents(ctx, sess.s.ID, it.ID)
		if err != nil {
			return event.TurnEndData{}, err
		}
		t.Prior = prior
	}
	if len(t.Prior) > 0 {
		// The context must not include this turn's own events.
		evs, err := r.st.ContextEvents(ctx, sess.s.ID)
		if err != nil {
			return event.TurnEndData{}, fmt.Errorf("runtime: load context: %w", err)
		}
		cut := len(evs)
		for cut > 0 && evs[cut-1].Seq >= t.Prior[0].Seq {
			cut--
		}
		var c engine.Conversation
		c.Add(engine.FromSummary(evs[:cut])...)
		t.Context, t.Marks, t.Skills = c.Messages(), c.Marks(), c.Skills()
	} else if t.Context, t.Marks, t.Tokens, t.Skills, err = r.context(ctx, sess); err != nil {
		return event.TurnEndData{}, err
	}
	if def.Budgets.MaxUSDPerDay > 0 {
		y, m, d := time.Now().UTC().Date()
		u, err := r.st.UsageSince(ctx, def.ID, time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
		if err != nil {
			return event.TurnEndData{}, err
		}
		t.SpentToday = u.CostUSD
	}
	tctx, cancel := context.WithCancelCause(ctx)
	sess.mu.Lock()
	sess.cancel = cancel
	sess.mu.Unlock()
	r.bus.Publish(event.Event{Session: sess.s.ID, Turn: it.ID, Kind: event.TurnStart, Time: time.Now().UTC()})
	// The store sees the session active only if the turn writes before it
	// ends; watchers see it at once.
	r.publishState(sess, it.ID, store.StateActive)
	var end event.TurnEndData
	if it.Kind == event.CompactRequest {
		c, ok := r.o.Engine.(Compactor)
		if !ok {
			cancel(nil)
			return event.TurnEndData{}, fmt.Errorf("runtime: this engine cannot compact")
		}
		end, err = c.Compact(tctx, t)
	} else {
		end, err = r.o.Engine.Run(tctx, t)
	}
	cancel(nil)
	sess.mu.Lock()
	sess.cancel = nil
	sess.mu.Unlock()
	if err != nil {
		return event.TurnEndData{}, err
	}
	return end, nil
}

// context returns the session's conversation since the last reset (with
// the skills it loaded), kept in memory while the session is cached and
// loaded from the log otherwise.
func (r *Runtime) context(ctx context.Context, sess *session) ([]model.Message, []engine.Mark, []int, []string, error) {
	sess.mu.Lock()
	if c := sess.conv; c != nil {
		m, marks, toks, skills := c.Messages(), c.Marks(), c.Tokens(), c.Skills()
		sess.mu.Unlock()
		return m, marks, toks, skills, nil
	}
	sess.mu.Unlock()
	evs, err := r.st.ContextEvents(ctx, sess.s.ID)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("runtime: load context: %w", err)
	}
	c := new(engine.Conversation)
	c.Add(engine.FromSummary(evs)...)
	sess.mu.Lock()
	defer sess.mu.Unlock()
	// Only this session's worker loads or changes the conversation, so
	// nothing was added meanwhile.
	r.setConv(sess, c)
	return c.Messages(), c.Marks(), c.Tokens(), c.Skills(), nil
}

func (r *Runtime) commit(ctx context.Context, sess *session, b *store.Batch) error {
	if err := r.st.Commit(ctx, b); err != nil {
		return err
	}
	r.committed(sess, b)
	return nil
}

// asyncStore is the optional ability of a store to take a write at once
// and report its durability later, keeping the order writes were handed over.
type asyncStore interface {
	CommitAsync(ctx context.Context, b *store.Batch) func() error
}

// turnLog is the log of one turn of a session (engine.Turn.Log).
type turnLog struct {
	r    *Runtime
	sess *session
}

// Commit hands a batch to the store and returns a function that waits for
// it to be durable, then keeps the session's cached context in step and
// publishes its events. Stores without the ability commit at once.
func (l turnLog) Commit(ctx context.Context, b *store.Batch) func() error {
	as, ok := l.r.st.(asyncStore)
	if !ok {
		err := l.r.commit(ctx, l.sess, b)
		return func() error { return err }
	}
	wait := as.CommitAsync(ctx, b)
	return func() error {
		if err := wait(); err != nil {
			return err
		}
		l.r.committed(l.sess, b)
		return nil
	}
}

// committed keeps the session's cached context in step with a durable
// batch and publishes its events.
func (r *Runtime) committed(sess *session, b *store.Batch) {
	if sess != nil && len(b.Events) > 0 {
		sess.mu.Lock()
		if c := sess.conv; c != nil {
			before := c.Size()
			for _, e := range b.Events {
				if e.Kind == event.Reset {
					r.cached.Add(int64(c.Size() - before))
					r.setConv(sess, new(engine.Conversation))
					c, before = sess.conv, 0
					continue
				}
				if e.Kind == event.Summary {
					// The context now starts from the summary: load it
					// from the log when next needed.
					r.cached.Add(int64(c.Size() - before))
					r.setConv(sess, nil)
					c = nil
					break
				}
				c.Add(e)
			}
			if c != nil {
				r.cached.Add(int64(c.Size() - before))
			}
		}
		if b.State != "" {
			sess.s.State = b.State
		}
		sess.mu.Unlock()
	}
	r.bus.Publish(b.Events...)
	if sess != nil && b.State != "" {
		var turn int64
		if n := len(b.Events); n > 0 {
			turn = b.Events[n-1].Turn
		}
		r.publishState(sess, turn, b.State)
	}
	r.trimCache()
}

// publishState publishes a live session_state event if state is not the
// session's last published one.
func (r *Runtime) publishState(sess *session, turn int64, state string) {
	sess.mu.Lock()
	changed := sess.published != state
	sess.published = state
	id := sess.s.ID
	sess.mu.Unlock()
	if changed {
		r.bus.Publish(event.New(id, turn, event.State, event.StateData{State: state}))
	}
}

// Close stops accepting inputs and starting queued ones, lets running
// turns finish until ctx is done, then cancels them with
// engine.ErrShutdown, and waits for every worker to exit. Whoever waits
// for a turn gets its end if it ended, else ErrClosed; the turns cancelled
// and those still queued resume at the next start. Close may be called
// more than once.
func (r *Runtime) Close(ctx context.Context) error {
	r.closing.Store(true) // first: whoever sees closed sees closing
	r.mu.Lock()
	first := !r.closed
	r.closed = true
	r.mu.Unlock()
	done := make(chan struct{})
	go func() {
		// Workers exit when their running turn ends; new items are refused.
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	r.cancel(engine.ErrShutdown)
	<-done
	if first {
		close(r.stopped)
	}
	return nil
}

// Stream submits an input and calls fn with each event of its turn as it
// happens — live text deltas and every logged event — until the turn ends.
// If the bus drops the subscription (fn too slow), the rest comes from the
// log, so fn sees every logged event of the turn exactly once, in order.
func (r *Runtime) Stream(ctx context.Context, in Input, fn func(event.Event) error) (Receipt, event.TurnEndData, error) {
	agentID, key, err := r.address(in.Session)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	if err := checkInput(&in); err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	if r.closing.Load() { // before the session is made
		return Receipt{}, event.TurnEndData{}, ErrClosed
	}
	sess, err := r.lookup(ctx, agentID, key)
	if err != nil {
		return Receipt{}, event.TurnEndData{}, err
	}
	sub := r.bus.Subscribe(sess.s.ID, 256) // a reader that falls behind catches up from the log
	defer sub.Close()
	var ch chan event.TurnEndData
	rc, err := r.submit(ctx, in, &ch)
	if err != nil {
		return rc, event.TurnEndData{}, err
	}
	var last int64
	emit := func(e event.Event) error {
		// A turn's events; the session's state changes are the session's.
		if e.Turn != rc.Turn || e.Kind == event.State {
			return nil
		}
		if e.Seq > 0 {
			if e.Seq <= last {
				return nil
			}
			last = e.Seq
		}
		return fn(e)
	}
	// replay sends what fn has not seen of the turn's logged events; once
	// the turn has ended, it reads them even if ctx is done meanwhile.
	replay := func(ctx context.Context) error {
		evs, err := r.st.TurnEvents(ctx, sess.s.ID, rc.Turn)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if err := emit(e); err != nil {
				return err
			}
		}
		return nil
	}
	// A turn's events have consecutive sequence numbers, but parallel
	// writes may be published out of order: on a gap, read the log.
	live := func(e event.Event) error {
		if e.Turn == rc.Turn && e.Seq > 0 && last > 0 && e.Seq != last+1 {
			return replay(ctx)
		}
		return emit(e)
	}
	if ch == nil { // duplicate: the original's events and result
		end, err := r.Wait(ctx, rc.Turn)
		if err == nil {
			err = replay(context.WithoutCancel(ctx))
		}
		return rc, end, err
	}
	defer r.dropWaiter(rc.Turn, ch)
	c := sub.C
	for {
		select {
		case e, ok := <-c:
			if !ok {
				// Dropped as too slow: catch up from the log, then wait.
				if err := replay(ctx); err != nil {
					return rc, event.TurnEndData{}, err
				}
				c = nil
				continue
			}
			if err := live(e); err != nil {
				return rc, event.TurnEndData{}, err
			}
		case <-r.stopped:
			// Stopped: the turn's end, if it came, is in ch; else it
			// resumes at the next start and await says so.
			end, err := r.await(ctx, rc.Turn, ch)
			if err != nil {
				return rc, end, err
			}
			return rc, end, replay(context.WithoutCancel(ctx))
		case end := <-ch:
			// The turn's events were published before it ended; take what
			// is still buffered, then anything missed from the log.
			for drained := false; !drained && c != nil; {
				select {
				case e, ok := <-c:
					if !ok {
						drained = true
						break
					}
					if err := live(e); err != nil {
						return rc, end, err
					}
				default:
					drained = true
				}
			}
			return rc, end, replay(context.WithoutCancel(ctx))
		case <-ctx.Done():
			// The turn may have ended, or the runtime stopped, meanwhile.
			end, err := r.await(ctx, rc.Turn, ch)
			if err != nil {
				return rc, end, err
			}
			return rc, end, replay(context.WithoutCancel(ctx))
		}
	}
}

// Events returns a session's logged events after a sequence number.
func (r *Runtime) Events(ctx context.Context, addr string, after int64, limit int) (store.Session, []event.Event, error) {
	agentID, key, err := ParseAddress(addr)
	if err != nil {
		return store.Session{}, nil, err
	}
	s, err := r.st.SessionByAddress(ctx, agentID, key)
	if err != nil {
		return s, nil, sessionErr(addr, err)
	}
	evs, err := r.st.Events(ctx, s.ID, after, limit)
	return s, evs, err
}
