package job

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"agentd/internal/schedule"
	"agentd/internal/store"
)

// Firer fires jobs for the Scheduler and resumes the runs a previous
// scheduler left open: the Runner.
type Firer interface {
	// Fire fires the job name's trigger for its scheduled time at; a
	// fire taken before is no error.
	Fire(ctx context.Context, name, trigger string, at time.Time) error
	// Recover resumes the runs left open of the jobs named (none: of
	// every active job).
	Recover(ctx context.Context, jobs ...string) (int, error)
}

// LastRuns tells when a job last fired by one of triggers
// (store.JobRunStore).
type LastRuns interface {
	LastRun(ctx context.Context, job string, triggers ...string) (store.JobRun, error)
}

// SchedulerOptions configure a Scheduler.
type SchedulerOptions struct {
	Logger *slog.Logger
	// Fire fires the jobs (default the Runner).
	Fire Firer
	// Lead makes the Scheduler fire only while this node leads the role
	// "jobs" in the cluster (nil: it always leads, as on one node).
	Lead store.OnceStore
	// LeadRetry is how often a node that does not lead tries to (default
	// 10 s).
	LeadRetry time.Duration
	// CatchUpMax caps the fires a job's catch-up policy all makes at once
	// (default 100).
	CatchUpMax int
	// Fired, if set, is told of every fire: its job, trigger, scheduled
	// time, when it was fired (its lateness is fired − due) and its error.
	// Fires due at one time call it from several goroutines at once.
	Fired func(name, trigger string, due, fired time.Time, err error)
	// MaxWatchDirs bounds the directories one watch trigger watches
	// (default DefaultMaxWatchDirs).
	MaxWatchDirs int
	// KeepRuns, KeepRunsFor and PruneEvery are the run history's
	// retention (prune.go): while it leads, the Scheduler prunes each
	// active job's runs beyond its newest KeepRuns (default
	// DefaultKeepRuns) and, if KeepRunsFor is set, scheduled longer ago
	// than that (default 0: no age limit), every PruneEvery (default
	// DefaultPruneEvery).
	KeepRuns    int
	KeepRunsFor time.Duration
	PruneEvery  time.Duration
	// FireConcurrency is how many fires due at one time are made at once
	// (default 128).
	FireConcurrency int
}

// LeadRole is the role the scheduling node leads.
const LeadRole = "jobs"

// timeTriggers are the run triggers of a job's schedules: a schedule
// catches up from the newest run one of them took.
var timeTriggers = []string{store.TriggerCron, store.TriggerEvery, store.TriggerAt}

// Scheduler fires the active jobs' time triggers (cron with its time
// zone, every, at, heartbeat) at their times, and their watch triggers
// on file changes, through the Runner, while this node leads "jobs".
// When it becomes the leader it resumes the runs left open (Recover),
// then catches each job up from its last scheduled run
// per the trigger's catch_up policy; jobs activated, changed or removed
// later are caught up or dropped at once. Each fire is taken once in
// the run history (a scheduled run's id is its scheduled time), so a
// second node or a restart that fires the same time again runs nothing.
//
// While it leads it also prunes the run history (prune.go).
//
// Lock order: Scheduler.mu only, never held across a fire or a store
// call (watches has its own, never held with it). Its own goroutine is
// Run's caller's; the watchers' are watches' (watch.go), stopped when
// the lead is lost or Run ends; while it leads, the pruning one loop
// starts and waits for; fires due at one time are made by goroutines it
// starts and waits for (fireDue).
type Scheduler struct {
	r       *Runner
	runs    LastRuns
	fire    Firer
	lead    store.OnceStore
	log     *slog.Logger
	retry   time.Duration
	max     int
	par     int // fires made at once
	fired   func(name, trigger string, due, fired time.Time, err error)
	changed chan struct{} // a job was activated or removed (cap 1)
	watches *watches      // the watch triggers' watchers, while leading

	keep       int
	keepFor    time.Duration
	pruneEvery time.Duration

	// zones are the time zones of the cron triggers scheduled, by name,
	// shared (the loop's goroutine only): a zone loaded per trigger holds
	// kilobytes of its own.
	zones map[string]*time.Location

	mu    sync.Mutex
	dirty map[string]bool     // jobs changed since the loop last looked
	byJob map[string][]*entry // the entries of the jobs scheduled
	queue timeHeap            // the entries by next fire time
}

// NewScheduler returns the scheduler of r's jobs, catching them up from
// the runs in runs.
func NewScheduler(r *Runner, runs LastRuns, o *SchedulerOptions) *Scheduler {
	if o == nil {
		o = &SchedulerOptions{}
	}
	s := &Scheduler{r: r, runs: runs, fire: o.Fire, lead: o.Lead, log: o.Logger, retry: o.LeadRetry, max: o.CatchUpMax,
		par: o.FireConcurrency, fired: o.Fired, changed: make(chan struct{}, 1), zones: map[string]*time.Location{},
		dirty: map[string]bool{}, byJob: map[string][]*entry{},
		keep: o.KeepRuns, keepFor: o.KeepRunsFor, pruneEvery: o.PruneEvery}
	if s.keep <= 0 {
		s.keep = DefaultKeepRuns
	}
	if s.pruneEvery <= 0 {
		s.pruneEvery = DefaultPruneEvery
	}
	if s.fire == nil {
		s.fire = r
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.retry <= 0 {
		s.retry = 10 * time.Second
	}
	if s.max <= 0 {
		s.max = 100
	}
	s.watches = newWatches(r, s.log, o.MaxWatchDirs)
	if s.par <= 0 {
		s.par = 128
	}
	r.watch(s.touch)
	return s
}

// touch notes that the job name changed.
func (s *Scheduler) touch(name string) {
	s.mu.Lock()
	s.dirty[name] = true
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Next returns the next fire time of each job scheduled (none while this
// node does not lead).
func (s *Scheduler) Next() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]time.Time{}
	for name, es := range s.byJob {
		for _, e := range es {
			if t, ok := out[name]; e.index >= 0 && (!ok || e.next.Before(t)) {
				out[name] = e.next
			}
		}
	}
	return out
}

// Run schedules until ctx ends: while this node leads (always without
// Options.Lead), or trying to lead every LeadRetry.
func (s *Scheduler) Run(ctx context.Context) error {
	for {
		var lost <-chan struct{}
		var l store.Lead
		if s.lead != nil {
			var err error
			if l, err = s.lead.TryLead(ctx, LeadRole); err != nil && ctx.Err() == nil {
				s.log.Warn("job scheduler: lead", "err", err)
			}
			if l == nil {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(s.retry):
					continue
				}
			}
			lost = l.Lost()
		}
		s.log.Info("job scheduler leads")
		s.loop(ctx, lost)
		s.reset()
		if l != nil {
			l.Release()
		}
		if ctx.Err() != nil {
			return nil
		}
		s.log.Info("job scheduler lost the lead")
	}
}

// reset forgets the schedule and stops the watches (the lead is lost).
func (s *Scheduler) reset() {
	s.mu.Lock()
	s.byJob, s.queue = map[string][]*entry{}, nil
	s.mu.Unlock()
	s.watches.stopAll()
}

// loop fires the jobs, and prunes their runs, until ctx ends or lost is
// closed.
func (s *Scheduler) loop(ctx context.Context, lost <-chan struct{}) {
	if n, err := s.fire.Recover(ctx); err != nil {
		s.log.Error("job runs not recovered", "err", err)
	} else if n > 0 {
		s.log.Info("resumed job runs", "runs", n)
	}
	pctx, stopPrune := context.WithCancel(ctx)
	var pruning sync.WaitGroup
	pruning.Go(func() { s.prune(pctx) })
	defer func() {
		stopPrune()
		pruning.Wait()
	}()
	s.mu.Lock()
	clear(s.dirty)
	s.mu.Unlock()
	for name, spec := range s.r.Jobs() {
		s.add(ctx, name, &spec, time.Now())
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.update(ctx)
		timer.Reset(s.wait(time.Now()))
		select {
		case <-ctx.Done():
			return
		case <-lost:
			return
		case <-s.changed:
			continue
		case <-timer.C:
		}
		s.fireDue(ctx, time.Now())
	}
}

// wait returns how long until the first entry is due (an hour if none
// is: a change wakes the loop anyway).
func (s *Scheduler) wait(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return time.Hour
	}
	return max(0, s.queue[0].next.Sub(now))
}

// update drops the entries of the jobs changed and adds their new ones,
// caught up.
func (s *Scheduler) update(ctx context.Context) {
	s.mu.Lock()
	names := make([]string, 0, len(s.dirty))
	for n := range s.dirty {
		names = append(names, n)
		for _, e := range s.byJob[n] {
			if e.index >= 0 {
				heap.Remove(&s.queue, e.index)
			}
		}
		delete(s.byJob, n)
	}
	clear(s.dirty)
	s.mu.Unlock()
	for _, n := range names {
		s.watches.stop(n)
	}
	for _, n := range names {
		spec, ok := s.r.Job(n)
		if !ok {
			continue
		}
		// Its runs left open while it was not active (paused, say) would
		// otherwise stay open, and a skip job skip every fire.
		if _, err := s.fire.Recover(ctx, n); err != nil && ctx.Err() == nil {
			s.log.Error("job runs not recovered", "job", n, "err", err)
		}
		s.add(ctx, n, &spec, time.Now())
	}
}

// add schedules a job's time triggers: it fires what each trigger's
// catch-up policy says is due since the job's last scheduled run, then
// queues the trigger's next fire time.
func (s *Scheduler) add(ctx context.Context, name string, spec *Spec, now time.Time) {
	s.watches.start(ctx, name, spec)
	var es []*entry
	for _, t := range spec.Triggers {
		kind := triggerKind(t)
		if kind == "" {
			continue
		}
		sch, policy, err := triggerSchedule(t)
		if err != nil {
			s.log.Warn("job trigger not scheduled", "job", name, "err", err) // checked when saved
			continue
		}
		if z, ok := sch.(*schedule.Zoned); ok {
			z.Loc = s.zone(z.Loc)
		}
		es = append(es, &entry{job: name, trigger: kind, sched: sch, policy: policy, index: -1})
	}
	if len(es) == 0 {
		return
	}
	last := map[bool]time.Time{}
	for _, e := range es {
		// A heartbeat catches up from its own last run, the schedules
		// from theirs.
		hb := e.trigger == store.TriggerHeartbeat
		if _, ok := last[hb]; !ok {
			last[hb] = s.lastRun(ctx, name, hb)
		}
		e.last = last[hb]
		s.fireEntry(ctx, e, now)
	}
	s.mu.Lock()
	s.byJob[name] = es
	for _, e := range es {
		if e.next, _ = e.sched.Next(now); !e.next.IsZero() {
			heap.Push(&s.queue, e)
		}
	}
	s.mu.Unlock()
}

// lastRun returns the scheduled time of the job's last heartbeat run
// (hb) or last run of a schedule, zero if there is none.
func (s *Scheduler) lastRun(ctx context.Context, name string, hb bool) time.Time {
	triggers := timeTriggers
	if hb {
		triggers = []string{store.TriggerHeartbeat}
	}
	jr, err := s.runs.LastRun(ctx, name, triggers...)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Warn("job: last run not read; catching up as a new job", "job", name, "err", err)
	}
	return jr.ScheduledAt
}

// zone returns the scheduler's one location of loc's zone.
func (s *Scheduler) zone(loc *time.Location) *time.Location {
	if z, ok := s.zones[loc.String()]; ok {
		return z
	}
	s.zones[loc.String()] = loc
	return loc
}

// fireDue fires the entries due at now, up to s.par at once, and queues
// their next times once all have fired. A burst of jobs due at one time
// (many crons of one minute) is so accepted at the pace of the store's
// group commits rather than of one fire's two writes each; the fires of
// one job still take their runs one after the other (Runner.take). The
// turns of a burst of burstHoldMin or more start once all its inputs are
// accepted (or after burstHold, whichever comes first), so that its first
// turns do not take the CPU its later fires need.
func (s *Scheduler) fireDue(ctx context.Context, now time.Time) {
	s.mu.Lock()
	var due []*entry
	for len(s.queue) > 0 && !s.queue[0].next.After(now) {
		due = append(due, heap.Pop(&s.queue).(*entry))
	}
	s.mu.Unlock()
	if h, ok := s.r.rt.(turnHolder); ok && len(due) >= burstHoldMin {
		defer h.Hold(burstHold)()
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, s.par)
	for _, e := range due {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			s.fireEntry(ctx, e, now)
		})
	}
	wg.Wait()
	s.mu.Lock()
	for _, e := range due {
		if e.next, _ = e.sched.Next(now); !e.next.IsZero() && s.byJob[e.job] != nil {
			heap.Push(&s.queue, e)
		}
	}
	s.mu.Unlock()
}

// turnHolder is a Runtime that can hold the turns not started yet while
// a burst is accepted (runtime.Runtime.Hold).
type turnHolder interface {
	Hold(max time.Duration) (release func())
}

// burstHold bounds how long the turns wait for a burst's acceptance: a
// fire that waits on something else does not keep every turn waiting.
// burstHoldMin is the smallest burst whose turns wait: a smaller one is
// accepted soon enough while its turns run (100 fires at once within
// 40 ms, in process), and its turns start sooner unheld (25 fires a
// second: 40 ms to their turns unheld, 90 held).
const (
	burstHold    = time.Second
	burstHoldMin = 100
)

// fireEntry fires the times of e after its last and up to now that its
// catch-up policy says are due; everything up to now is then behind it.
func (s *Scheduler) fireEntry(ctx context.Context, e *entry, now time.Time) {
	for _, at := range schedule.Due(e.sched, e.last, now, e.policy, s.max) {
		err := s.fire.Fire(ctx, e.job, e.trigger, at)
		if err != nil && ctx.Err() == nil {
			s.log.Error("job fire failed", "job", e.job, "trigger", e.trigger, "at", at, "err", err)
		}
		if s.fired != nil {
			s.fired(e.job, e.trigger, at, time.Now(), err)
		}
	}
	e.last = now
}

// triggerSchedule returns the schedule of a time trigger and its
// catch-up policy: a heartbeat's is skip by default (a missed one is not
// made up).
func triggerSchedule(t Trigger) (schedule.Schedule, string, error) {
	if t.Heartbeat != nil {
		sch, err := heartbeatSchedule(t.Heartbeat)
		return sch, cmp.Or(t.CatchUp, schedule.Skip), err
	}
	sch, err := schedule.FromTrigger(t.Cron, t.TZ, t.Every, t.At)
	return sch, t.CatchUp, err
}

// Schedules returns the schedules of a job's time triggers as the
// Scheduler fires them (cron in its tz, every, at, a heartbeat's every
// with its quiet hours left out), for whoever shows when a job fires
// next. A trigger that does not parse (checked when the row was saved) is
// left out, as the Scheduler leaves it.
func Schedules(ts []Trigger) []schedule.Schedule {
	var out []schedule.Schedule
	for _, t := range ts {
		if triggerKind(t) == "" {
			continue
		}
		if sch, _, err := triggerSchedule(t); err == nil {
			out = append(out, sch)
		}
	}
	return out
}

// triggerKind returns the run trigger of a time trigger (a heartbeat
// too), "" for another.
func triggerKind(t Trigger) string {
	switch {
	case t.Heartbeat != nil:
		return store.TriggerHeartbeat
	case t.Cron != "":
		return store.TriggerCron
	case t.Every != "":
		return store.TriggerEvery
	case t.At != "":
		return store.TriggerAt
	}
	return ""
}

// entry is one time trigger of a job scheduled.
type entry struct {
	job, trigger string
	sched        schedule.Schedule
	policy       string
	last         time.Time // fire times up to it are behind
	next         time.Time // its next fire time
	index        int       // in the heap, -1 if not in it
}

// timeHeap orders entries by next fire time (container/heap).
type timeHeap []*entry

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h timeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timeHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *timeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}
