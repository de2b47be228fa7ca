// Package engine runs one turn of an agent: it derives the model context
// from the session's log, streams the model, runs the tools it asks for
// (in parallel, each with a deadline and an output cap, under the agent's
// policy), loops until the model answers without tool calls or a budget
// stops it, and appends every step to the log as it happens.
//
// The log is the turn's (Turn.Log): the runtime that runs a turn gives it
// one that commits to the store and then publishes on the bus, so the
// engine holds no reference back to its caller and a turn's data flows one
// way: gateway → runtime → engine → (model, tools) → log → store → bus.
//
// A turn can resume from its own events after a restart: a tool call that
// was logged but has no result is re-run only if the tool is read-only or
// idempotent; otherwise it gets an "interrupted" result and the turn goes on.
//
// A turn's writes go through its writer (writer.go), which hands them to
// the log in order and lets those whose loss in a crash is harmless share
// a sync with the next.
//
// Lock order, within a turn: lifecycle.mu, then writer.mu, then whatever
// the turn's Log takes (the runtime's Runtime.mu and session.mu, the
// store's own). The lifecycle's lock is held while the approval event is
// written; the writer's while a batch is handed to the log and while
// earlier writes are waited for, so a Log must never call back into the
// turn. tokens.Calibrator's lock, the engine's offerCache's and
// builtinCache's and a turn's offerMemo's are leaves. No lock is held while a model
// or a tool runs.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/jsonstr"
	"agentd/internal/model"
	"agentd/internal/store"
	"agentd/internal/tokens"
	"agentd/internal/tool"
)

// Causes a turn's context can be cancelled with (context.WithCancelCause).
var (
	ErrCancelled   = errors.New("turn cancelled")
	ErrInterrupted = errors.New("turn interrupted by a newer message")
	// ErrShutdown leaves the turn unfinished in the log, to resume at the
	// next start.
	ErrShutdown = errors.New("agentd is shutting down")
)

var errWallTime = errors.New("wall time budget reached")

// ResumedMarker names the marker a turn logs when it resumes after a
// restart.
const ResumedMarker = "resumed"

// InterruptedOutput is the result recorded for a non-idempotent tool call
// that was running when agentd stopped.
const InterruptedOutput = "agentd restarted before this call finished; it may or may not have taken effect"

// Log is where a turn's writes go (Turn.Log). The runtime gives each turn
// it runs its own, which commits each batch to the store and then
// publishes its events: durable before visible.
type Log interface {
	// Commit takes b now, in order behind every batch taken before, and
	// returns a function that waits until b is durable and published. A
	// log may do all of that before it returns. The engine waits later
	// where durability can wait — a step whose tool calls are all safe to
	// run again, the results of such calls — so that syncing to disk
	// overlaps with the model and the tools instead of adding to the turn.
	Commit(ctx context.Context, b *store.Batch) (wait func() error)
}

// Live publishes events that are not stored (text deltas).
type Live interface {
	Publish(evs ...event.Event)
}

// Models resolves a model configuration to a provider.
type Models interface {
	Provider(m agent.Model) (model.Provider, error)
}

// Tools is the tool registry as the engine uses it.
type Tools interface {
	Get(name string) (tool.Tool, bool)
	Visible(p tool.Policy) []tool.Spec
	Run(ctx context.Context, c *tool.Call, opts *tool.RunOptions) tool.Outcome
}

// Options configure an Engine. Models and Tools are required.
type Options struct {
	Live   Live // may be nil
	Models Models
	Tools  Tools
	Prices map[string]agent.Price
	Logger *slog.Logger
	// Permits, if set, asks a person about calls the policy marks "ask"
	// (their permission; the signed approvals calls carry to tool servers
	// are Signer's); without it such calls are refused.
	Permits Permits
	// Grants, if set, holds the standing permissions people gave with
	// their answers (for the session, always for an exact call); a call
	// one of them matches runs without asking. Nil: every call asks and
	// an answer's scope is taken as this call only.
	Grants Grants
	// Signer signs approvals and hook payloads with the agent's key; nil:
	// no approvals travel with calls and sign hooks fail.
	Signer Signer
	// Servers calls a tool server's tool by name, for hooks.
	Servers ServerTools
	// SystemExtra, if set, returns text appended to an agent's system
	// prompt (the skills it may load).
	SystemExtra func(d *agent.Definition) string
	// Skills, if set, connects the servers of the skills a session loaded
	// before each of its turns.
	Skills SkillServers
	// Calibrator corrects token estimates with reported usage; nil: the
	// engine keeps its own.
	Calibrator *tokens.Calibrator
	// Recall, if set, adds relevant long-term memories to each turn's
	// context (memory.recall of them).
	Recall Recaller
	// BaseBackoff is the first retry delay (default 500ms); it doubles per
	// attempt up to MaxBackoff (default 30s), with full jitter.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// Now is the clock a call's approval is signed by (its signedAt);
	// default time.Now.
	Now func() time.Time
	// Working, if set, returns a session's working memory (by session
	// id: store.HistoryStore.Working), shown to the model each step.
	Working func(ctx context.Context, session int64) (map[string]json.RawMessage, error)
	// Contexts, if set, prepares the context instance a message names
	// (LifecycleOptions.ContextRef); without it such a message fails.
	Contexts ContextSource
	// Outputs, if set, lists the output types each agent may produce
	// besides text.
	Outputs OutputTypes
}

// Engine runs turns. It is safe for concurrent use; each turn is independent.
type Engine struct {
	o        Options
	calib    *tokens.Calibrator
	bpe      *tokens.BPE
	offers   offerCache   // the tools offered to models, encoded and sized
	builtins builtinCache // which built-in tools each agent offers
	notools  noTools      // the models found unable to call tools (tool_protocol auto)
}

// New returns an engine.
func New(o *Options) *Engine {
	e := &Engine{o: *o, calib: o.Calibrator, bpe: new(tokens.BPE)}
	if e.calib == nil {
		e.calib = new(tokens.Calibrator)
	}
	if e.o.Logger == nil {
		e.o.Logger = slog.New(slog.DiscardHandler)
	}
	if e.o.BaseBackoff <= 0 {
		e.o.BaseBackoff = 500 * time.Millisecond
	}
	if e.o.MaxBackoff <= 0 {
		e.o.MaxBackoff = 30 * time.Second
	}
	if e.o.Now == nil {
		e.o.Now = time.Now
	}
	return e
}

// Turn is one turn to run.
type Turn struct {
	// Log is where the turn's writes go; required.
	Log     Log
	ID      int64         // the inbox item's id
	Session store.Session // the session it runs in
	Agent   *agent.Definition
	Item    store.InboxItem // the input
	// Context is the conversation before this turn, derived from the
	// session's events after the last reset marker (see Conversation). The
	// engine appends to a copy.
	Context []model.Message
	// Marks are Context's turn boundaries (Conversation.Marks), which
	// compaction folds along.
	Marks []Mark
	// Tokens, if not nil, are token estimates of Context's first messages
	// (Conversation.Tokens), so that only the rest is sized.
	Tokens []int
	// Prior holds this turn's events already in the log, when resuming
	// after a restart; nil for a new turn.
	Prior []event.Event
	// Recovered tells that the input was accepted before agentd last
	// started: a run before may have streamed text of this turn even when
	// Prior is empty.
	Recovered bool
	// Skills are the skills the session loaded before this turn, derived
	// from the same events as Context (Conversation.Skills).
	Skills []string
	// SpentToday is the payer's spending so far today (the agent's
	// without one), for the daily budget.
	SpentToday float64
	// Account, if not nil, is the spending this turn shares with the turn
	// that pays for it and that turn's other sub-agents: its limit bounds
	// them together. nil: the turn pays alone, bounded by its own
	// max_usd_per_turn.
	Account Account
	// Payer is the agent whose day budget pays for the turn: its usage
	// rows' payer. "": the session's agent.
	Payer string
	// Durable, if not nil, waits until the input is durable in the inbox.
	// The turn may start before, but writes nothing until then, so none of
	// its events can outlive an input that was never accepted.
	Durable func() error
}

// run is the state of one running turn.
type run struct {
	e       *Engine
	t       *Turn
	def     *agent.Definition
	policy  tool.Policy
	msgs    []model.Message
	start   time.Time
	steps   int
	inTok   int
	outTok  int
	cost    float64
	reply   string
	session int64
	ended   bool    // the turn_end is committed
	held    float64 // reserved on the turn's account for the call being made (account.go)

	skills    loadedSkills                   // the skills the session loaded
	lc        lifecycle                      // the message lifecycle's state
	generated bool                           // the model gave its final answer
	prior     map[string]event.LifecycleData // lifecycle results and starts already logged, by phaseKey
	permits   map[string]*priorPermit        // a person's permission already asked for, by call id

	marks     []Mark        // turn boundaries in msgs
	tok       []int         // token estimates of msgs[:len(tok)]
	lastRaw   int           // the uncalibrated estimate of the last request
	attempts  attemptLabels // numbers of the attempts at model steps
	warned    bool          // a context warning was logged this turn
	compacted bool          // compaction was tried this turn
	overflow  bool          // a context overflow was answered with a prune

	wctx context.Context // for writes that must happen even if the turn is cancelled
	w    *writer         // the turn's writes, in order

	offered offerMemo // the tools offered, while they stay the same (offer)

	// priorResults are the results logged before a restart, by step and
	// index in the step, for the template references of the calls that
	// resume (refs.go).
	priorResults map[[2]int]event.ToolResultData

	state      stepState    // the turn's state as this step shows it (working.go)
	ctxView    *ContextView // the context instance, if the message names one (contextrun.go)
	ctxFresh   bool         // ctxView was prepared for the coming step
	ctxActions []string     // the context instance's actions, offered besides the agent's tools

	problems string       // found in the last step's text (XML protocol), to tell the model (problemsReason)
	early    *earlyStarts // the last step's calls started while it streamed (XML protocol), for runTools

	outs []event.OutputRef // this run's output tool calls with results (outputs.go)
}

// rerunnable reports whether running call again after a crash is harmless:
// the tool is read-only or idempotent, or the call will not run at all
// (unknown tool, denied by policy).
func (r *run) rerunnable(name string) bool {
	t, ok := r.e.o.Tools.Get(name)
	if !ok {
		return true
	}
	spec := t.Spec()
	if spec.ReadOnly || spec.Idempotent {
		return true
	}
	return r.policy.Decide(spec).Verdict == tool.Deny
}

// Run runs a turn to its end and returns how it ended; its turn_end event
// is committed together with the completion of the inbox item, so an input
// is answered exactly once. It returns an error, leaving the turn unfinished
// in the log to be resumed, only when the log cannot be written or ctx was
// cancelled with ErrShutdown.
func (e *Engine) Run(ctx context.Context, t *Turn) (event.TurnEndData, error) {
	r, err := e.newRun(ctx, t)
	if err != nil {
		return event.TurnEndData{}, err
	}
	r.initSkills(ctx)
	r.initLifecycle()
	if w := r.def.Budgets.MaxWallTime.D(); w > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, w, errWallTime)
		defer cancel()
	}
	end, err := r.loop(ctx)
	if err == nil && !r.ended {
		err = r.contextHooks(ctx, &end)
	}
	if err == nil && !r.ended {
		// The end must be written even if the turn's context was cancelled.
		if err = r.w.write(r.wctx, r.endBatch(&end), false); err != nil {
			err = fmt.Errorf("engine: end turn: %w", err)
		}
	}
	if cerr := r.w.close(); cerr != nil && err == nil {
		err = fmt.Errorf("engine: %w: %w", errStore, cerr)
	}
	return end, err
}

var errNoLog = errors.New("engine: the turn has no log")

// newRun returns the state of t about to run (or compact) under ctx.
func (e *Engine) newRun(ctx context.Context, t *Turn) (*run, error) {
	if t.Log == nil {
		return nil, errNoLog
	}
	r := &run{e: e, t: t, def: t.Agent, start: time.Now(), session: t.Session.ID, wctx: context.WithoutCancel(ctx),
		w: newWriter(ctx, t.Log, t.Durable)}
	r.policy = tool.Policy{Allow: r.def.Tools.Allow, Deny: r.def.Tools.Deny, Ask: r.def.Tools.Ask, Grant: r.def.Tools.Grant}
	return r, nil
}

// endBatch completes end and returns a batch with the turn_end event, the
// inbox item's completion and the session's return to idle; extra events
// (the final step) go first, so that the answer and the end are durable
// together and an input is answered exactly once.
func (r *run) endBatch(end *event.TurnEndData, extra ...event.Event) *store.Batch {
	end.Steps, end.InputTokens, end.OutputTokens, end.CostUSD = r.steps, r.inTok, r.outTok, r.cost
	end.DurationMS = float64(time.Since(r.start).Microseconds()) / 1000
	if end.Reply == "" {
		end.Reply = r.reply
	}
	end.Outputs = r.outputsOf(end.Reply)
	r.ended = true
	evs := append(extra, event.New(r.session, r.t.ID, event.TurnEnd, *end))
	return &store.Batch{Session: r.session, Done: []int64{r.t.ID}, State: store.StateIdle, Events: evs}
}

func (r *run) loop(ctx context.Context) (event.TurnEndData, error) {
	pending, err := r.prepare(ctx)
	if err != nil {
		return event.TurnEndData{}, err
	}
	if err := r.prepareContext(ctx); err != nil {
		return r.stopped(ctx, err)
	}
	if err := r.contextPhase(ctx); err != nil {
		return r.stopped(ctx, err)
	}
	if len(pending) > 0 {
		if err := r.runTools(ctx, pending); err != nil {
			return r.stopped(ctx, err)
		}
	}
	for !r.generated {
		if end, stop := r.checkBudgets(); stop {
			return end, nil
		}
		if err := r.refreshState(ctx); err != nil {
			return r.stopped(ctx, err)
		}
		specs := r.toolSpecs()
		if err := r.fit(ctx, specs); err != nil {
			return r.stopped(ctx, err)
		}
		resp, err := r.callModel(ctx, specs)
		if bs, ok := errors.AsType[*budgetStop](err); ok {
			return bs.end, nil
		}
		if err != nil && errors.Is(err, model.ErrContextOverflow) && !r.overflow {
			// The provider counts differently: cut to half and retry once.
			r.overflow = true
			est, _ := r.estimate(specs)
			if perr := r.prune(ctx, specs, est/2); perr != nil {
				return r.stopped(ctx, perr)
			}
			continue
		}
		if err != nil {
			return r.stopped(ctx, err)
		}
		calls, end, err := r.commitStep(ctx, resp)
		if err != nil {
			resp.early.stop()
			return event.TurnEndData{}, err
		}
		r.early = resp.early
		if len(calls) == 0 {
			if r.ended {
				return end, nil
			}
			if r.tellProblems() {
				continue // what the model wrote was not understood: it tries again
			}
			r.generated = true
			break
		}
		if err := r.runTools(ctx, calls); err != nil {
			return r.stopped(ctx, err)
		}
		r.tellProblems()
	}
	if err := r.afterPhases(ctx); err != nil {
		return r.stopped(ctx, err)
	}
	return event.TurnEndData{Status: event.StatusDone}, nil
}

// prepare builds the conversation and, for a new turn, logs the input. For
// a resumed turn it returns the logged tool calls that have no result yet.
func (r *run) prepare(ctx context.Context) ([]pendingCall, error) {
	t := r.t
	if len(t.Prior) == 0 {
		// The input is already durable in the inbox; it is logged with the
		// turn's first write (within CoalesceDelay), which saves a sync. A
		// crash before that write leaves no trace of the turn, which then
		// starts afresh.
		d := event.InputData{Text: t.Item.Text, Source: t.Item.Source, Origin: t.Item.Origin, IdempotencyKey: t.Item.IdempotencyKey, Images: t.Item.Images, Hops: t.Item.Hops}
		in := event.New(r.session, t.ID, t.Item.Kind, d)
		b := &store.Batch{Session: r.session, State: store.StateActive, Events: []event.Event{in}}
		if t.Recovered {
			// The run before may have streamed its first attempt without
			// logging anything: this run is a resumed one (see
			// attemptLabels), durably so before it streams.
			b.Events = append(b.Events, r.resumedMarker())
		}
		if err := r.w.write(r.wctx, b, !t.Recovered); err != nil {
			return nil, err
		}
		// Room for the input and a few steps' messages, so that the
		// conversation is copied once.
		r.msgs = make([]model.Message, len(t.Context), len(t.Context)+8)
		copy(r.msgs, t.Context)
		r.msgs = append(r.msgs, InputMessage(t.Item.Kind, &d))
		r.marks = t.Marks
		if len(t.Tokens) <= len(t.Context) {
			r.tok = append([]int(nil), t.Tokens...)
		}
		return nil, nil
	}
	// Resuming: count what was spent and find calls without results.
	var calls []pendingCall
	done := map[string]event.ToolResultData{}
	stepCalls, haveStep := 0, false
	for i := range t.Prior {
		ev := &t.Prior[i]
		switch ev.Kind {
		case event.Lifecycle, event.ApprovalRequested, event.ApprovalResolved:
			r.notePrior(ev)
		case event.ModelCall:
			var d event.ModelCallData
			if ev.Decode(&d) == nil {
				r.inTok += d.InputTokens
				r.outTok += d.OutputTokens
				r.cost += d.CostUSD
				r.attempts.logged(d.Step, d.Attempt)
				// A call outside the conversation (a summary) is logged
				// with the step before it: not a step of its own.
				if d.Error == "" && d.Step > r.steps {
					r.steps++
					stepCalls, haveStep = 0, true
				}
			}
		case event.Marker:
			var d event.MarkerData
			if ev.Decode(&d) == nil && d.Name == ResumedMarker {
				r.attempts.resumes++
			}
			if d.Name == ProtocolMarker {
				stepCalls++ // a step the model must try again: not the last
			}
		case event.Text:
			var d event.TextData
			if ev.Decode(&d) == nil {
				r.reply = d.Text
			}
		case event.ToolCall:
			var d event.ToolCallData
			if ev.Decode(&d) == nil {
				calls = append(calls, pendingCall{ToolCallData: d, index: stepCalls})
				stepCalls++
			}
		case event.ToolResult:
			var d event.ToolResultData
			if ev.Decode(&d) == nil {
				done[d.ID] = d
			}
		}
	}
	var pending []pendingCall
	r.priorResults = map[[2]int]event.ToolResultData{}
	for _, c := range calls {
		res, ok := done[c.ID]
		if !ok {
			c.resumed = true
			pending = append(pending, c)
			continue
		}
		r.priorResults[[2]int{c.Step, c.index}] = res
	}
	r.generated = haveStep && stepCalls == 0
	if len(t.Prior) > 0 && t.Prior[0].Kind != t.Item.Kind {
		// The input itself was never logged (the crash came before it).
		return nil, fmt.Errorf("engine: resume turn %d: first event is %s, not the input", t.ID, t.Prior[0].Kind)
	}
	// The marker makes the attempts of this run unlike those of the runs
	// before (see attemptLabels); it is durable before any of them streams.
	if err := r.w.write(r.wctx, &store.Batch{Session: r.session, State: store.StateActive, Events: []event.Event{r.resumedMarker()}}, false); err != nil {
		return nil, fmt.Errorf("engine: log resume: %w: %w", errStore, err)
	}
	var c Conversation
	c.Seed(t.Context, t.Marks)
	c.Add(t.Prior...)
	// Messages gives unfinished calls a synthetic result; the pending calls
	// are about to get real ones.
	r.msgs = dropSynthetic(c.Messages(), pending)
	r.marks = c.Marks()
	return pending, nil
}

// resumedMarker counts this run as a resumed one and returns the marker
// that says so in the log.
func (r *run) resumedMarker() event.Event {
	r.attempts.resumes++
	return event.New(r.session, r.t.ID, event.Marker, event.MarkerData{Name: ResumedMarker,
		Reason: "agentd restarted during this turn; it goes on from its log"})
}

// dropSynthetic removes the synthetic results Messages added for calls that
// are about to run.
func dropSynthetic(msgs []model.Message, pending []pendingCall) []model.Message {
	if len(pending) == 0 {
		return msgs
	}
	ids := make(map[string]bool, len(pending))
	for _, p := range pending {
		ids[p.ID] = true
	}
	out := msgs[:0]
	for _, m := range msgs {
		if m.Role == model.RoleTool && ids[m.ToolCallID] {
			continue
		}
		out = append(out, m)
	}
	return out
}

// checkBudgets is called before each model call.
func (r *run) checkBudgets() (event.TurnEndData, bool) {
	b := r.def.Budgets
	stop := func(name, reason string) (event.TurnEndData, bool) {
		return event.TurnEndData{Status: event.StatusBudget, Budget: name, Reason: reason}, true
	}
	maxSteps := b.MaxSteps
	if maxSteps <= 0 {
		maxSteps = 25
	}
	switch {
	case r.steps >= maxSteps:
		return stop("max_steps", fmt.Sprintf("stopped: the turn used its %d model steps (budgets.max_steps)", maxSteps))
	case b.MaxOutputTokens > 0 && r.outTok >= b.MaxOutputTokens:
		return stop("max_output_tokens", fmt.Sprintf("stopped: the turn used %d of %d output tokens (budgets.max_output_tokens)", r.outTok, b.MaxOutputTokens))
	case b.MaxUSDPerTurn > 0 && r.cost >= b.MaxUSDPerTurn:
		return stop("max_usd_per_turn", fmt.Sprintf("stopped: the turn cost $%.4f of its $%.4f budget (budgets.max_usd_per_turn)", r.cost, b.MaxUSDPerTurn))
	case b.MaxUSDPerDay > 0 && r.t.SpentToday+r.cost >= b.MaxUSDPerDay:
		return stop("max_usd_per_day", fmt.Sprintf("stopped: %s spent $%.4f today of its $%.4f budget (budgets.max_usd_per_day)", r.dayPayer(), r.t.SpentToday+r.cost, b.MaxUSDPerDay))
	case b.MaxWallTime > 0 && time.Since(r.start) >= b.MaxWallTime.D():
		return stop("max_wall_time", fmt.Sprintf("stopped: the turn ran for its %s (budgets.max_wall_time)", b.MaxWallTime.D()))
	}
	if reason, spent := r.accountSpent(); spent {
		return stop("max_usd_per_turn", reason)
	}
	return event.TurnEndData{}, false
}

// stopped turns a failure inside the loop into the turn's end, or into an
// error that leaves the turn unfinished (shutdown, store failure).
func (r *run) stopped(ctx context.Context, err error) (event.TurnEndData, error) {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrShutdown) || errors.Is(err, ErrShutdown):
		return event.TurnEndData{}, ErrShutdown
	case errors.Is(err, errStore):
		return event.TurnEndData{}, err
	case errors.Is(cause, errWallTime):
		return event.TurnEndData{Status: event.StatusBudget, Budget: "max_wall_time",
			Reason: fmt.Sprintf("stopped: the turn ran for its %s (budgets.max_wall_time)", r.def.Budgets.MaxWallTime.D())}, nil
	case errors.Is(cause, ErrInterrupted):
		return event.TurnEndData{Status: event.StatusInterrupted, Reason: ErrInterrupted.Error()}, nil
	case ctx.Err() != nil:
		return event.TurnEndData{Status: event.StatusCancelled, Reason: ErrCancelled.Error()}, nil
	}
	ev := event.New(r.session, r.t.ID, event.Error, event.ErrorData{Kind: model.Kind(err), Message: err.Error()})
	if cerr := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}}, true); cerr != nil {
		return event.TurnEndData{}, fmt.Errorf("engine: log error: %w: %w", errStore, cerr)
	}
	return event.TurnEndData{Status: event.StatusError, Reason: err.Error()}, nil
}

var errStore = errors.New("log write failed")

// callModel calls the agent's model, retrying retryable failures with
// backoff and then trying each fallback in order. Every attempt is logged;
// a failed one durably before the next starts, so that no attempt's label
// is used twice (see attemptLabels). A call that could take the turn or the
// day past its USD budget is not made: the error is then a *budgetStop.
func (r *run) callModel(ctx context.Context, specs []model.ToolSpec) (resp *stepResponse, err error) {
	defer func() {
		if err != nil {
			r.release() // the reservation of a call that was not made, or failed
		}
	}()
	chain := append([]agent.Model{r.def.Model}, r.def.Model.Fallbacks...)
	step := r.steps + 1
	var last error
	for _, m := range chain {
		p, err := r.e.o.Models.Provider(m)
		if err != nil {
			last = err
			continue
		}
		req, xml, err := r.request(m, specs)
		if err != nil {
			return nil, err
		}
		tries := m.Retries
		if tries <= 0 {
			tries = 3
		}
		for try := 1; try <= tries; try++ {
			attempt := r.attempts.next(step)
			resp, x, lat, err := r.stream(ctx, p, m, req, xml, step, attempt)
			if err == nil {
				s := &stepResponse{Response: resp, model: m, latency: lat, attempt: attempt, step: step}
				if x != nil {
					s.problems, s.early = x.problems, x.early
				}
				return s, nil
			}
			last = err
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			mc := event.ModelCallData{Provider: m.Provider, Model: m.Name, Step: step, Attempt: attempt,
				LatencyMS: ms(lat), Error: err.Error(), ErrorKind: model.Kind(err)}
			ev := event.New(r.session, r.t.ID, event.ModelCall, mc)
			if cerr := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}}, false); cerr != nil {
				return nil, fmt.Errorf("engine: log model call: %w: %w", errStore, cerr)
			}
			if r.learnNoTools(&m, req, err) {
				// Not a failed attempt: the same step again at once, in
				// the XML protocol.
				if req, xml, err = r.request(m, specs); err != nil {
					return nil, err
				}
				try--
				continue
			}
			r.e.o.Logger.Warn("model call failed", "agent", r.def.ID, "provider", m.Provider, "model", m.Name, "attempt", attempt, "err", err)
			if !model.Retryable(err) || try == tries {
				break
			}
			if err := sleep(ctx, r.e.backoff(try, model.RetryAfter(err))); err != nil {
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("every model failed; last: %w", last)
}

// attemptLabels numbers the attempts at each model step, so that a client
// can tell the live text of a new attempt from that of one that failed or
// was cut off: the numbers go on across retries, fallbacks and a retry
// after a context overflow, and a turn resumed after a restart starts past
// every number its runs before may have used. Those are at most one past
// the highest attempt logged for the step (each failed attempt is logged
// durably before the next starts; the last, cut off, is not logged) or, if
// none is logged, one past where the run before started. Each run logs a
// "resumed" marker durably before it calls a model, so starting at the
// highest logged attempt plus the number of such markers is always past
// them.
type attemptLabels struct {
	resumes int         // "resumed" markers of this turn, this run's included
	max     map[int]int // the highest attempt logged, by step
	step    int         // the step of last
	last    int         // the last attempt number given out
}

// logged notes an attempt logged before a restart.
func (a *attemptLabels) logged(step, attempt int) {
	if a.max == nil {
		a.max = map[int]int{}
	}
	a.max[step] = max(a.max[step], attempt)
}

// next returns the number of the next attempt at step.
func (a *attemptLabels) next(step int) int {
	if step != a.step {
		a.step, a.last = step, a.max[step]+a.resumes
	}
	a.last++
	return a.last
}

type stepResponse struct {
	*model.Response
	model   agent.Model
	latency time.Duration
	attempt int
	step    int
	// problems are what was wrong in what the model wrote in the XML
	// protocol; early are its calls that started as they closed.
	problems []string
	early    *earlyStarts
}

// xmlAttempt is what an attempt in the XML protocol found besides the
// response.
type xmlAttempt struct {
	problems []string
	early    *earlyStarts
}

// stream makes one attempt at a step and publishes its text as it
// streams; in the XML protocol (xml) it parses the text, publishes only
// thoughts and text outputs, and returns the step in the native
// protocol's terms with the problems found.
func (r *run) stream(ctx context.Context, p model.Provider, m agent.Model, req *model.Request, xml bool, step, attempt int) (*model.Response, *xmlAttempt, time.Duration, error) {
	turnCtx := ctx // the calls started early outlive the attempt
	if d := m.Timeout.D(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	publish := func(model.Delta) {}
	if live := r.e.o.Live; live != nil {
		publish = func(d model.Delta) {
			live.Publish(event.Event{Session: r.session, Turn: r.t.ID, Kind: event.TextDelta, Time: time.Now(),
				Data: deltaJSON(d, step, attempt)})
		}
	}
	onDelta := publish
	var x *xmlStream
	var early *earlyStarts
	if xml {
		x = newXMLStream()
		early, x.onCall = r.newEarlyStarts(turnCtx, step)
		onDelta = func(d model.Delta) { x.delta(d, publish) }
	} else if r.e.o.Live == nil {
		onDelta = nil
	}
	start := time.Now()
	resp, err := p.Stream(ctx, req, onDelta)
	lat := time.Since(start)
	if x == nil {
		return resp, nil, lat, err
	}
	if err != nil {
		early.stop() // the attempt failed: the next one starts its calls anew
		return resp, nil, lat, err
	}
	resp, problems := x.finish(resp, publish)
	return resp, &xmlAttempt{problems: problems, early: early}, lat, nil
}

func deltaJSON(d model.Delta, step, attempt int) json.RawMessage {
	b := make([]byte, 0, len(d.Text)+48)
	b = append(b, `{"text":`...)
	b = jsonstr.Append(b, d.Text)
	if d.Reasoning {
		b = append(b, `,"reasoning":true`...)
	}
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(step), 10)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(attempt), 10)
	return append(b, '}')
}

// request builds the request of a model step to m, its output bounded by
// the output token and USD budgets, and reports whether it is in the XML
// protocol (its response is read in the same); a *budgetStop error says
// that the call could not fit the USD budgets at all.
func (r *run) request(m agent.Model, specs []model.ToolSpec) (*model.Request, bool, error) {
	req := &model.Request{
		Model:       m.Name,
		System:      r.system(),
		Messages:    r.msgs,
		Tools:       specs,
		MaxTokens:   m.Params.MaxTokens,
		Temperature: m.Params.Temperature,
		TopP:        m.Params.TopP,
		Stop:        m.Params.Stop,
		Extra:       m.Params.Extra,
	}
	xml := r.xml(&m)
	if xml {
		r.xmlRequest(req, specs)
	}
	wireOptions(m, req)
	if b := r.def.Budgets.MaxOutputTokens; b > 0 {
		boundOutput(req, max(b-r.outTok, 1))
	}
	n, err := r.usdBound(m)
	if err != nil {
		return nil, false, err
	}
	if n > 0 {
		boundOutput(req, n)
	}
	if err := r.reserve(m, req); err != nil {
		return nil, false, err
	}
	return req, xml, nil
}

// wireOptions sets how req travels to m's server: streamed or whole, and
// how long a response may stall.
func wireOptions(m agent.Model, req *model.Request) {
	req.NoStream = !m.Streams()
	req.IdleTimeout = m.IdleTimeout.D()
}

func (r *run) toolSpecs() []model.ToolSpec {
	vis := r.offer()
	specs := make([]model.ToolSpec, 0, len(vis))
	for i := range vis {
		if s := &vis[i]; s.Kind == "" || s.Kind == tool.KindModel {
			specs = append(specs, r.e.offers.spec(r.outputSpec(s)))
		}
	}
	return specs
}

func (e *Engine) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, 2*e.o.MaxBackoff)
	}
	d := float64(e.o.BaseBackoff) * math.Pow(2, float64(attempt-1))
	d = min(d, float64(e.o.MaxBackoff))
	// Full jitter between half and the whole delay.
	return time.Duration(d/2 + rand.Float64()*d/2)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

type pendingCall struct {
	event.ToolCallData
	index   int // its place among its step's calls, which template references count by
	resumed bool
}

// commitStep logs a model step — its model_call, reasoning, text and tool
// calls — in one batch, before any tool runs.
//
// A step without tool calls is the turn's last: its batch also carries the
// turn's end.
func (r *run) commitStep(ctx context.Context, s *stepResponse) ([]pendingCall, event.TurnEndData, error) {
	r.steps++
	u := s.Usage
	r.e.calib.Observe(s.model.Name, r.lastRaw, u.InputTokens)
	r.inTok += u.InputTokens
	r.outTok += u.OutputTokens
	cost := r.price(s.model.Name, u)
	r.cost += cost
	evs := make([]event.Event, 0, 3+len(s.ToolCalls))
	evs = append(evs, event.New(r.session, r.t.ID, event.ModelCall, event.ModelCallData{
		Provider: s.model.Provider, Model: s.model.Name, Step: s.step, Attempt: s.attempt,
		LatencyMS: ms(s.latency), InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CostUSD: cost, StopReason: s.StopReason}))
	if s.Reasoning != "" {
		evs = append(evs, event.New(r.session, r.t.ID, event.Thought, event.TextData{Text: s.Reasoning, Step: s.step}))
	}
	if s.Text != "" {
		evs = append(evs, event.New(r.session, r.t.ID, event.Text, event.TextData{Text: s.Text, Step: s.step}))
		r.reply = s.Text
	}
	calls := make([]pendingCall, 0, len(s.ToolCalls))
	for i, c := range s.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d_%d", r.t.ID, s.step, i)
		}
		args := c.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		d := event.ToolCallData{ID: id, Name: c.Name, Args: args, Step: s.step}
		if !json.Valid(args) {
			// Keep what the model sent, as a string, so the log stays valid
			// JSON; the call fails validation and the model is told why.
			q, _ := json.Marshal(string(args))
			d.Args = q
		}
		calls = append(calls, pendingCall{ToolCallData: d, index: i})
		evs = append(evs, event.New(r.session, r.t.ID, event.ToolCall, d))
	}
	var problems string
	if len(s.problems) > 0 {
		problems = problemsReason(s.problems)
		evs = append(evs, event.New(r.session, r.t.ID, event.Marker, event.MarkerData{Name: ProtocolMarker, Reason: problems}))
	}
	r.settle(cost)
	usage := []store.Usage{{Session: r.session, Agent: r.def.ID, Model: s.model.Name, InputTokens: u.InputTokens,
		OutputTokens: u.OutputTokens, CostUSD: cost, Time: time.Now().UTC(), Payer: r.t.Payer, Account: r.accountKey()}}
	b := &store.Batch{Session: r.session, Events: evs, Usage: usage}
	var end event.TurnEndData
	// A tool call must be durable before its tool runs, unless running it
	// again after a crash is harmless.
	async := len(calls) > 0 || r.lc.after // the answer before the phases: the next phase's start (or the end) syncs it
	for _, c := range calls {
		async = async && r.rerunnable(c.Name)
	}
	if len(calls) == 0 && problems == "" && !r.lc.after {
		end.Status = event.StatusDone
		b = r.endBatch(&end, evs...)
		b.Usage = usage
	}
	if err := r.w.write(r.wctx, b, async); err != nil {
		r.ended = false
		return nil, end, fmt.Errorf("engine: log step: %w: %w", errStore, err)
	}
	am := model.Message{Role: model.RoleAssistant, Content: Neutralise(s.Text), Wire: new(model.Encoded)}
	for _, c := range calls {
		am.ToolCalls = append(am.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
	}
	r.msgs = append(r.msgs, am)
	r.problems = problems
	return calls, end, nil
}

// tellProblems adds the problems of the last step to the conversation,
// after its results, for the model to read in the next step (the
// conversation builder does the same from the step's protocol markers).
// It reports whether there were any.
func (r *run) tellProblems() bool {
	if r.problems == "" {
		return false
	}
	r.msgs = append(r.msgs, ProblemsMessage(r.problems))
	r.problems = ""
	return true
}

// live publishes a live-only event: progress shown at once, whatever the
// log's write timing.
func (r *run) live(kind event.Kind, payload any) {
	if r.e.o.Live != nil {
		r.e.o.Live.Publish(event.New(r.session, r.t.ID, kind, payload))
	}
}

func (r *run) price(name string, u model.Usage) float64 {
	p, ok := r.e.o.Prices[name]
	if !ok {
		return 0
	}
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output) / 1e6
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// runTools runs calls in parallel (a single one on the turn's goroutine)
// and logs each result as it finishes.
func (r *run) runTools(ctx context.Context, calls []pendingCall) error {
	early := r.early
	r.early = nil
	defer early.stop()
	results := make([]event.ToolResultData, len(calls))
	errs := make([]error, len(calls))
	refs := newStepRefs(r, calls)
	var wg sync.WaitGroup
	for i := range calls {
		one := func() {
			res, ok, adopted := early.adopt(i, &calls[i])
			if !adopted {
				if ok = refs.wait(ctx, i); ok {
					res, ok = r.runOne(ctx, refs, i)
				}
			}
			refs.finish(i, res, ok)
			if !ok {
				errs[i] = context.Cause(ctx)
				return
			}
			results[i] = res
			ev := event.New(r.session, r.t.ID, event.ToolResult, res)
			// The result of a call that must not run twice is made durable at
			// once; others may be lost in a crash and the call re-run.
			b := &store.Batch{Session: r.session, Events: []event.Event{ev}}
			if err := r.w.write(r.wctx, b, r.rerunnable(res.Name) && !res.Interrupted); err != nil {
				errs[i] = fmt.Errorf("engine: log tool result: %w: %w", errStore, err)
			}
		}
		if len(calls) == 1 {
			one() // nothing to run beside it: no goroutine to start
			break
		}
		wg.Go(one)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	r.noteSkills(calls, results)
	r.noteOutputs(calls, results)
	for i := range results {
		r.msgs = append(r.msgs, ToolMessage(&results[i]))
	}
	return nil
}

// MaxCallsPerStep bounds the calls of one model step that run: a model
// that writes more (a runaway one, or one a prompt injection steers)
// gets an error result for each call past it, and may make them again in
// its next step.
const MaxCallsPerStep = 64

// tooManyCalls is the result of a call past MaxCallsPerStep.
var tooManyCalls = fmt.Sprintf("not run: one step runs at most %d calls; make this call again in the next step", MaxCallsPerStep)

// runOne runs one call; ok is false when the turn was cancelled while it ran
// (the result is then not logged: a shutdown leaves the call to recovery).
func (r *run) runOne(ctx context.Context, refs *stepRefs, i int) (res event.ToolResultData, ok bool) {
	c := &refs.calls[i]
	res = event.ToolResultData{ID: c.ID, Name: c.Name}
	if c.index >= MaxCallsPerStep {
		res.Output, res.IsError = tooManyCalls, true
		return res, true
	}
	r.live(event.ToolStart, c.ToolCallData)
	defer func() {
		if ok {
			r.live(event.ToolEnd, res)
		}
	}()
	t, found := r.e.o.Tools.Get(c.Name)
	var spec tool.Spec
	if found {
		spec = t.Spec()
		// The model may call the tools it is offered: model-kind tools
		// this agent sees.
		found = r.sees(&spec) && (spec.Kind == "" || spec.Kind == tool.KindModel)
	}
	if c.resumed {
		// A call logged before a restart may have run, unless it was
		// waiting for an approval that never came: then it runs now.
		p := r.permits[c.ID]
		if p != nil && (p.resolved == nil || !p.resolved.Granted) {
			c.resumed = false
		} else if !found || !spec.ReadOnly && !spec.Idempotent {
			res.Output, res.IsError, res.Interrupted = InterruptedOutput, true, true
			return res, true
		}
	}
	if !found {
		res.Output, res.IsError = r.unknownTool(c.Name), true
		return res, true
	}
	// References resolve before the policy, the approval card and the
	// registry's schema see the arguments.
	args, changed, err := refs.resolve(i)
	if err != nil {
		res.Output, res.IsError = err.Error()+"; the tool was not called", true
		return res, true
	}
	if changed {
		c.Args, res.ResolvedArgs = args, args
	}
	d := r.policy.Decide(spec)
	if d.Verdict == tool.Deny {
		res.Output, res.IsError = d.Reason, true
		return res, true
	}
	if d.Verdict == tool.Ask && !inert(t, d, c.Args) {
		a, ok := r.askPermit(ctx, c, t, d.Reason)
		if !ok {
			return res, false
		}
		if !a.granted {
			res.Output, res.IsError = a.denial, true
			return res, true
		}
	}
	opts := &tool.RunOptions{Timeout: r.def.Tools.Timeout.D(), MaxOutputBytes: r.def.Tools.MaxOutputBytes}
	call := r.call(fmt.Sprintf("%d.%s", r.t.ID, c.ID), c.Name, c.Args)
	call.Skills = r.skills.list()
	if spec.Server != "" {
		call.Approval = r.approver()
	}
	out := r.e.o.Tools.Run(ctx, call, opts)
	if ctx.Err() != nil {
		return res, false
	}
	res.Output, res.IsError, res.Truncated = out.Result.Output, out.Result.IsError, out.Truncated
	res.Images = ImageRefs(out.Result.Images)
	res.DurationMS = out.Duration.Milliseconds()
	return res, true
}

// call returns the call of tool name with args that this turn makes: the
// calling agent and session, the turn, the hops of the input it serves
// (a message the tool sends another agent carries one more) and the
// memory scope the agent reads and writes.
func (r *run) call(id, name string, args json.RawMessage) *tool.Call {
	return &tool.Call{ID: id, Name: name, Args: args, Agent: r.def.ID, Session: r.t.Session.Address(),
		Turn: r.t.ID, Hops: r.t.Item.Hops, Scope: r.def.ScopeID()}
}
