package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentd/approval"
	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/permit"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// Permits answers tool calls that need a person's permission.
type Permits interface {
	Wait(ctx context.Context, req permit.Request) (permit.Decision, error)
}

// Recaller finds the long-term memories relevant to a message: each as
// one line of text. degraded, when not empty, says why recall was partial
// (for example lexical only, the embedder being unreachable).
type Recaller interface {
	Recall(ctx context.Context, agentID, query string, k int, shared bool) (items []string, degraded string, err error)
}

// Signer signs with an agent's identity key (creating it on first use).
// The engine names the agent whose key signs for a turn's agent
// (agent.Definition.KeyOwnerID): a dynamic agent signs with its
// template's key and has no key of its own.
type Signer interface {
	// SignMessage signs a message alone, as every message lifecycle
	// starts (approval.SignMessage). It returns the agent's public key and
	// the signature's fingerprint: the signature itself is never shown.
	SignMessage(agentID string, m approval.Message) (pubkey, fingerprint string, err error)
	// ApproveCall signs, at signedAt, the approval of a message for one
	// call of a tool server (approval.Sign) and returns its wire object,
	// which only that server receives.
	ApproveCall(agentID string, m approval.Message, signedAt time.Time, audience, tool string, args json.RawMessage) (json.RawMessage, error)
	// SignPayload signs a hook payload for the internal "sign" tool (see
	// approval.SignHook); it returns the signature and the public key,
	// both base58.
	SignPayload(agentID, payload string) (signature, pubkey string, err error)
}

// ApprovalView is the approval of a message as agentd shows it (in the
// lifecycle object, the arguments of lifecycle tools and the event log):
// what the agent signed, and a fingerprint of the signature. It never
// holds a signature: whoever held one could present it to a tool server.
// Tool servers get approvals bound to each call, in the call's _meta.
type ApprovalView struct {
	DaemonPubkey string `json:"daemonPubkey"`
	Message      string `json:"message"`
	CreatedAt    string `json:"createdAt"` // RFC 3339, UTC, milliseconds: the time signed
	MessageID    string `json:"messageId"`
	ChannelID    string `json:"channelId"`
	Fingerprint  string `json:"fingerprint"` // approval.Fingerprint of the message's signature
}

// ServerTools resolves what hooks and toolArgs name a server by.
type ServerTools interface {
	// ServerName returns the name of the server ref names: its name, or
	// the URL it is configured with.
	ServerName(ref string) (string, bool)
	// ServerURL returns the URL of an HTTP server ("" for stdio).
	ServerURL(name string) string
}

// LifecycleOptions are the options of a message (the Daemon message
// lifecycle); an input without them runs every phase.
type LifecycleOptions struct {
	// ChannelID is the "room" of the message; default the session address.
	ChannelID string `json:"channelId,omitempty"`
	// Context, Actions and PostProcess switch the phases (default true).
	Context     *bool `json:"context,omitempty"`
	Actions     *bool `json:"actions,omitempty"`
	PostProcess *bool `json:"postProcess,omitempty"`
	// ToolArgs are extra arguments per tool, keyed "<server>-<tool>" (the
	// server's name or URL and the server's own tool name).
	ToolArgs map[string]json.RawMessage `json:"toolArgs,omitempty"`
	// Budgets tighten the agent's budgets for this input's turn (a
	// command's or a job's budget): each limit set here applies where it
	// is lower than the agent's or the agent has none. They never loosen
	// the agent's; max_usd_per_day stays the agent's.
	Budgets *agent.Budgets `json:"budgets,omitempty"`
	// ContextRef is the context instance the message runs in (a context
	// type and its args); nil: none.
	ContextRef *ContextRef `json:"contextRef,omitempty"`
}

// Tighter returns b with each limit of t that is stricter put in its
// place (a zero limit is none, but for MaxSteps, whose zero is the
// default, agent.DefaultMaxSteps).
func Tighter(b agent.Budgets, t *agent.Budgets) agent.Budgets {
	if t == nil {
		return b
	}
	lower := func(cur, lim float64) bool { return lim > 0 && (cur <= 0 || lim < cur) }
	steps := b.MaxSteps
	if steps <= 0 {
		steps = agent.DefaultMaxSteps
	}
	if lower(float64(steps), float64(t.MaxSteps)) {
		b.MaxSteps = t.MaxSteps
	}
	if lower(float64(b.MaxOutputTokens), float64(t.MaxOutputTokens)) {
		b.MaxOutputTokens = t.MaxOutputTokens
	}
	if lower(b.MaxUSDPerTurn, t.MaxUSDPerTurn) {
		b.MaxUSDPerTurn = t.MaxUSDPerTurn
	}
	if lower(float64(b.MaxWallTime), float64(t.MaxWallTime)) {
		b.MaxWallTime = t.MaxWallTime
	}
	return b
}

// ParseLifecycleOptions decodes and checks options given with a message.
func ParseLifecycleOptions(raw json.RawMessage) (*LifecycleOptions, error) {
	var o LifecycleOptions
	if len(raw) == 0 || string(raw) == "null" {
		return &o, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return nil, fmt.Errorf("lifecycle options: %w", err)
	}
	for k, v := range o.ToolArgs {
		var m map[string]any
		if json.Unmarshal(v, &m) != nil || m == nil {
			return nil, fmt.Errorf("lifecycle options: toolArgs[%q] must be a JSON object", k)
		}
	}
	if b := o.Budgets; b != nil && (b.MaxSteps < 0 || b.MaxOutputTokens < 0 || b.MaxUSDPerTurn < 0 || b.MaxUSDPerDay != 0 || b.MaxWallTime < 0) {
		return nil, fmt.Errorf("lifecycle options: budgets: limits may not be negative, and max_usd_per_day is the agent's")
	}
	return &o, nil
}

func on(b *bool) bool { return b == nil || *b }

// lifecycle is a turn's message-lifecycle state.
type lifecycle struct {
	opts      LifecycleOptions
	channel   string
	messageID string
	after     bool // action or post-process tools run after the answer

	mu       sync.Mutex
	view     *ApprovalView // the signed message, once signed (see signed); nil without a signer
	signed   bool          // view was made
	logged   bool          // the approval event is in the log
	context  []string
	tools    []json.RawMessage
	actions  []event.LifecycleData
	recalled []string // long-term memories recalled for this message
}

type priorPermit struct {
	req      event.ApprovalRequestData
	resolved *event.ApprovalResolvedData
}

func phaseKey(phase, name string) string { return phase + "\x00" + name }

func (r *run) initLifecycle() {
	o, err := ParseLifecycleOptions(r.t.Item.Options)
	if err != nil {
		// Checked when the message was accepted; a bad record runs with
		// the defaults rather than not at all.
		r.e.o.Logger.Warn("lifecycle options ignored", "turn", r.t.ID, "err", err)
		o = &LifecycleOptions{}
	}
	r.lc.opts = *o
	if o.Budgets != nil {
		d := *r.def
		d.Budgets = Tighter(d.Budgets, o.Budgets)
		r.def = &d
	}
	r.lc.channel = o.ChannelID
	if r.lc.channel == "" {
		r.lc.channel = r.t.Session.Address()
	}
	r.lc.messageID = strconv.FormatInt(r.t.ID, 10)
	r.lc.after = on(o.Actions) && len(r.phaseTools(tool.KindAction)) > 0 ||
		on(o.PostProcess) && len(r.phaseTools(tool.KindPostprocess)) > 0
	r.prior = map[string]event.LifecycleData{}
	r.permits = map[string]*priorPermit{}
}

// signedView returns the turn's signed message, signing it on first use:
// only a turn that calls a tool server or a lifecycle tool shows it, and
// signing costs more than the rest of a short turn's own work. The
// signature is the same whenever it is made (ed25519 is deterministic and
// the message is the input's), after a restart too. The caller holds
// lc.mu.
func (r *run) signedView() *ApprovalView {
	if !r.lc.signed {
		r.lc.signed = true
		r.lc.view = signView(r.e.o.Signer, r.def.KeyOwnerID(), r.message(), r.e.o.Logger)
	}
	return r.lc.view
}

// message is what this turn's approvals are about.
func (r *run) message() approval.Message {
	return approval.Message{Text: r.t.Item.Text, CreatedAt: r.t.Item.CreatedAt, ID: r.lc.messageID, ChannelID: r.lc.channel}
}

// signView signs m with the agent's key and returns how it is shown; nil
// without a signer or when signing fails (logged).
func signView(s Signer, agentID string, m approval.Message, log *slog.Logger) *ApprovalView {
	if s == nil {
		return nil
	}
	pub, fp, err := s.SignMessage(agentID, m)
	if err != nil {
		log.Error("sign message", "agent", agentID, "err", err)
		return nil
	}
	return &ApprovalView{DaemonPubkey: pub, Message: m.Text, CreatedAt: m.CreatedAt.UTC().Format(createdAtLayout),
		MessageID: m.ID, ChannelID: m.ChannelID, Fingerprint: fp}
}

// createdAtLayout is RFC 3339 with milliseconds, as approvals write it.
const createdAtLayout = "2006-01-02T15:04:05.000Z07:00"

// notePrior records a lifecycle or approval event of a resumed turn.
func (r *run) notePrior(ev *event.Event) {
	switch ev.Kind {
	case event.Lifecycle:
		var d event.LifecycleData
		if ev.Decode(&d) != nil {
			return
		}
		switch {
		case d.Phase == event.PhaseApproval:
			r.lc.logged = true
		case len(d.Start) > 0:
			for _, name := range d.Start {
				if _, done := r.prior[phaseKey(d.Phase, name)]; !done {
					r.prior[phaseKey(d.Phase, name)] = event.LifecycleData{Phase: d.Phase, Start: []string{name}}
				}
			}
		default:
			r.prior[phaseKey(d.Phase, d.Tool)] = d
		}
	case event.ApprovalRequested:
		var d event.ApprovalRequestData
		if ev.Decode(&d) == nil {
			r.permits[d.CallID] = &priorPermit{req: d}
		}
	case event.ApprovalResolved:
		var d event.ApprovalResolvedData
		if ev.Decode(&d) == nil {
			if p := r.permits[d.CallID]; p != nil {
				p.resolved = &d
			}
		}
	}
}

// sees reports whether the agent may see a tool: its own servers' tools,
// the node-wide servers it uses, and the built-in tools it is offered
// (tools.builtin) — each only if the tool serves it (Spec.Serves), and a
// skill's server's only in a session that loaded the skill.
func (r *run) sees(s *tool.Spec) bool {
	switch {
	case s.Serves != nil && !s.Serves(r.def.ID), !r.seesSkill(s):
		return false
	case s.Scope != nil:
		return slices.Contains(s.Scope, r.def.ID)
	case r.inContext(s.Name):
		return true // an action of the turn's context instance
	case s.Server == "" && s.OptIn && r.def.Tools.Builtin == nil:
		return false // see agent.Definition.OffersSpec
	case s.Server == "":
		return r.e.builtins.offers(r.def, s.Name)
	}
	return r.def.UsesServer(s.Server)
}

func (r *run) unknownTool(name string) string {
	specs := r.toolSpecs()
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return fmt.Sprintf("unknown tool %q; no tools are available", name)
	}
	return fmt.Sprintf("unknown tool %q; available tools: %s", name, strings.Join(names, ", "))
}

// phaseTools returns the tools of a lifecycle kind the agent sees and its
// policy allows, sorted by name.
func (r *run) phaseTools(kind string) []tool.Spec {
	var out []tool.Spec
	for _, s := range r.offer() {
		if s.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

// system is the native protocol's system prompt of this step: the
// instructions, then the turn's state (the context instance, working
// memory; working.go).
func (r *run) system() string {
	in := r.instructions()
	if in == "" {
		return strings.TrimLeft(r.state.native, "\n")
	}
	return in + r.state.native
}

// instructions are the turn's instructions to the model: the agent's
// system prompt, what SystemExtra adds (the skills' descriptions), the
// long-term memories recalled and what the context tools returned. All
// but the agent's own prompt, which its operator wrote, come from users,
// tools or skill files: agentd's tags in them are neutralised.
func (r *run) instructions() string {
	var b strings.Builder
	b.WriteString(r.def.SystemPrompt)
	if r.e.o.SystemExtra != nil {
		if x := r.e.o.SystemExtra(r.def); x != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(Neutralise(x))
		}
	}
	r.lc.mu.Lock()
	defer r.lc.mu.Unlock()
	if len(r.lc.recalled) > 0 {
		b.WriteString("\n\n# Relevant long-term memories (use recall for more, forget to remove one)\n")
		for _, m := range r.lc.recalled {
			b.WriteString("\n- ")
			b.WriteString(Neutralise(m))
		}
		b.WriteString("\n")
	}
	if len(r.lc.context) > 0 {
		b.WriteString("\n\n# Context for this message\n")
		for _, c := range r.lc.context {
			b.WriteString("\n")
			b.WriteString(Neutralise(c))
			b.WriteString("\n")
		}
	}
	if len(r.lc.tools) > 0 {
		b.WriteString("\n\n# Tools the connected servers offer for this message\n")
		for _, t := range r.lc.tools {
			b.WriteString("\n- ")
			b.WriteString(Neutralise(string(t)))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// approver returns what signs this turn's approvals for calls to tool
// servers (nil without a signer), logging first, once, the approval event:
// that the turn signed its message, with its fingerprint.
func (r *run) approver() tool.Approver {
	if r.e.o.Signer == nil {
		return nil
	}
	r.lc.mu.Lock()
	defer r.lc.mu.Unlock()
	if v := r.signedView(); !r.lc.logged && v != nil {
		r.lc.logged = true
		view, _ := json.Marshal(v)
		ev := event.New(r.session, r.t.ID, event.Lifecycle, event.LifecycleData{Phase: event.PhaseApproval, Approval: view})
		// Signing again after a crash gives the same signature: it may wait.
		if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}}, true); err != nil {
			r.e.o.Logger.Error("log approval", "agent", r.def.ID, "err", err)
		}
	}
	return callApprover{r}
}

// callApprover signs a turn's message for one call at a time, as the call
// is made: a tool server judges the approval's freshness by that time, not
// by when the message came in, which may be long before (a person granted
// the call late, or the message waited in the queue).
type callApprover struct{ r *run }

func (a callApprover) Approve(audience, tool string, args json.RawMessage) (json.RawMessage, error) {
	return a.r.e.o.Signer.ApproveCall(a.r.def.KeyOwnerID(), a.r.message(), a.r.e.o.Now(), audience, tool, args)
}

// permitAnswer is how a call's approval ended.
type permitAnswer struct {
	granted bool
	denial  string // for the model, when not granted
}

// askPermit makes a call the policy marks "ask" wait for a person. t is
// the tool called, nil when unknown (a hook's target). Before asking, the
// tool previews the call for the card (an error is the call's result);
// a standing grant that matches allows it without asking, and the log
// still says why it ran. ok is false when the turn was cancelled while
// waiting.
func (r *run) askPermit(ctx context.Context, c *pendingCall, t tool.Tool, reason string) (permitAnswer, bool) {
	p := r.permits[c.ID]
	if p != nil && p.resolved != nil {
		return answer(p.resolved), true
	}
	var req event.ApprovalRequestData
	if p != nil {
		req = p.req // asked before a restart: wait again, same id, card and expiry
	} else {
		card, err := r.preview(ctx, t, c)
		if err != nil {
			if ctx.Err() != nil {
				return permitAnswer{}, false
			}
			return permitAnswer{denial: err.Error()}, true
		}
		timeout := r.def.Tools.ApprovalTimeout.D()
		if timeout <= 0 {
			timeout = agent.DefaultApprovalTimeout
		}
		req = event.ApprovalRequestData{ID: newApprovalID(), CallID: c.ID, Tool: c.Name, Args: c.Args, Reason: reason,
			ExpiresAt: time.Now().Add(timeout).UTC(), Card: card}
	}
	var asked []event.Event
	if p == nil {
		asked = append(asked, event.New(r.session, r.t.ID, event.ApprovalRequested, req))
	}
	g, err := r.grantFor(ctx, c.Name, cardExact(req.Card))
	if err != nil {
		r.e.o.Logger.Warn("read grants", "agent", r.def.ID, "err", err)
	}
	if g != nil {
		res := event.ApprovalResolvedData{ID: req.ID, CallID: c.ID, Tool: c.Name, Granted: true, By: "grant", Grant: g.ID}
		evs := append(asked, event.New(r.session, r.t.ID, event.ApprovalResolved, res))
		if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: evs}, false); err != nil {
			return permitAnswer{denial: "the approval could not be recorded: " + err.Error()}, true
		}
		return answer(&res), true
	}
	if r.e.o.Permits == nil {
		return permitAnswer{denial: fmt.Sprintf("tool %s needs a person's approval, and nobody can give it here; the call was not made", c.Name)}, true
	}
	if len(asked) > 0 {
		if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: asked}, false); err != nil {
			return permitAnswer{denial: "the approval request could not be recorded: " + err.Error()}, true
		}
	}
	d, err := r.e.o.Permits.Wait(ctx, permit.Request{ID: req.ID, Agent: r.def.ID, Session: r.t.Session.Address(),
		Turn: r.t.ID, CallID: c.ID, Tool: c.Name, Args: c.Args, Reason: req.Reason, CreatedAt: time.Now().UTC(),
		ExpiresAt: req.ExpiresAt, Card: req.Card})
	if err != nil {
		if ctx.Err() != nil {
			return permitAnswer{}, false
		}
		return permitAnswer{denial: fmt.Sprintf("the call to %s could not wait for approval: %v", c.Name, err)}, true
	}
	// The grant is durable before the call runs; a crash before the
	// answer is logged leaves a grant that allows the call on resuming.
	scope, grant := r.keepGrant(r.wctx, &req, &d)
	res := event.ApprovalResolvedData{ID: req.ID, CallID: c.ID, Tool: c.Name, Granted: d.Granted && !d.Expired,
		Expired: d.Expired, Reason: d.Reason, By: d.By, Scope: scope, Grant: grant}
	ev := event.New(r.session, r.t.ID, event.ApprovalResolved, res)
	if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}}, false); err != nil {
		return permitAnswer{denial: "the approval could not be recorded: " + err.Error()}, true
	}
	return answer(&res), true
}

func answer(d *event.ApprovalResolvedData) permitAnswer {
	switch {
	case d.Granted:
		return permitAnswer{granted: true}
	case d.Expired:
		return permitAnswer{denial: fmt.Sprintf("nobody approved the call to %s in time; it was not made", d.Tool)}
	case d.Reason != "":
		return permitAnswer{denial: fmt.Sprintf("a person denied the call to %s: %s", d.Tool, d.Reason)}
	}
	return permitAnswer{denial: fmt.Sprintf("a person denied the call to %s", d.Tool)}
}

func newApprovalID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lifecycleArgs are the arguments a phase tool gets: the lifecycle object
// so far, then the caller's toolArgs for that tool, filtered to what the
// tool's schema accepts when it accepts no others.
func (r *run) lifecycleArgs(phase string, s *tool.Spec) json.RawMessage {
	r.lc.mu.Lock()
	m := map[string]any{
		"message":        r.t.Item.Text,
		"messageId":      r.lc.messageID,
		"createdAt":      r.t.Item.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		"channelId":      r.lc.channel,
		"daemonName":     r.def.Name,
		"identityPrompt": r.def.SystemPrompt,
	}
	if v := r.signedView(); v != nil {
		m["daemonPubkey"] = v.DaemonPubkey
		m["approval"] = *v
	}
	if phase != event.PhaseContext {
		m["output"] = r.reply
		m["context"] = slices.Clone(r.lc.context)
	}
	if phase == event.PhasePostprocess {
		log := make([]LogEntry, len(r.lc.actions))
		for i, a := range r.lc.actions {
			log[i] = LogEntry{Tool: a.Tool, Output: a.Output, IsError: a.IsError, Interrupted: a.Interrupted, DurationMS: a.DurationMS}
		}
		m["actionsLog"] = log
	}
	r.lc.mu.Unlock()
	// The caller's toolArgs add to the lifecycle fields, never replace
	// them (a tool must be able to trust message, approval, output ...).
	for k, v := range r.toolArgs(s) {
		if _, core := m[k]; !core && !lifecycleField[k] {
			m[k] = v
		}
	}
	if props, closed := schemaProperties(s.InputSchema); closed {
		for k := range m {
			if !props[k] {
				delete(m, k)
			}
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// lifecycleField names the arguments the lifecycle itself sets.
var lifecycleField = map[string]bool{"message": true, "messageId": true, "createdAt": true, "channelId": true,
	"daemonName": true, "identityPrompt": true, "daemonPubkey": true, "approval": true, "output": true,
	"context": true, "actionsLog": true}

// toolArgs returns the caller's extra arguments for s: keyed
// "<server>-<tool>" with the server's own tool name, or by the full name.
func (r *run) toolArgs(s *tool.Spec) map[string]any {
	if len(r.lc.opts.ToolArgs) == 0 {
		return nil
	}
	keys := []string{s.Name}
	if s.Server != "" {
		own := strings.TrimPrefix(s.Name, s.Server+"__")
		keys = append(keys, s.Server+"-"+own)
		if r.e.o.Servers != nil {
			if url := r.e.o.Servers.ServerURL(s.Server); url != "" {
				keys = append(keys, url+"-"+own)
			}
		}
	}
	for _, k := range keys {
		if raw, ok := r.lc.opts.ToolArgs[k]; ok {
			var m map[string]any
			if json.Unmarshal(raw, &m) == nil {
				return m
			}
		}
	}
	return nil
}

// schemaProperties returns the property names a schema declares and
// whether it refuses any others.
func schemaProperties(raw json.RawMessage) (map[string]bool, bool) {
	var s struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	if string(s.AdditionalProperties) != "false" {
		return nil, false
	}
	props := make(map[string]bool, len(s.Properties))
	for k := range s.Properties {
		props[k] = true
	}
	return props, true
}

// contextPhase calls every context tool in parallel and adds what they
// return to this turn's system prompt.
func (r *run) contextPhase(ctx context.Context) error {
	if !on(r.lc.opts.Context) {
		return nil
	}
	// Long-term memory is recalled while the context tools run; without
	// any, on this goroutine.
	var wg sync.WaitGroup
	var recalled []string
	var degraded string
	specs := r.phaseTools(tool.KindContext)
	if rc := r.e.o.Recall; rc != nil && r.def.Memory.Recall > 0 {
		recall := func() {
			items, deg, err := rc.Recall(ctx, r.def.ScopeID(), r.t.Item.Text, r.def.Memory.Recall, r.def.Memory.Shared)
			if err != nil {
				deg = "recall failed: " + err.Error()
			}
			recalled, degraded = items, deg
		}
		if len(specs) > 0 {
			wg.Go(recall)
		} else {
			recall()
		}
	}
	var results []event.LifecycleData
	var err error
	if len(specs) > 0 {
		results, err = r.phase(ctx, event.PhaseContext, specs)
	}
	wg.Wait()
	if err != nil {
		return err
	}
	if degraded != "" {
		ev := event.New(r.session, r.t.ID, event.Marker, event.MarkerData{Name: "recall_degraded", Reason: degraded})
		if werr := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}}, true); werr != nil {
			return fmt.Errorf("engine: log recall: %w: %w", errStore, werr)
		}
	}
	r.lc.mu.Lock()
	defer r.lc.mu.Unlock()
	r.lc.recalled = recalled
	for _, d := range results {
		r.lc.context = append(r.lc.context, d.Context...)
		r.lc.tools = append(r.lc.tools, d.Tools...)
	}
	return nil
}

// afterPhases runs the action tools, the hooks they ask for, then the
// post-process tools.
func (r *run) afterPhases(ctx context.Context) error {
	if on(r.lc.opts.Actions) {
		if specs := r.phaseTools(tool.KindAction); len(specs) > 0 {
			results, err := r.phase(ctx, event.PhaseAction, specs)
			if err != nil {
				return err
			}
			r.lc.mu.Lock()
			r.lc.actions = results
			r.lc.mu.Unlock()
			if err := r.hooks(ctx, specs, results); err != nil {
				return err
			}
		}
	}
	if on(r.lc.opts.PostProcess) {
		if specs := r.phaseTools(tool.KindPostprocess); len(specs) > 0 {
			if _, err := r.phase(ctx, event.PhasePostprocess, specs); err != nil {
				return err
			}
		}
	}
	return nil
}

// job is one call of a lifecycle phase.
type job struct {
	name       string
	rerunnable bool // running it again after a crash is harmless
	run        func(ctx context.Context) event.LifecycleData
}

// phase calls the tools of one phase in parallel, logging each result.
func (r *run) phase(ctx context.Context, phase string, specs []tool.Spec) ([]event.LifecycleData, error) {
	jobs := make([]job, len(specs))
	for i := range specs {
		s := &specs[i]
		jobs[i] = job{name: s.Name, rerunnable: s.ReadOnly || s.Idempotent || phase == event.PhaseContext,
			run: func(ctx context.Context) event.LifecycleData { return r.callPhaseTool(ctx, phase, s) }}
		if d := r.policy.Decide(*s); d.Verdict == tool.Ask {
			// Phases do not wait for a person: the call is skipped, and
			// the log says why.
			jobs[i] = job{name: s.Name, rerunnable: true, run: func(context.Context) event.LifecycleData {
				return event.LifecycleData{Phase: phase, Tool: s.Name, IsError: true,
					Output: d.Reason + "; lifecycle phases do not wait for approval, so it was skipped (allow it by name to run it)"}
			}}
		}
	}
	return r.runJobs(ctx, phase, jobs)
}

func (r *run) callPhaseTool(ctx context.Context, phase string, s *tool.Spec) event.LifecycleData {
	args := r.lifecycleArgs(phase, s)
	call := r.call(fmt.Sprintf("%d.%s.%s", r.t.ID, phase, s.Name), s.Name, args)
	if s.Server != "" {
		call.Approval = r.approver()
	}
	out := r.e.o.Tools.Run(ctx, call, &tool.RunOptions{Timeout: r.def.Tools.Timeout.D(), MaxOutputBytes: r.def.Tools.MaxOutputBytes})
	d := event.LifecycleData{Phase: phase, Tool: s.Name, Args: args, Output: out.Result.Output, IsError: out.Result.IsError,
		DurationMS: ms(out.Duration)}
	if d.IsError {
		return d
	}
	var parsed struct {
		Context []string          `json:"context"`
		Tools   []json.RawMessage `json:"tools"`
		Hooks   []json.RawMessage `json:"hooks"`
	}
	isObject := json.Unmarshal([]byte(d.Output), &parsed) == nil && strings.HasPrefix(strings.TrimSpace(d.Output), "{")
	switch phase {
	case event.PhaseContext:
		if isObject && (parsed.Context != nil || parsed.Tools != nil) {
			d.Context, d.Tools = parsed.Context, parsed.Tools
		} else if t := strings.TrimSpace(d.Output); t != "" {
			d.Context = []string{t}
		}
	case event.PhaseAction:
		if isObject {
			d.Hooks = parsed.Hooks
		}
	}
	return d
}

// runJobs runs a phase's jobs in parallel. A job already logged by a run
// of this turn before a restart is not run again; one that had started
// and is not harmless to repeat gets an "interrupted" result. Before jobs
// that are not harmless to repeat start, the phase logs their names.
func (r *run) runJobs(ctx context.Context, phase string, jobs []job) ([]event.LifecycleData, error) {
	results := make([]event.LifecycleData, len(jobs))
	var todo []int
	var start []string
	for i, j := range jobs {
		p, seen := r.prior[phaseKey(phase, j.name)]
		switch {
		case seen && len(p.Start) == 0:
			results[i] = p
		case seen && !j.rerunnable:
			results[i] = event.LifecycleData{Phase: phase, Tool: j.name, Output: InterruptedOutput, IsError: true, Interrupted: true}
			ev := event.New(r.session, r.t.ID, event.Lifecycle, results[i])
			if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}}, false); err != nil {
				return nil, fmt.Errorf("engine: log %s: %w: %w", phase, errStore, err)
			}
		default:
			todo = append(todo, i)
			if !j.rerunnable {
				start = append(start, j.name)
			}
		}
	}
	if len(start) > 0 {
		ev := event.New(r.session, r.t.ID, event.Lifecycle, event.LifecycleData{Phase: phase, Start: start})
		if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}}, false); err != nil {
			return nil, fmt.Errorf("engine: log %s: %w: %w", phase, errStore, err)
		}
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for _, i := range todo {
		wg.Go(func() {
			j := jobs[i]
			r.live(event.ToolStart, event.ToolCallData{ID: phase + ":" + j.name, Name: j.name})
			d := j.run(ctx)
			if ctx.Err() != nil {
				errs[i] = context.Cause(ctx)
				return
			}
			r.live(event.ToolEnd, event.ToolResultData{ID: phase + ":" + j.name, Name: j.name, Output: d.Output, IsError: d.IsError, DurationMS: int64(d.DurationMS)})
			results[i] = d
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			// Keep what finished before the turn was cut off.
			var done []event.Event
			for i, e := range errs {
				if e == nil && slices.Contains(todo, i) {
					done = append(done, event.New(r.session, r.t.ID, event.Lifecycle, results[i]))
				}
			}
			if len(done) > 0 {
				if werr := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: done}, false); werr != nil {
					return nil, fmt.Errorf("engine: log %s: %w: %w", phase, errStore, werr)
				}
			}
			return nil, err
		}
	}
	// The results share one write, in tool order, made durable with the
	// turn's next synced write (the next phase's start, or the end). A
	// crash before that loses them harmlessly: the calls that must not run
	// twice were logged as started and resume as interrupted.
	var evs []event.Event
	for _, i := range todo {
		evs = append(evs, event.New(r.session, r.t.ID, event.Lifecycle, results[i]))
	}
	if len(evs) > 0 {
		if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: evs}, true); err != nil {
			return nil, fmt.Errorf("engine: log %s: %w: %w", phase, errStore, err)
		}
	}
	return results, nil
}

// Hook is what an action tool asks the agent to do after the action step:
// run an internal tool, then call a server's hook tool with the merged
// arguments.
type Hook struct {
	OriginServerURL string         `json:"originServerUrl,omitempty"`
	DaemonTool      string         `json:"daemonTool"`
	DaemonArgs      map[string]any `json:"daemonArgs,omitempty"`
	HookTool        struct {
		HookServerURL string         `json:"hookServerUrl,omitempty"`
		ToolName      string         `json:"toolName"`
		ToolArgs      map[string]any `json:"toolArgs,omitempty"`
	} `json:"hookTool"`
}

// hooks runs the hooks the action tools asked for, in order.
func (r *run) hooks(ctx context.Context, specs []tool.Spec, actions []event.LifecycleData) error {
	var jobs []job
	for i, a := range actions {
		for n, raw := range a.Hooks {
			origin := specs[i].Server
			name := fmt.Sprintf("%s#%d", a.Tool, n+1)
			jobs = append(jobs, job{name: name, run: func(ctx context.Context) event.LifecycleData {
				return r.runHook(ctx, name, origin, raw)
			}})
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	// Hooks run one after another, in the order they were asked for.
	for _, j := range jobs {
		if _, err := r.runJobs(ctx, event.PhaseHook, []job{j}); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) runHook(ctx context.Context, name, origin string, raw json.RawMessage) event.LifecycleData {
	d := event.LifecycleData{Phase: event.PhaseHook, Tool: name}
	fail := func(format string, args ...any) event.LifecycleData {
		d.Output, d.IsError = fmt.Sprintf(format, args...), true
		return d
	}
	var h Hook
	if err := json.Unmarshal(raw, &h); err != nil {
		return fail("malformed hook: %v", err)
	}
	if h.DaemonTool != "sign" {
		return fail("unknown internal tool %q (the agent offers: sign)", h.DaemonTool)
	}
	if h.HookTool.ToolName == "" {
		return fail("hook has no hookTool.toolName")
	}
	// The hook tool is a tool of a server this agent uses, called like
	// any other: visibility, policy, schema, deadline and output cap.
	server := origin
	for _, ref := range []string{h.HookTool.HookServerURL, h.OriginServerURL} {
		if ref == "" {
			continue
		}
		n, ok := "", false
		if r.e.o.Servers != nil {
			n, ok = r.e.o.Servers.ServerName(ref)
		}
		if !ok {
			return fail("hook names the server %q, which this agent does not know", ref)
		}
		server = n
		break
	}
	target := server + "__" + h.HookTool.ToolName
	d.Target = target
	t, found := r.e.o.Tools.Get(target)
	var spec tool.Spec
	if found {
		spec = t.Spec()
		found = r.sees(&spec) && spec.Server == server
	}
	if !found {
		return fail("hook tool %s is not a tool of a server this agent uses", target)
	}
	if r.e.o.Signer == nil {
		return fail("this agent cannot sign")
	}
	payload, ok := h.DaemonArgs["payload"].(string)
	if !ok {
		b, err := json.Marshal(h.DaemonArgs["payload"])
		if err != nil || h.DaemonArgs["payload"] == nil {
			return fail("sign needs daemonArgs.payload")
		}
		payload = string(b)
	}
	sig, pub, err := r.e.o.Signer.SignPayload(r.def.KeyOwnerID(), payload)
	if err != nil {
		return fail("sign: %v", err)
	}
	args := map[string]any{}
	maps.Copy(args, h.HookTool.ToolArgs)
	args["payload"], args["daemonPubkey"] = payload, pub
	// The log and a person asked to approve see the signature's
	// fingerprint; only the hook tool gets the signature.
	args["signatureFingerprint"] = approval.Fingerprint(sig)
	d.Args, _ = json.Marshal(args)
	delete(args, "signatureFingerprint")
	args["signature"] = sig
	b, _ := json.Marshal(args)
	switch v := r.policy.Decide(spec); v.Verdict {
	case tool.Deny:
		return fail("%s", v.Reason)
	case tool.Ask:
		a, ok := r.askPermit(ctx, &pendingCall{ToolCallData: event.ToolCallData{ID: "hook." + name, Name: target, Args: d.Args}}, nil, v.Reason)
		if !ok {
			return fail("cancelled while waiting for approval")
		}
		if !a.granted {
			return fail("%s", a.denial)
		}
	}
	call := r.call(fmt.Sprintf("%d.hook.%s", r.t.ID, name), target, b)
	call.Approval = r.approver()
	out := r.e.o.Tools.Run(ctx, call, &tool.RunOptions{Timeout: r.def.Tools.Timeout.D(), MaxOutputBytes: r.def.Tools.MaxOutputBytes})
	d.DurationMS = ms(out.Duration)
	d.Output, d.IsError = out.Result.Output, out.Result.IsError
	return d
}

// Object is the lifecycle object of one message, with the Daemon's field
// names.
type Object struct {
	DaemonPubkey string    `json:"daemonPubkey"`
	DaemonName   string    `json:"daemonName"`
	MessageID    string    `json:"messageId"`
	Message      string    `json:"message"`
	CreatedAt    time.Time `json:"createdAt"`
	// Approval is the agent's signed approval of the message: what it
	// signed and the signature's fingerprint, never the signature. Tool
	// servers get approvals bound to each of their calls in the call's
	// _meta["agentd/approval"].
	Approval       *ApprovalView     `json:"approval"`
	ChannelID      string            `json:"channelId"`
	IdentityPrompt string            `json:"identityPrompt"`
	Context        []string          `json:"context"`
	Output         string            `json:"output"`
	Tools          []json.RawMessage `json:"tools"`
	Hooks          []json.RawMessage `json:"hooks"`
	HooksLog       []LogEntry        `json:"hooksLog"`
	ActionsLog     []LogEntry        `json:"actionsLog"`
	PostProcessLog []LogEntry        `json:"postProcessLog"`
	// Status is how the turn ended (done, budget, error, ...), Reason why.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// LogEntry is one call of a lifecycle phase.
type LogEntry struct {
	Tool        string          `json:"tool"`
	Target      string          `json:"target,omitempty"` // a hook's tool
	Args        json.RawMessage `json:"args,omitempty"`
	Output      string          `json:"output"`
	IsError     bool            `json:"isError,omitempty"`
	Interrupted bool            `json:"interrupted,omitempty"`
	DurationMS  float64         `json:"durationMs"`
}

// BuildObject assembles the lifecycle object of a turn from its events.
// channel is the session address used when the message named no channel.
func BuildObject(d *agent.Definition, item store.InboxItem, evs []event.Event, channel string) *Object {
	o := &Object{DaemonName: d.Name, MessageID: strconv.FormatInt(item.ID, 10), Message: item.Text,
		CreatedAt: item.CreatedAt.UTC(), IdentityPrompt: d.SystemPrompt, ChannelID: channel,
		Context: []string{}, Tools: []json.RawMessage{}, Hooks: []json.RawMessage{},
		HooksLog: []LogEntry{}, ActionsLog: []LogEntry{}, PostProcessLog: []LogEntry{}}
	if opts, err := ParseLifecycleOptions(item.Options); err == nil && opts.ChannelID != "" {
		o.ChannelID = opts.ChannelID
	}
	for i := range evs {
		ev := &evs[i]
		switch ev.Kind {
		case event.Lifecycle:
			var l event.LifecycleData
			if ev.Decode(&l) != nil || len(l.Start) > 0 {
				continue
			}
			e := LogEntry{Tool: l.Tool, Target: l.Target, Args: l.Args, Output: l.Output, IsError: l.IsError,
				Interrupted: l.Interrupted, DurationMS: l.DurationMS}
			switch l.Phase {
			case event.PhaseApproval:
				var v ApprovalView
				if json.Unmarshal(l.Approval, &v) == nil {
					o.Approval, o.DaemonPubkey = &v, v.DaemonPubkey
				}
			case event.PhaseContext:
				o.Context = append(o.Context, l.Context...)
				o.Tools = append(o.Tools, l.Tools...)
			case event.PhaseAction:
				o.ActionsLog = append(o.ActionsLog, e)
				o.Hooks = append(o.Hooks, l.Hooks...)
			case event.PhaseHook:
				o.HooksLog = append(o.HooksLog, e)
			case event.PhasePostprocess:
				o.PostProcessLog = append(o.PostProcessLog, e)
			}
		case event.Text:
			var t event.TextData
			if ev.Decode(&t) == nil {
				o.Output = t.Text
			}
		case event.TurnEnd:
			var t event.TurnEndData
			if ev.Decode(&t) == nil {
				o.Status, o.Reason = t.Status, t.Reason
				if t.Reply != "" {
					o.Output = t.Reply
				}
			}
		}
	}
	return o
}

// Object is BuildObject with the approval of a turn that logged none (it
// called no tool server) filled in: the agent signs the message again,
// which gives the signature the turn made (ed25519 signatures are
// deterministic), to show its key and fingerprint.
func (e *Engine) Object(d *agent.Definition, item store.InboxItem, evs []event.Event, channel string) *Object {
	o := BuildObject(d, item, evs, channel)
	if o.Approval == nil {
		m := approval.Message{Text: item.Text, CreatedAt: item.CreatedAt, ID: o.MessageID, ChannelID: o.ChannelID}
		if v := signView(e.o.Signer, d.KeyOwnerID(), m, e.o.Logger); v != nil {
			o.Approval, o.DaemonPubkey = v, v.DaemonPubkey
		}
	}
	return o
}
