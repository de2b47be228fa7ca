package job

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/netguard"
	"agentd/internal/prompt"
	"agentd/internal/runtime"
	"agentd/internal/secret"
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
	// DeliverTries is how many times a delivery is tried before it is
	// given up and recorded as failed (default 3); DeliverBackoff the
	// wait before the second try, doubled before each next (default
	// 1 s).
	DeliverTries   int
	DeliverBackoff time.Duration
	// Node is the node recorded on the runs this Runner takes (default "").
	Node string
	// BeforeSubmit, if set, is called with each run after it is recorded
	// and before its input is submitted; an error leaves the run as a
	// crash there would (open, not submitted): tests show with it that
	// Recover runs it once.
	BeforeSubmit func(store.JobRun) error
	// Secrets reads a webhook trigger's secret (default: a resolver of
	// ${env:NAME} only, secret.NewResolver("", nil)).
	Secrets SecretResolver
	// Ended, if set, is told of every run that ends or is skipped (for
	// metrics); it must not block.
	Ended func(Result)
	// Dir is the data directory: a watch's relative path and a
	// heartbeat's prompt_file are read from it, and a watch of it (but
	// of its workspace) is refused (default "": the working directory,
	// nothing refused).
	Dir string
}

// Runner keeps the active jobs (it is their extension Handler and
// Checker) and runs them, recording every run in the run store: the
// store, not memory, says which runs are open (for the concurrency
// policy and recovery) and what the last run's output was. Each run's
// waiting for its turn and its delivery is a goroutine the Runner owns:
// Close cancels them and waits; a run Close interrupts stays open in the
// store, and Recover finishes it at the next start.
//
// Lock order: startMu, then mu; mu is never held across a call out.
// r.wg counts runs from start (under mu, unless closed) to the end of
// execute.
type Runner struct {
	rt      Runtime
	runs    store.JobRunStore
	agents  Agents
	log     *slog.Logger
	guard   *netguard.Guard
	client  *http.Client
	secrets SecretResolver
	node    string
	before  func(store.JobRun) error
	ended   func(Result)
	dir     string
	dataAbs string // dir, absolute and its links resolved (resolveDir)
	tries   int
	backoff time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// startMu makes a job's concurrency decision and its StartRun one
	// step within the node: a job's runs are taken one after the other,
	// different jobs' (hashed to different locks) at once.
	startMu [startLocks]sync.Mutex

	mu     sync.Mutex
	closed bool // Close was called: no run starts
	jobs   map[string]*Spec
	// chained holds, by job name, the active jobs chained after it
	// (derived from jobs by link): a run's end finds the jobs it fires
	// without going over every job.
	chained  map[string]map[string]bool
	since    map[string]time.Time     // when each job's row was last written (recoverChains)
	queues   map[string]chan struct{} // a queue job's one slot, by name
	inFlight map[string]bool          // "<job>/<run>" of the runs this Runner executes
	watchers []func(name string)      // told of every job activated or removed
}

// New returns a Runner of the jobs its Handler activates, recording
// their runs in runs.
func New(rt Runtime, runs store.JobRunStore, agents Agents, o *Options) *Runner {
	if o == nil {
		o = &Options{}
	}
	r := &Runner{rt: rt, runs: runs, agents: agents, log: o.Logger, guard: o.Guard, secrets: o.Secrets, node: o.Node, before: o.BeforeSubmit, ended: o.Ended, dir: o.Dir,
		tries: o.DeliverTries, backoff: o.DeliverBackoff,
		jobs: map[string]*Spec{}, chained: map[string]map[string]bool{}, since: map[string]time.Time{}, queues: map[string]chan struct{}{}, inFlight: map[string]bool{}}
	r.dataAbs = resolveDir(o.Dir)
	if o.DeliverTries <= 0 {
		r.tries = 3
	}
	if r.backoff <= 0 {
		r.backoff = time.Second
	}
	if r.secrets == nil {
		r.secrets = secret.NewResolver("", nil)
	}
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
		Schema: Schema(), Handler: r, Actor: r.actors, Machine: touchesMachine}
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
	if err := r.activatable(e.Name, s); err != nil {
		return err
	}
	r.mu.Lock()
	r.link(e.Name, false)
	r.jobs[e.Name] = s
	r.link(e.Name, true)
	r.since[e.Name] = e.UpdatedAt
	w := r.watchers
	r.mu.Unlock()
	for _, f := range w {
		f(e.Name)
	}
	return nil
}

// Deactivate removes the job; its runs under way go on.
func (r *Runner) Deactivate(_ context.Context, name string) error {
	r.warnOrphans(name)
	r.mu.Lock()
	r.link(name, false)
	delete(r.jobs, name)
	delete(r.since, name)
	w := r.watchers
	r.mu.Unlock()
	for _, f := range w {
		f(name)
	}
	return nil
}

// watch has f called (without a lock held; f must not block) with the
// name of every job activated, changed or removed from now on.
func (r *Runner) watch(f func(name string)) {
	r.mu.Lock()
	r.watchers = append(r.watchers, f)
	r.mu.Unlock()
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

// Job returns the active job name.
func (r *Runner) Job(name string) (Spec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.jobs[name]
	if !ok {
		return Spec{}, false
	}
	return *s, true
}

// Result is what a run did, or is doing: a run as the store keeps it,
// with the turn of a run this node started. Its Status is one of
// store.RunStatuses.
type Result struct {
	Job     string `json:"job"`
	Run     string `json:"run"`
	Trigger string `json:"trigger"`
	Session string `json:"session"`
	Turn    int64  `json:"turn,omitempty"`
	Status  string `json:"status"`
	// Scheduled is the fire's scheduled time; Started when the run was
	// taken (or, queued, began running); Ended zero while it is open.
	Scheduled time.Time `json:"scheduled"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended,omitzero"`
	Steps     int       `json:"steps,omitempty"`
	TokensIn  int64     `json:"tokens_in,omitempty"`
	TokensOut int64     `json:"tokens_out,omitempty"`
	CostUSD   float64   `json:"cost_usd,omitempty"`
	Output    string    `json:"output,omitempty"`
	// Error says why a run failed (the turn's end status and reason) or
	// was skipped.
	Error string `json:"error,omitempty"`
	// Delivered is when its output (or failure alert) was delivered, or
	// given up with DeliveryError saying why; zero while its delivery is
	// pending (or it has none: open, cancelled).
	Delivered     time.Time `json:"delivered_at,omitzero"`
	DeliveryError string    `json:"delivery_error,omitempty"`
	// Quiet: a heartbeat's run whose answer was HeartbeatOK, delivered
	// nowhere.
	Quiet bool `json:"quiet,omitempty"`
}

// ResultOf returns a stored run as a Result.
func ResultOf(jr store.JobRun) Result {
	return Result{Job: jr.Job, Run: jr.Run, Trigger: jr.Trigger, Session: jr.Session, Status: jr.Status,
		Scheduled: jr.ScheduledAt, Started: jr.StartedAt, Ended: jr.EndedAt, Steps: jr.Steps, TokensIn: jr.TokensIn,
		TokensOut: jr.TokensOut, CostUSD: jr.CostUSD, Output: jr.Output, Error: jr.Error,
		Delivered: jr.DeliveredAt, DeliveryError: jr.DeliveryError, Quiet: quietRun(jr)}
}

// Failed reports whether the run ended without completing.
func (res *Result) Failed() bool { return res.Status == store.RunError }

// a run under way.
type run struct {
	name    string
	spec    *Spec
	fire    Fire
	key     string // its input's idempotency key
	res     Result
	held    bool         // it holds its queue job's slot
	started chan started // its input's acceptance
	done    chan Result
}

// started says whether a run's input was accepted, and its turn.
type started struct {
	turn int64
	err  error
}

// Run runs the job name with fire's payload: fire.Trigger "" (or
// manual) is a run now (fire.At zero: now) with an id of its own;
// a scheduled one (cron, every, at) has the id and idempotency key of
// its scheduled time fire.At, so that however often it is fired it runs
// once: a fire taken before is ErrTaken. Without wait Run returns once
// the run's input is accepted (or, for a queued run, once it is queued);
// with wait, once the run has ended and its output was delivered. A job
// that is not active is ErrNotFound; a skip job with a run open is
// recorded as a skipped run and returned with ErrRunning. A webhook's
// fire (fire.Delivery set) of a delivery the job took before is
// ErrDelivered, returned with that first run.
func (r *Runner) Run(ctx context.Context, name string, fire Fire, wait bool) (Result, error) {
	if fire.At.IsZero() {
		fire.At = time.Now()
	}
	if fire.Trigger == "" {
		fire.Trigger = store.TriggerManual
	}
	ru, err := r.start(ctx, name, fire)
	if errors.Is(err, ErrDelivered) {
		return ru.res, err
	}
	if err != nil {
		return Result{}, err
	}
	switch ru.res.Status {
	case store.RunSkipped:
		return ru.res, fmt.Errorf("%w: %q has a run under way (its concurrency is skip)", ErrRunning, name)
	case store.RunQueued:
		go r.execute(ru)
		if !wait {
			return ru.res, nil
		}
	default:
		go r.execute(ru)
	}
	if ru.res.Status == store.RunRunning {
		select {
		case st := <-ru.started:
			if st.err != nil {
				return Result{}, st.err
			}
			if !wait {
				res := ru.res
				res.Turn = st.turn
				return res, nil
			}
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	select {
	case res := <-ru.done:
		return res, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Fire fires the job name's trigger (store.TriggerCron, …) for its
// scheduled time at: a run taken before (by this node before a restart,
// or by another) or skipped by the job's concurrency is no error.
func (r *Runner) Fire(ctx context.Context, name, trigger string, at time.Time) error {
	_, err := r.Run(ctx, name, Fire{At: at, Trigger: trigger, tag: scheduledTag(trigger)}, false)
	if errors.Is(err, ErrTaken) || errors.Is(err, ErrRunning) {
		return nil
	}
	return err
}

// scheduled reports whether a trigger is a schedule's, whose fires are
// identified by their scheduled times.
func scheduled(trigger string) bool {
	return trigger == store.TriggerCron || trigger == store.TriggerEvery || trigger == store.TriggerAt
}

// runKey returns the idempotency key of a run's input: a scheduled
// fire's is "job:<name>:<scheduled time RFC 3339>", any other run's
// "job:<name>:<run>".
func runKey(jr store.JobRun) string {
	if scheduled(jr.Trigger) {
		return "job:" + jr.Job + ":" + jr.ScheduledAt.UTC().Format(time.RFC3339)
	}
	return "job:" + jr.Job + ":" + jr.Run
}

// start takes a run of the job name, counted in r.wg: it decides the
// run's status from the job's open runs in the store and its
// concurrency, and records it (StartRun).
func (r *Runner) start(ctx context.Context, name string, fire Fire) (*run, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, runtime.ErrClosed
	}
	s, ok := r.jobs[name]
	if !ok {
		r.mu.Unlock()
		return nil, fmt.Errorf("%w %q", ErrNotFound, name)
	}
	r.wg.Add(1)
	r.mu.Unlock()
	ru, err := r.take(ctx, name, s, fire)
	switch {
	case err != nil:
		r.wg.Done()
	case ru.res.Status == store.RunSkipped:
		r.alertSkipped(ru)
	}
	return ru, err
}

// alertSkipped sends a skipped run's failure alert (on_failure) and
// records it, in a goroutine the Runner owns (counted in r.wg by start).
// A crash before the record leaves it pending, for Recover.
func (r *Runner) alertSkipped(ru *run) {
	key := ru.name + "/" + ru.res.Run // in flight since take
	go func() {
		defer func() {
			r.mu.Lock()
			delete(r.inFlight, key)
			r.mu.Unlock()
			r.wg.Done()
		}()
		res := ru.res
		r.settle(r.ctx, ru.spec, &res)
	}()
}

// take decides and records a run (see start).
func (r *Runner) take(ctx context.Context, name string, s *Spec, fire Fire) (*run, error) {
	mu := &r.startMu[startLock(name)]
	mu.Lock()
	defer mu.Unlock()
	open, err := r.runs.OpenRuns(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("job %s: open runs: %w", name, err)
	}
	tag := fire.tag
	switch {
	case tag != "":
	case fire.Delivery != "" || fire.MAC != "":
		// A webhook delivery id and a webhook request are each taken
		// once: its run records both (each unique per job in the
		// store), found again here however often either is sent;
		// StartRun settles a race of nodes given them at once.
		tag = deliveryTag(cmp.Or(fire.Delivery, fire.MAC))
	case !scheduled(fire.Trigger):
		tag = randTag()
	}
	id := store.RunID(fire.At, tag)
	jr := store.JobRun{Job: name, Run: id, ScheduledAt: fire.At, Trigger: fire.Trigger,
		Session: s.Agent + "/" + sessionKey(name, id, fire.Trigger, s), Status: store.RunRunning, Node: r.node, Delivery: fire.Delivery,
		MAC: fire.MAC}
	switch {
	case fire.Body != nil:
		jr.Payload = bodyPayload(fire.Body)
	case len(fire.Payload) > 0:
		jr.Payload, _ = json.Marshal(fire.Payload)
	}
	held := false
	switch s.Concurrency {
	case Allow:
	case Queue:
		if len(open) == 0 {
			held = r.trySlot(name)
		}
		if !held {
			jr.Status = store.RunQueued
		}
	default:
		if len(open) > 0 {
			jr.Status, jr.Error = store.RunSkipped, "run "+open[0].Run+" was still "+open[0].Status
		}
	}
	if jr.Status == store.RunSkipped && (fire.Delivery != "" || fire.MAC != "") {
		// A request taken before is refused as such, skipped or not (a
		// run that records it is refused by StartRun below).
		first, err := r.delivered(ctx, name, fire.Delivery, fire.MAC)
		if err != nil {
			return nil, err
		}
		if first != nil {
			return &run{res: ResultOf(*first)}, fmt.Errorf("%w: %s run %s", ErrDelivered, name, first.Run)
		}
		// A skipped delivery is not taken: its run's id is its own, and
		// it records neither its delivery id nor its MAC, so that the
		// request may be sent again, even within the millisecond.
		jr.Run = store.RunID(fire.At, tag+"-skipped-"+randTag())
		jr.Session = s.Agent + "/" + sessionKey(name, jr.Run, fire.Trigger, s)
		jr.Delivery, jr.MAC = "", ""
	}
	// The run is in flight from before it is recorded, so that a
	// Recover running meanwhile never takes it as left open (or, skipped,
	// its alert as left undelivered).
	key := name + "/" + jr.Run
	r.mu.Lock()
	mine := !r.inFlight[key]
	r.inFlight[key] = true
	r.mu.Unlock()
	got, created, err := r.runs.StartRun(ctx, jr)
	if err != nil || !created {
		if mine {
			r.mu.Lock()
			delete(r.inFlight, key)
			r.mu.Unlock()
		}
		if held {
			r.releaseSlot(name)
		}
		if err != nil {
			return nil, fmt.Errorf("job %s: %w", name, err)
		}
		if (jr.Delivery != "" && got.Delivery == jr.Delivery) || (jr.MAC != "" && got.MAC == jr.MAC) {
			return &run{res: ResultOf(got)}, fmt.Errorf("%w: %s run %s", ErrDelivered, name, got.Run)
		}
		return nil, fmt.Errorf("%w: %s run %s (%s)", ErrTaken, name, got.Run, got.Status)
	}
	ru := r.newRun(s, got, fire)
	ru.held = held
	if got.Status == store.RunSkipped {
		r.log.Info("job fire skipped", "job", name, "run", got.Run, "reason", got.Error)
		if r.ended != nil {
			r.ended(ru.res)
		}
	}
	return ru, nil
}

// startLocks is how many locks the jobs' takes are spread over.
const startLocks = 64

// startLock returns the index of the job name's take lock: the same on
// every run, so that which jobs share one does not change.
func startLock(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32() % startLocks)
}

// randTag is the random tag of a run's id on demand.
func randTag() string {
	var b [2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newRun returns the run of a stored one.
func (r *Runner) newRun(s *Spec, jr store.JobRun, fire Fire) *run {
	return &run{name: jr.Job, spec: s, fire: fire, key: runKey(jr), res: ResultOf(jr),
		started: make(chan started, 1), done: make(chan Result, 1)}
}

// scanMax is how many of a job's newest runs lastDone reads: the
// previous output of a job whose last done run is older is empty.
const scanMax = 1000

// lastDone returns the job's last done run, nil if there is none among
// its scanMax newest runs.
func (r *Runner) lastDone(ctx context.Context, name string) (*store.JobRun, error) {
	before := ""
	for n := 0; n < scanMax; {
		page, err := r.runs.JobRuns(ctx, name, before, store.DefaultRunLimit)
		if err != nil {
			return nil, fmt.Errorf("job %s: runs: %w", name, err)
		}
		for _, jr := range page {
			if jr.Status == store.RunDone {
				return &jr, nil
			}
		}
		n += len(page)
		if len(page) < store.DefaultRunLimit {
			break
		}
		before = page[len(page)-1].Run
	}
	return nil, nil
}

// trySlot takes the queue job's slot if it is free.
func (r *Runner) trySlot(name string) bool {
	select {
	case r.slot(name) <- struct{}{}:
		return true
	default:
		return false
	}
}

func (r *Runner) releaseSlot(name string) { <-r.slot(name) }

// slot returns the queue job's slot.
func (r *Runner) slot(name string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queues[name]
	if q == nil {
		q = make(chan struct{}, 1)
		r.queues[name] = q
	}
	return q
}

// sessionKey is a run's session key: a heartbeat's is the agent's main
// session; any other's the job's named one, or a fresh one.
func sessionKey(name, run, trigger string, s *Spec) string {
	if trigger == store.TriggerHeartbeat {
		return MainSession
	}
	if s.Session != "" {
		return s.Session
	}
	return "job:" + name + ":" + run
}

// execute runs ru: it takes the queue's slot (a queued run then records
// that it runs), submits the input, waits for the turn, records its end
// and delivers the output. Stopped by Close before the turn's end, it
// leaves the run open for Recover.
func (r *Runner) execute(ru *run) {
	defer r.wg.Done()
	res := ru.res
	defer func() {
		r.mu.Lock()
		delete(r.inFlight, ru.name+"/"+res.Run)
		r.mu.Unlock()
		if ru.held {
			r.releaseSlot(ru.name)
		}
		ru.done <- res
	}()
	if ru.spec.Concurrency == Queue && !ru.held {
		select {
		case r.slot(ru.name) <- struct{}{}:
			ru.held = true
		case <-r.ctx.Done():
			ru.started <- started{err: r.ctx.Err()}
			return // queued still: Recover runs it at the next start
		}
	}
	if res.Status == store.RunQueued {
		if _, err := r.runs.FinishRun(r.ctx, store.JobRun{Job: ru.name, Run: res.Run, Status: store.RunRunning}); err != nil {
			ru.started <- started{err: err}
			r.log.Warn("job run not started", "job", ru.name, "run", res.Run, "err", err)
			return
		}
		res.Status = store.RunRunning
	}
	turn, err := r.submit(ru, &res)
	ru.started <- started{turn, err}
	if err != nil {
		if r.stopping(err) {
			return // open: Recover submits it at the next start
		}
		r.log.Warn("job run not started", "job", ru.name, "run", res.Run, "err", err)
		r.finish(ru, &res, store.JobRun{Status: store.RunError, Error: err.Error()})
		return
	}
	res.Turn = turn
	end, err := r.rt.Wait(r.ctx, turn)
	if err != nil && r.stopping(err) {
		return // open: the runtime resumes the turn, Recover waits for it
	}
	out := store.JobRun{Status: store.RunDone, Steps: end.Steps, TokensIn: int64(end.InputTokens),
		TokensOut: int64(end.OutputTokens), CostUSD: end.CostUSD, Output: end.Reply}
	switch {
	case err != nil:
		out.Status, out.Error = store.RunError, err.Error()
	case end.Status != event.StatusDone:
		out.Status, out.Error = store.RunError, end.Status
		if end.Reason != "" {
			out.Error += ": " + end.Reason
		}
	}
	r.finish(ru, &res, out)
}

// submit submits a run's input, its prompt filled with the job's last
// done run's output (read only if the prompt refers to it: a page of runs
// read on every fire otherwise); it returns the turn.
func (r *Runner) submit(ru *run, res *Result) (int64, error) {
	if slices.Contains(prompt.Refs(ru.spec.Prompt), "previous_output") {
		last, err := r.lastDone(r.ctx, ru.name)
		if err != nil {
			return 0, err
		}
		if last != nil {
			ru.fire.Previous = last.Output
		}
	}
	opts, err := ru.spec.options()
	if err != nil {
		return 0, err
	}
	text, err := r.promptOf(ru)
	if err != nil {
		return 0, err
	}
	if r.before != nil {
		jr := store.JobRun{Job: ru.name, Run: res.Run, ScheduledAt: res.Scheduled, Trigger: res.Trigger, Session: res.Session, Status: res.Status}
		if err := r.before(jr); err != nil {
			return 0, fmt.Errorf("%w: %w", errCrash, err)
		}
	}
	rc, err := r.rt.Submit(r.ctx, runtime.Input{Session: res.Session, Text: prompt.Fill(text, ru.fire.vars(ru.name, res.Run)),
		Source: inputSource(res.Trigger), Origin: "job:" + ru.name, IdempotencyKey: ru.key, Options: opts, Reopen: true})
	return rc.Turn, err
}

// errCrash is BeforeSubmit's refusal: the run stays as a crash leaves it.
var errCrash = errors.New("job: stopped before submitting")

// stopping reports whether err is agentd stopping rather than the run
// failing.
func (r *Runner) stopping(err error) bool {
	return r.ctx.Err() != nil || errors.Is(err, runtime.ErrClosed) || errors.Is(err, errCrash)
}

// finish records a run's end (out's status, figures, output, error) and
// delivers its output, or its failure alert (settle).
func (r *Runner) finish(ru *run, res *Result, out store.JobRun) {
	out.Job, out.Run = ru.name, res.Run
	got, err := r.runs.FinishRun(r.ctx, out)
	if errors.Is(err, store.ErrConflict) {
		// Another node finished it (it took over as the scheduler while
		// this one waited): its end and its delivery are that node's.
		r.log.Info("job run finished elsewhere", "job", ru.name, "run", res.Run)
		return
	}
	if err != nil {
		r.log.Error("job run end not recorded", "job", ru.name, "run", res.Run, "err", err)
		got = out
		got.EndedAt = time.Now()
	}
	turn := res.Turn
	*res = ResultOf(got)
	res.Turn = turn
	if got.Session == "" {
		res.Session = ru.res.Session
	}
	r.log.Info("job run ended", "job", ru.name, "run", res.Run, "session", res.Session, "status", res.Status)
	if r.ended != nil {
		r.ended(*res)
	}
	if err == nil {
		// Not recorded, the run stays open: its end, when Recover
		// records it, fires them.
		r.fireChains(r.ctx, got)
	}
	if ru.held {
		// The next queued run need not wait for this one's delivery
		// and its retries, nor its chained runs.
		r.releaseSlot(ru.name)
		ru.held = false
	}
	r.settle(r.ctx, ru.spec, res)
}

// Close cancels the runs' waits and deliveries and waits for them to
// end; the runs' turns are the runtime's and go on, and the runs stay
// open in the store for Recover.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}
