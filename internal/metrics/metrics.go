// Package metrics counts what agentd does — turns, tool calls, model calls
// with their latency, tokens and cost, errors — from the events its
// sessions publish on the event bus, and writes the counts with a few
// figures read when scraped (inbox queue depth, sessions by state, Go and
// process figures) in the Prometheus text exposition format, version 0.0.4.
//
// Every metric caps its distinct label sets (Options.MaxSeries); what
// arrives past the cap is counted in one series whose labels are all
// Overflow, so a flood of new agents, tools or models cannot grow memory
// without bound.
package metrics

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
)

// Sessions finds the agent of a session, for the agent label.
type Sessions interface {
	SessionByID(ctx context.Context, id int64) (store.Session, error)
}

// Queue counts the inbox items waiting for their turn, read on each scrape.
type Queue interface {
	QueueDepth(ctx context.Context) (int64, error)
}

// States counts sessions by state, read on each scrape.
type States interface {
	SessionStates(ctx context.Context) (map[string]int64, error)
}

// Options configure a Collector. A nil *Options is valid.
type Options struct {
	// Sessions gives each event's agent (nil: the agent label is "unknown").
	Sessions Sessions
	// Queue is read on each scrape, States at most every StatesEvery
	// (default DefaultStatesEvery: counting sessions reads them all); nil
	// leaves their metrics out.
	Queue       Queue
	States      States
	StatesEvery time.Duration
	// Version is agentd's version, for agentd_info.
	Version string
	// Degraded, if set, lists the optional parts of agentd that are off
	// (such as memory), for agentd_degraded; read on each scrape.
	Degraded func() []string
	// SQLiteMemory, if set, gives the bytes SQLite holds, for
	// agentd_sqlite_memory_bytes; read on each scrape, and left out while
	// it says 0 (SQLite counts its memory only when asked to).
	SQLiteMemory func() int64
	// Connectors, if set, gives the chat connectors' figures, for the
	// agentd_connector_* metrics; read on each scrape.
	Connectors func() []ConnectorFigures
	Logger     *slog.Logger
	// MaxSeries caps the distinct label sets of each metric (default
	// DefaultMaxSeries).
	MaxSeries int
	// Buffer is the event subscription's buffer (default DefaultBuffer).
	Buffer int
	// Start is when the process started (default: when New was called).
	Start time.Time
}

// DefaultStatesEvery is how long a count of sessions by state is reused.
const DefaultStatesEvery = 30 * time.Second

// DefaultBuffer is the default buffer of the collector's subscription: the
// events it can fall behind by before the bus drops it.
const DefaultBuffer = 8192

// maxAgentCache bounds the session-to-agent cache (the sessions of the
// last minutes at a steady load); when full it is made anew, as a cleared
// map keeps the room it grew to.
const maxAgentCache = 1024

// lookupTimeout bounds finding a session's agent.
const lookupTimeout = 2 * time.Second

// unknownAgent labels events whose session's agent cannot be found.
const unknownAgent = "unknown"

// Histogram buckets, in seconds.
var (
	modelBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}
	toolBuckets  = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	lateBuckets  = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 60, 300}
)

// Collector counts the events of a bus. Run consumes them; WriteMetrics writes
// the metrics. It is safe for concurrent use.
type Collector struct {
	bus *event.Bus
	o   Options
	log *slog.Logger

	mu       sync.Mutex // guards the families, drops and agents
	families []*family  // in exposition order
	turns, toolCalls, toolTime, modelTime,
	tokens, cost, errs *family
	jobFires, jobLate, jobRuns, jobFailures *family
	drops                                   float64
	agents                                  map[int64]string // session id → agent

	statesMu sync.Mutex // guards states and statesAt
	states   map[string]int64
	statesAt time.Time

	subMu  sync.Mutex
	sub    *event.Subscription // taken by Run
	done   chan struct{}       // closed by Close
	closed sync.Once
}

// New returns a collector of bus's events (bus may be nil: only Observe
// feeds it). It subscribes at once, so that no event published after New
// is missed; Run consumes the subscription.
func New(bus *event.Bus, o *Options) *Collector {
	c := &Collector{bus: bus, done: make(chan struct{}), agents: map[int64]string{}}
	if o != nil {
		c.o = *o
	}
	if c.log = c.o.Logger; c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.o.MaxSeries <= 0 {
		c.o.MaxSeries = DefaultMaxSeries
	}
	if c.o.Buffer <= 0 {
		c.o.Buffer = DefaultBuffer
	}
	if c.o.StatesEvery <= 0 {
		c.o.StatesEvery = DefaultStatesEvery
	}
	if c.o.Start.IsZero() {
		c.o.Start = time.Now()
	}
	n := c.o.MaxSeries
	c.turns = newFamily("agentd_turns_total", typeCounter, "Turns ended, by agent and status (done, budget, cancelled, interrupted, error).", n, nil, "agent", "status")
	c.toolCalls = newFamily("agentd_tool_calls_total", typeCounter, "Tool calls finished, by agent, tool and outcome (ok, error, interrupted); lifecycle phase calls included.", n, nil, "agent", "tool", "outcome")
	c.toolTime = newFamily("agentd_tool_duration_seconds", typeHistogram, "Tool call duration, by tool.", n, toolBuckets, "tool")
	c.modelTime = newFamily("agentd_model_latency_seconds", typeHistogram, "Model call latency (one attempt, failed ones included), by provider and model.", n, modelBuckets, "provider", "model")
	c.tokens = newFamily("agentd_tokens_total", typeCounter, "Model tokens, by agent, model and direction (input, output).", n, nil, "agent", "model", "direction")
	c.cost = newFamily("agentd_cost_usd_total", typeCounter, "Model cost in US dollars at the configured prices, by agent and model.", n, nil, "agent", "model")
	c.errs = newFamily("agentd_errors_total", typeCounter, "Errors, by kind: a failed model call attempt by its error kind (rate_limited, overloaded, server_error, auth, context_overflow, bad_request, protocol, transport, other), a failed tool call (tool), a turn that ended in error (turn).", n, nil, "kind")
	c.jobFires = newFamily("agentd_job_fires_total", typeCounter, "Fires of jobs' time triggers by the scheduler, by job, trigger (cron, every, at, heartbeat) and outcome (ok, error); a watch, webhook or chain run is counted by agentd_job_runs_total.", n, nil, "job", "trigger", "outcome")
	c.jobLate = newFamily("agentd_job_fire_lateness_seconds", typeHistogram, "How late the scheduler fired a job's time trigger (fired − scheduled; a catch-up fire is late by the downtime), by trigger.", n, lateBuckets, "trigger")
	c.jobRuns = newFamily("agentd_job_runs_total", typeCounter, "Job runs ended, by job and status (done, error, skipped).", n, nil, "job", "status")
	c.jobFailures = newFamily("agentd_job_failures_total", typeCounter, "Job runs that failed (status error), by job.", n, nil, "job")
	c.families = []*family{c.turns, c.toolCalls, c.toolTime, c.modelTime, c.tokens, c.cost, c.errs,
		c.jobFires, c.jobLate, c.jobRuns, c.jobFailures}
	if bus != nil {
		c.sub = bus.SubscribeLocal(0, c.o.Buffer) // each turn counted by the node that ran it
	}
	return c
}

// JobFired counts a scheduler's fire of a job's trigger, late by
// lateness; err is the fire's failure.
func (c *Collector) JobFired(job, trigger string, lateness time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobFires.add(1, job, trigger, outcome)
	c.jobLate.observe(max(0, lateness.Seconds()), trigger)
}

// JobRunEnded counts the end of a job's run, in status (store.RunDone,
// …): a status of "error" is a failure too.
func (c *Collector) JobRunEnded(job, status string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobRuns.add(1, job, status)
	if status == "error" {
		c.jobFailures.add(1, job)
	}
}

// Run counts the bus's events until ctx is done or Close is called. If the
// bus drops the subscription because Run fell behind, Run subscribes again
// and counts the drop (agentd_metrics_bus_drops_total): the events
// published in between are not counted. Call Run once.
func (c *Collector) Run(ctx context.Context) error {
	c.subMu.Lock()
	sub := c.sub
	c.sub = nil
	c.subMu.Unlock()
	if sub == nil {
		select {
		case <-ctx.Done():
		case <-c.done:
		}
		return nil
	}
	defer func() { sub.Close() }()
	for {
		select {
		case e, ok := <-sub.C:
			if ok {
				c.Observe(ctx, e)
				continue
			}
			reason := sub.Err()
			if reason == "" {
				return nil // closed by Close
			}
			c.mu.Lock()
			c.drops++
			c.mu.Unlock()
			c.log.Warn("metrics fell behind the event bus; events published meanwhile are not counted", "reason", reason)
			sub = c.bus.SubscribeLocal(0, c.o.Buffer)
		case <-ctx.Done():
			return nil
		case <-c.done:
			return nil
		}
	}
}

// Close ends Run and the subscription.
func (c *Collector) Close() {
	c.closed.Do(func() {
		close(c.done)
		c.subMu.Lock()
		if c.sub != nil {
			c.sub.Close()
			c.sub = nil
		}
		c.subMu.Unlock()
	})
}

// Observe counts one event. Run calls it for each event the bus
// publishes; events of other kinds than turn_end, tool_result, lifecycle
// (a phase tool's call) and model_call are ignored.
func (c *Collector) Observe(ctx context.Context, e event.Event) {
	switch e.Kind {
	case event.TurnEnd:
		var d event.TurnEndData
		if e.Decode(&d) != nil {
			return
		}
		a := c.agent(ctx, e.Session)
		c.mu.Lock()
		c.turns.add(1, a, d.Status)
		if d.Status == event.StatusError {
			c.errs.add(1, "turn")
		}
		c.mu.Unlock()
	case event.ToolResult:
		var d event.ToolResultData
		if e.Decode(&d) != nil {
			return
		}
		c.tool(ctx, e.Session, d.Name, d.IsError, d.Interrupted, float64(d.DurationMS))
	case event.Lifecycle:
		var d event.LifecycleData
		if e.Decode(&d) != nil || d.Tool == "" || len(d.Start) > 0 {
			return // not a call: an approval, or the mark before calls
		}
		c.tool(ctx, e.Session, d.Tool, d.IsError, d.Interrupted, d.DurationMS)
	case event.ModelCall:
		var d event.ModelCallData
		if e.Decode(&d) != nil {
			return
		}
		a := c.agent(ctx, e.Session)
		c.mu.Lock()
		c.modelTime.observe(d.LatencyMS/1000, d.Provider, d.Model)
		if d.InputTokens > 0 {
			c.tokens.add(float64(d.InputTokens), a, d.Model, "input")
		}
		if d.OutputTokens > 0 {
			c.tokens.add(float64(d.OutputTokens), a, d.Model, "output")
		}
		if d.CostUSD > 0 {
			c.cost.add(d.CostUSD, a, d.Model)
		}
		if d.Error != "" {
			kind := d.ErrorKind
			if kind == "" {
				kind = "other"
			}
			c.errs.add(1, kind)
		}
		c.mu.Unlock()
	}
}

func (c *Collector) tool(ctx context.Context, session int64, name string, isErr, interrupted bool, ms float64) {
	outcome := "ok"
	switch {
	case interrupted:
		outcome = "interrupted"
	case isErr:
		outcome = "error"
	}
	a := c.agent(ctx, session)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.toolCalls.add(1, a, name, outcome)
	if !interrupted {
		c.toolTime.observe(ms/1000, name)
	}
	if outcome == "error" {
		c.errs.add(1, "tool")
	}
}

// agent returns the agent of a session, from the cache or the store.
func (c *Collector) agent(ctx context.Context, session int64) string {
	c.mu.Lock()
	a, ok := c.agents[session]
	c.mu.Unlock()
	if ok {
		return a
	}
	if c.o.Sessions == nil {
		return unknownAgent
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	s, err := c.o.Sessions.SessionByID(ctx, session)
	if err != nil {
		c.log.Debug("metrics: find a session's agent", "session", session, "err", err)
		return unknownAgent
	}
	c.mu.Lock()
	if len(c.agents) >= maxAgentCache {
		c.agents = map[int64]string{}
	}
	c.agents[session] = s.Agent
	c.mu.Unlock()
	return s.Agent
}

// scrapeTimeout bounds the reads a scrape makes (queue depth, sessions).
const scrapeTimeout = 5 * time.Second

// WriteMetrics writes every metric in the text exposition format, in a fixed
// order: the counted ones, then those read now.
func (c *Collector) WriteMetrics(ctx context.Context, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	var depth int64
	haveDepth := false
	if c.o.Queue != nil {
		var err error
		if depth, err = c.o.Queue.QueueDepth(ctx); err != nil {
			c.log.Warn("metrics: read the queue depth", "err", err)
		} else {
			haveDepth = true
		}
	}
	states := c.sessionStates(ctx)

	bw := bufio.NewWriter(w)
	c.mu.Lock()
	for _, f := range c.families {
		writeFamily(bw, f)
	}
	drops := c.drops
	c.mu.Unlock()
	writeHeader(bw, "agentd_metrics_bus_drops_total", typeCounter, "Times the event bus dropped the metrics subscription for falling behind; events published meanwhile were not counted.")
	writeSample(bw, "agentd_metrics_bus_drops_total", nil, nil, "", drops)
	if haveDepth {
		writeHeader(bw, "agentd_queue_depth", typeGauge, "Inbox items waiting for their turn or running, over every session.")
		writeSample(bw, "agentd_queue_depth", nil, nil, "", float64(depth))
	}
	if states != nil {
		f := newFamily("agentd_sessions", typeGauge, "Sessions, by state.", c.o.MaxSeries, nil, "state")
		for st, n := range states {
			f.add(float64(n), st)
		}
		writeFamily(bw, f)
	}
	if c.o.Degraded != nil {
		if parts := c.o.Degraded(); len(parts) > 0 {
			f := newFamily("agentd_degraded", typeGauge, "1 for each optional part of agentd that is off (GET /readyz says why).", c.o.MaxSeries, nil, "part")
			for _, p := range parts {
				f.add(1, p)
			}
			writeFamily(bw, f)
		}
	}
	c.writeConnectors(bw)
	writeHeader(bw, "agentd_info", typeGauge, "Always 1; the version label is agentd's version.")
	writeSample(bw, "agentd_info", []string{"version"}, []string{labelValue(c.o.Version)}, "", 1)
	if c.o.SQLiteMemory != nil {
		if n := c.o.SQLiteMemory(); n > 0 {
			writeHeader(bw, "agentd_sqlite_memory_bytes", typeGauge, "Bytes SQLite holds outside the Go heap (page caches, schemas, statements), when it counts them.")
			writeSample(bw, "agentd_sqlite_memory_bytes", nil, nil, "", float64(n))
		}
	}
	writeProcess(bw, c.o.Start)
	return bw.Flush()
}

// sessionStates counts sessions by state, or returns the count made less
// than StatesEvery ago; nil if they cannot be counted.
func (c *Collector) sessionStates(ctx context.Context) map[string]int64 {
	if c.o.States == nil {
		return nil
	}
	c.statesMu.Lock()
	defer c.statesMu.Unlock()
	if c.states != nil && time.Since(c.statesAt) < c.o.StatesEvery {
		return c.states
	}
	states, err := c.o.States.SessionStates(ctx)
	if err != nil {
		c.log.Warn("metrics: count sessions", "err", err)
		return nil
	}
	c.states, c.statesAt = states, time.Now()
	return states
}
