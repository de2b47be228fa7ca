// Package runtime is agentd's kernel: it accepts inputs into per-session
// inboxes (durably, deduplicated by idempotency key), runs each session's
// turns strictly in order with one worker goroutine that exists only while
// the session has work, runs many sessions in parallel under a global cap,
// and on start resumes every turn a previous process left unfinished.
// Each turn it hands the engine carries its log (engine.Turn.Log): a batch
// is committed to the store, then the session's cached context follows it
// and its events are published on the bus. A worker runs a session only
// while its node holds the session's lease (lease.go; kept a moment
// after the queue empties, grace.go), so that several nodes can share one
// store: one of them runs each session's turns, and another takes a dead
// node's sessions over as a restart would. Writes outside turns are made
// under the lease too (outside.go).
//
// Lock order: a running turn's own locks (the engine's lifecycle.mu, then
// writer.mu, held while the turn's log commits and waits), then
// Runtime.mu, then session.mu. session.lmu, which orders a session's
// lease changes and is held across the store's lease calls, comes before
// Runtime.mu and is never taken by a running turn. Runtime.mu guards the sessions in memory
// and the waiters; session.mu one session's queue, running turn, cached
// context and state. Eviction, which holds Runtime.mu, only tries a
// session's lock. Neither runtime lock is held across I/O (the store, the
// bus), while a turn's context is cancelled, or while the engine runs, so
// a turn's log may take them.
package runtime

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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
	// in memory (default DefaultCacheSessions), and CacheBytes how much
	// memory those contexts may take together (default DefaultCacheBytes);
	// past either, the least recently used idle sessions' contexts are
	// dropped (and reloaded from the log when needed). CacheIdle is how
	// long an idle session keeps its context (default DefaultCacheIdle).
	CacheSessions int
	CacheBytes    int64
	CacheIdle     time.Duration
	// Leases decides which sessions this node runs; nil: the store's
	// (store.ClusterStore) if it has them, else this node runs every
	// session.
	Leases Leases
	// ClaimEvery, when set, says that other nodes share the store: a
	// session's lease is given up whenever its queue empties (any node
	// may then take it with its next input), and every ClaimEvery the
	// node takes over the sessions with pending inputs and no live owner
	// (a dead node's). 0 (the default, for a store only this node uses)
	// keeps every lease and claims only at Start.
	ClaimEvery time.Duration
	// OutsideWait bounds how long a write of a session's log outside its
	// turns (a close or reopen marker, a recorded event, working memory
	// set through the API) waits on a shared store for the session's
	// lease while another node holds it, before it is refused with
	// ErrBusy (default 3 s).
	OutsideWait time.Duration
	// Paused, when set, says whether an agent is paused: its sessions'
	// queued inputs wait (they are durable in the inbox) and run once
	// Resume is called for it. A running turn finishes.
	Paused func(agent string) bool
	// LeaseGrace is how long, on a shared store, a node keeps an idle
	// session's lease after its queue empties, so that its next input
	// here needs no round trip to take it (grace.go); 0: 2 s, < 0: none.
	LeaseGrace time.Duration
	// Ended, when set, is called once per turn end (done, error, budget,
	// cancelled, refused) after the turn_end is durable, on the node that
	// ran the turn, with no runtime lock held. It must not block: it runs
	// on the session's worker, whose next input waits for it; hand slow
	// work to a goroutine of its own.
	Ended func(s store.Session, it store.InboxItem, end event.TurnEndData)
	// Cleared, when set, is called after a session's reset marker or its
	// close is durable, on the node that wrote it, with no runtime lock
	// held: what the session holds outside its log (its background
	// processes, its grants) ends with it. It runs on the session's
	// worker before its next input, so it must be short: bounded work
	// only (a store call under a deadline, no waiting on the session).
	Cleared func(s store.Session)
	// Accounts, when set, gives each turn its spending account and payer
	// (a sub-agent's are its lineage's). nil: every turn pays alone,
	// charged to its own agent.
	Accounts Accounts
}

// Accounts gives turns the account they spend from and the agent that
// pays for them.
type Accounts interface {
	// For returns the account and payer of turn of def in sess: a
	// sub-agent's are its lineage's; any other turn's account is its
	// own, made here so that the sub-agents it starts can share it. A nil
	// account: the turn pays alone; "" payer: def pays.
	For(ctx context.Context, sess store.Session, turn int64, def *agent.Definition, b agent.Budgets) (engine.Account, string, error)
}

// Runtime owns sessions, inboxes and session workers.
type Runtime struct {
	o      Options
	st     store.Store
	leases Leases
	bus    *event.Bus
	log    *slog.Logger
	sem    chan struct{}
	ctx    context.Context // cancelled with engine.ErrShutdown on Close
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // session workers
	claims sync.WaitGroup // the claim loop and remoteEnds (ClaimEvery)
	graces sync.WaitGroup // the leases kept idle (grace.go)
	// idle hands a kicked session to a worker waiting for work (worker.go);
	// quit, closed by Close, sends those waiting away.
	idle        chan *session
	quit        chan struct{}
	idleWorkers atomic.Int32
	// closing is set when Close begins: workers start no further queued
	// item. stopped is closed once every worker has exited, so that whoever
	// still waits for a turn learns it will not end in this process.
	closing atomic.Bool
	stopped chan struct{}

	mu       sync.Mutex
	closed   bool
	sessions map[int64]*session
	byAddr   map[string]*session
	peak     int        // the most sessions the maps have held since made
	lru      *list.List // idle cached sessions, most recent at front
	waiters  map[int64][]chan event.TurnEndData

	cached atomic.Int64 // bytes held by sessions' cached conversations

	gate turnGate // keeps the turns not started from starting (Hold)
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
	if r.leases = o.Leases; r.leases == nil {
		if cs, ok := o.Store.(store.ClusterStore); ok {
			r.leases = cs
		} else {
			r.leases = soleNode{o.Store}
		}
	}
	n := o.MaxConcurrentTurns
	if n <= 0 {
		n = 256
	}
	if r.o.CacheSessions <= 0 {
		r.o.CacheSessions = DefaultCacheSessions
	}
	if r.o.CacheBytes <= 0 {
		r.o.CacheBytes = DefaultCacheBytes
	}
	if r.o.CacheIdle <= 0 {
		r.o.CacheIdle = DefaultCacheIdle
	}
	if r.o.OutsideWait <= 0 {
		r.o.OutsideWait = 3 * time.Second
	}
	if r.o.LeaseGrace == 0 {
		r.o.LeaseGrace = 2 * time.Second
	}
	r.sem = make(chan struct{}, n)
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	r.stopped = make(chan struct{})
	r.idle, r.quit = make(chan *session), make(chan struct{})
	r.sessions = make(map[int64]*session)
	r.byAddr = make(map[string]*session)
	r.lru = list.New()
	r.waiters = make(map[int64][]chan event.TurnEndData)
	return r
}

// Bus returns the bus on which durable events are published after commit,
// along with live text deltas.
func (r *Runtime) Bus() *event.Bus { return r.bus }

// Start resumes every session with unprocessed inbox items and no live
// owner, including turns a previous process left unfinished, and, on a
// shared store (ClaimEvery), starts claiming such sessions as they appear.
func (r *Runtime) Start(ctx context.Context) (resumed int, err error) {
	resumed, err = r.claim(ctx)
	if err != nil {
		return resumed, fmt.Errorf("runtime: resume sessions: %w", err)
	}
	if r.shared() {
		r.claims.Go(r.claimLoop)
		r.claims.Go(r.remoteEnds)
	}
	return resumed, nil
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
	if first {
		close(r.quit) // no session is handed over after this: kick sees closed
	}
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
	r.claims.Wait()
	r.stopGraces()
	if first {
		close(r.stopped)
	}
	return nil
}
