package job

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/netguard"
	"agentd/internal/prompt"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Runtime is what a Runner asks of the kernel: to accept a run's input
// and to wait for its turn's end.
type Runtime interface {
	Submit(ctx context.Context, in runtime.Input) (runtime.Receipt, error)
	Wait(ctx context.Context, turn int64) (event.TurnEndData, error)
}

// Agents finds agents by id, for the checks of a job row.
type Agents interface {
	Get(id string) (*agent.Definition, bool)
}

// Options configure a Runner.
type Options struct {
	Logger *slog.Logger
	// Guard is the SSRF guard webhook deliveries dial through and their
	// URLs are checked against (default netguard.New(nil): every special
	// range blocked).
	Guard *netguard.Guard
	// DeliverTimeout bounds a webhook delivery (default 30 s).
	DeliverTimeout time.Duration
}

// Runner keeps the active jobs (it is their extension Handler and
// Checker) and runs them. Each run's waiting for its turn and its
// delivery is a goroutine the Runner owns: Close cancels them and waits.
//
// Lock order: Runner.mu only; never held across a call out. r.wg counts
// runs from start (under mu, unless closed) to the end of execute.
type Runner struct {
	rt     Runtime
	agents Agents
	log    *slog.Logger
	guard  *netguard.Guard
	client *http.Client

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool // Close was called: no run starts
	jobs    map[string]*Spec
	running map[string]int           // runs of a job not ended, by name
	queues  map[string]chan struct{} // a queue job's one slot, by name
	last    map[string]string        // the output of a job's last run that ended
}

// New returns a Runner of the jobs its Handler activates.
func New(rt Runtime, agents Agents, o *Options) *Runner {
	if o == nil {
		o = &Options{}
	}
	r := &Runner{rt: rt, agents: agents, log: o.Logger, guard: o.Guard,
		jobs: map[string]*Spec{}, running: map[string]int{}, queues: map[string]chan struct{}{}, last: map[string]string{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.guard == nil {
		r.guard = netguard.New(nil)
	}
	timeout := o.DeliverTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	r.client = r.guard.Client(timeout)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// Type is the job extension type, with r as its handler.
func (r *Runner) Type() extension.Type {
	return extension.Type{Name: TypeName, Summary: "work an agent does on its own: a prompt, triggers, a budget, where the output goes",
		Schema: Schema(), Handler: r, Actor: extension.AgentOf}
}

// Activate makes the row's job active, in place of its previous version.
func (r *Runner) Activate(_ context.Context, e *store.Extension) error {
	s, err := Decode(e.Spec)
	if err != nil {
		return err
	}
	if _, err := s.Budgets(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	r.mu.Lock()
	r.jobs[e.Name] = s
	r.mu.Unlock()
	return nil
}

// Deactivate removes the job; its runs under way go on.
func (r *Runner) Deactivate(_ context.Context, name string) error {
	r.mu.Lock()
	delete(r.jobs, name)
	r.mu.Unlock()
	return nil
}

// Jobs returns the active jobs by name (the scheduler's set).
func (r *Runner) Jobs() map[string]Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Spec, len(r.jobs))
	for n, s := range r.jobs {
		out[n] = *s
	}
	return out
}

// Run statuses.
const (
	StatusQueued  = "queued"  // waiting for the job's run before it (concurrency queue)
	StatusRunning = "running" // its turn is under way
	StatusDone    = "done"    // its turn completed
	StatusError   = "error"   // its turn ended otherwise (a budget, an error, a cancel)
)

// Result is what a run did, or is doing.
type Result struct {
	Job     string    `json:"job"`
	Run     string    `json:"run"`
	Session string    `json:"session"`
	Turn    int64     `json:"turn,omitempty"`
	Status  string    `json:"status"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Output  string    `json:"output,omitempty"`
	// Error says why a run failed: the turn's end status and reason.
	Error string `json:"error,omitempty"`
	// DeliveryError says why its output (or failure alert) was not
	// delivered.
	DeliveryError string `json:"delivery_error,omitempty"`
}

// Failed reports whether the run ended without completing.
func (res *Result) Failed() bool { return res.Status == StatusError }

// a run under way.
type run struct {
	name    string
	spec    *Spec
	fire    Fire
	res     Result
	slot    chan struct{} // the queue's slot to take, or nil (taken, or no queue)
	started chan started  // its input's acceptance
	done    chan Result
}

// started says whether a run's input was accepted, and its turn.
type started struct {
	turn int64
	err  error
}

// Run runs the job name now with fire's payload (fire.At zero: now).
// Without wait it returns once the run's input is accepted (or, for a
// queued run, once it is queued); with wait, once the run has ended and
// its output was delivered. A job that is not active is ErrNotFound; a
// skip job still running ErrRunning.
func (r *Runner) Run(ctx context.Context, name string, fire Fire, wait bool) (Result, error) {
	if fire.At.IsZero() {
		fire.At = time.Now()
	}
	ru, err := r.start(name, fire)
	if err != nil {
		return Result{}, err
	}
	go r.execute(ru)
	if ru.slot != nil && !wait {
		return ru.res, nil // queued
	}
	select {
	case st := <-ru.started:
		if st.err != nil {
			return Result{}, st.err
		}
		if !wait {
			res := ru.res
			res.Status, res.Turn = StatusRunning, st.turn
			return res, nil
		}
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	select {
	case res := <-ru.done:
		return res, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// start makes a run of the job name, counted as running and in r.wg.
func (r *Runner) start(name string, fire Fire) (*run, error) {
	id := runID(fire.At)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, runtime.ErrClosed
	}
	s, ok := r.jobs[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrNotFound, name)
	}
	ru := &run{name: name, spec: s, fire: fire, started: make(chan started, 1), done: make(chan Result, 1),
		res: Result{Job: name, Run: id, Session: s.Agent + "/" + sessionKey(name, id, s), Status: StatusRunning, Started: fire.At}}
	switch s.Concurrency {
	case Allow:
	case Queue:
		q := r.queues[name]
		if q == nil {
			q = make(chan struct{}, 1)
			r.queues[name] = q
		}
		select {
		case q <- struct{}{}:
		default:
			ru.slot, ru.res.Status = q, StatusQueued
		}
	default:
		if r.running[name] > 0 {
			return nil, fmt.Errorf("%w: %q has a run under way (its concurrency is skip)", ErrRunning, name)
		}
	}
	r.running[name]++
	r.wg.Add(1)
	return ru, nil
}

// sessionKey is a run's session key: the job's named one, or a fresh one.
func sessionKey(name, run string, s *Spec) string {
	if s.Session != "" {
		return s.Session
	}
	return "job:" + name + ":" + run
}

// runID is a run's id: its fire time (UTC, to the millisecond, so that
// ids sort as runs fired) and 4 random hex digits.
func runID(at time.Time) string {
	var b [2]byte
	rand.Read(b[:])
	return at.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

// execute runs ru: it takes the queue's slot, submits the input, waits
// for the turn, keeps its output for the next run and delivers it.
func (r *Runner) execute(ru *run) {
	defer r.wg.Done()
	res := ru.res
	held := ru.spec.Concurrency == Queue && ru.slot == nil // taken by start
	defer func() {
		r.mu.Lock()
		if r.running[ru.name]--; r.running[ru.name] == 0 {
			delete(r.running, ru.name)
		}
		if held {
			<-r.queues[ru.name]
		}
		r.mu.Unlock()
		ru.done <- res
	}()
	if ru.slot != nil {
		select {
		case ru.slot <- struct{}{}:
			held, res.Status = true, StatusRunning
		case <-r.ctx.Done():
			ru.started <- started{err: r.ctx.Err()}
			res.Status, res.Error = StatusError, "agentd stopped before the run started"
			return
		}
	}
	r.mu.Lock()
	ru.fire.Previous = r.last[ru.name]
	r.mu.Unlock()
	opts, err := ru.spec.options()
	if err == nil {
		var rc runtime.Receipt
		rc, err = r.rt.Submit(r.ctx, runtime.Input{Session: res.Session, Text: prompt.Fill(ru.spec.Prompt, ru.fire.vars(ru.name, res.Run)),
			Source: "job", Origin: "job:" + ru.name, IdempotencyKey: "job:" + ru.name + ":" + res.Run, Options: opts, Reopen: true})
		res.Turn = rc.Turn
	}
	ru.started <- started{res.Turn, err}
	if err != nil {
		res.Status, res.Error, res.Ended = StatusError, err.Error(), time.Now()
		r.log.Warn("job run not started", "job", ru.name, "run", res.Run, "err", err)
		return
	}
	end, err := r.rt.Wait(r.ctx, res.Turn)
	res.Ended, res.Output = time.Now(), end.Reply
	switch {
	case err != nil:
		res.Status, res.Error = StatusError, err.Error()
	case end.Status != event.StatusDone:
		res.Status, res.Error = StatusError, end.Status
		if end.Reason != "" {
			res.Error += ": " + end.Reason
		}
	default:
		res.Status = StatusDone
		r.mu.Lock()
		r.last[ru.name] = end.Reply
		r.mu.Unlock()
	}
	if errors.Is(err, context.Canceled) && r.ctx.Err() != nil {
		return // agentd stops; the runtime resumes the turn, undelivered
	}
	r.log.Info("job run ended", "job", ru.name, "run", res.Run, "session", res.Session, "status", res.Status)
	d := ru.spec.Deliver
	if res.Failed() {
		d = ru.spec.OnFailure
	}
	if err := r.deliver(r.ctx, ru.name, d, &res); err != nil {
		res.DeliveryError = err.Error()
		r.log.Warn("job delivery failed", "job", ru.name, "run", res.Run, "err", err)
	}
}

// Close cancels the runs' waits and deliveries and waits for them to
// end; the runs' turns are the runtime's and go on.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}
