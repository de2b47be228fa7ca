package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
	"agentd/internal/tokens"
	"agentd/internal/tool"
	"agentd/internal/xmlproto"
)

// Keeping the context inside the model's window.
//
// Before every model call the engine estimates the request (calibrated by
// the usage providers report) against the agent's context window:
//
//   - past memory.warn_at it logs a context_warning, once per turn;
//   - past memory.compact_at, in summarize mode, it folds the turns older
//     than memory.recent_turns into a summary the model writes, after a
//     silent memory flush, and logs it as a summary event (the session is
//     "compacting" meanwhile); identifiers of the folded part that the
//     summary left out are appended to it;
//   - if the request still does not fit, it drops the oldest turns
//     (an emergency prune, logged as a summary marked pruned);
//   - in retrieve mode it sends only the last memory.recent_turns turns.
//
// A provider's context-overflow error prunes to half and retries once.
// Nothing is deleted from the log: the summary stands in for the folded
// events when the context is rebuilt (FromSummary).

// summaryPrompt instructs the model that writes a summary.
const summaryPrompt = `You are compacting a conversation so that it fits the model's context window. Write a faithful, dense summary of the transcript below, for the assistant who will continue the conversation: who asked for what, what was decided and why, facts and numbers, every identifier exactly as written (ids, file paths, URLs, names, versions), tool results that still matter, open tasks and the state the conversation was left in. Do not invent anything. Write plain text, no preamble.`

// flushPrompt asks the model to store what matters before compaction.
const flushPrompt = `The older part of this conversation (the transcript below) is about to leave your context. If anything in it is worth keeping for later — facts about the user, decisions, identifiers, open tasks — store it now with the remember tool. Call the tool as often as needed, then reply DONE. If nothing is worth keeping, reply DONE.`

// FlushLead starts the memory flush's message, before the transcript.
const FlushLead = "The part of the conversation about to leave your context:\n\n"

// estimate returns the calibrated size of the next request and the raw
// estimate the calibration starts from.
func (r *run) estimate(specs []model.ToolSpec) (calibrated, raw int) {
	if len(r.tok) > len(r.msgs) {
		r.tok = r.tok[:0]
	}
	for i := len(r.tok); i < len(r.msgs); i++ {
		r.tok = append(r.tok, tokens.Message(&r.msgs[i]))
	}
	for _, n := range r.tok {
		raw += n
	}
	if r.xml(&r.def.Model) {
		// The XML prompt holds the actions' specs; the calls and
		// results written as text are about the size of their native
		// encodings, which r.tok counts.
		raw += tokens.Text(r.xmlSystem(specs))
		return r.e.calib.Scale(r.def.Model.Name, raw), raw
	}
	raw += tokens.Text(r.system())
	for i := range specs {
		raw += r.e.offers.tokens(&specs[i])
	}
	return r.e.calib.Scale(r.def.Model.Name, raw), raw
}

// replaceMsgs swaps the conversation (after compaction or pruning).
func (r *run) replaceMsgs(msgs []model.Message, marks []Mark) {
	r.msgs, r.marks, r.tok = msgs, marks, r.tok[:0]
}

// fit keeps the next request inside the window before a model call.
func (r *run) fit(ctx context.Context, specs []model.ToolSpec) error {
	mem := r.def.Memory
	window := mem.ContextWindow
	if window <= 0 {
		window = agent.DefaultContextWindow
	}
	if mem.Compaction == agent.CompactRetrieve {
		r.keepRecent(max(mem.RecentTurns, 1))
	}
	est, raw := r.estimate(specs)
	r.lastRaw = raw
	if _, known := r.e.calib.Ratio(r.def.Model.Name); !known {
		// Before the provider has reported any usage, a model whose
		// vocabulary agentd embeds is counted exactly once, which
		// calibrates the estimate from the first request on.
		if count := r.e.bpe.Counter(r.def.Model.Provider, r.def.Model.Name); count != nil {
			req := &model.Request{System: r.system(), Messages: r.msgs, Tools: specs}
			if r.xml(&r.def.Model) {
				r.xmlRequest(req, specs)
			}
			exact := tokens.CountRequest(req, count)
			r.e.calib.Observe(r.def.Model.Name, raw, exact)
			est = r.e.calib.Scale(r.def.Model.Name, raw)
		}
	}
	if est < int(float64(window)*min(mem.WarnAt, mem.CompactAt)) && est <= window {
		return nil
	}
	if !r.warned && mem.WarnAt > 0 && est >= int(float64(window)*mem.WarnAt) {
		r.warned = true
		action := "warn"
		if mem.Compaction != agent.CompactRetrieve && est >= int(float64(window)*mem.CompactAt) {
			action = "compact"
		}
		ev := event.New(r.session, r.t.ID, event.ContextWarning, event.ContextData{Tokens: est, Window: window, Threshold: mem.WarnAt, Action: action})
		if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}}, true); err != nil {
			return fmt.Errorf("engine: log context warning: %w: %w", errStore, err)
		}
	}
	if mem.Compaction != agent.CompactRetrieve && !r.compacted && mem.CompactAt > 0 && est >= int(float64(window)*mem.CompactAt) {
		r.compacted = true // once per turn, whatever the outcome
		if err := r.compact(ctx, "", max(mem.RecentTurns, 1)); err != nil {
			if errors.Is(err, errStore) || ctx.Err() != nil {
				return err
			}
			r.e.o.Logger.Warn("compaction failed; pruning instead", "agent", r.def.ID, "session", r.t.Session.Address(), "err", err)
		}
		est, r.lastRaw = r.estimate(specs)
	}
	if est > window {
		err := r.prune(ctx, specs, window*4/5)
		_, r.lastRaw = r.estimate(specs)
		return err
	}
	return nil
}

// keepRecent drops all but the last n turns before this one from the
// request (retrieve mode); nothing is logged, the log is unchanged.
func (r *run) keepRecent(n int) {
	if len(r.marks) <= n {
		return
	}
	m := r.marks[len(r.marks)-n-1]
	marks := make([]Mark, 0, n)
	for _, k := range r.marks[len(r.marks)-n:] {
		marks = append(marks, Mark{N: k.N - m.N, Seq: k.Seq})
	}
	r.replaceMsgs(slices.Clone(r.msgs[m.N:]), marks)
}

// Compact folds the turns before the last keep ones into a summary.
func (r *run) compact(ctx context.Context, focus string, keep int) error {
	if len(r.marks) <= keep {
		return errors.New("nothing to fold: every turn in context is recent")
	}
	cut := r.marks[len(r.marks)-keep-1]
	folded := r.msgs[:cut.N]
	if err := r.w.write(r.wctx, &store.Batch{Session: r.session, State: store.StateCompacting}, false); err != nil {
		return fmt.Errorf("engine: %w: %w", errStore, err)
	}
	defer func() {
		// Back to active even if compaction failed.
		r.w.write(r.wctx, &store.Batch{Session: r.session, State: store.StateActive}, true)
	}()
	r.flushMemory(ctx, folded)
	text, err := r.summarize(ctx, folded, focus)
	if err != nil {
		return err
	}
	missing := missingIdentifiers(folded, text)
	if len(missing) > 0 {
		text += "\n\nIdentifiers from the folded part: " + strings.Join(missing, ", ")
	}
	d := event.SummaryData{Text: text, Through: cut.Seq, Folded: cut.N, FoldedTokens: tokens.Messages(folded),
		Tokens: tokens.Text(text), Model: r.summaryModel().Name, Focus: focus, Restored: missing}
	return r.applySummary(d, cut, keep)
}

// applySummary logs a summary and makes it the start of the conversation.
// The skills loaded so far stay loaded.
func (r *run) applySummary(d event.SummaryData, cut Mark, keep int) error {
	d.Skills = r.skills.list()
	ev := event.New(r.session, r.t.ID, event.Summary, d)
	if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}, State: store.StateActive}, false); err != nil {
		return fmt.Errorf("engine: log summary: %w: %w", errStore, err)
	}
	msgs := append([]model.Message{SummaryMessage(&d)}, r.msgs[cut.N:]...)
	marks := []Mark{{N: 1, Seq: cut.Seq}}
	for _, k := range r.marks[len(r.marks)-keep:] {
		marks = append(marks, Mark{N: k.N - cut.N + 1, Seq: k.Seq})
	}
	r.replaceMsgs(msgs, marks)
	return nil
}

// prune drops the oldest turns until the request fits target, or only this
// turn is left; it is logged as a pruned summary that names what it drops.
func (r *run) prune(ctx context.Context, specs []model.ToolSpec, target int) error {
	keep := len(r.marks)
	for keep > 0 {
		keep--
		if keep == 0 {
			break
		}
		cut := r.marks[len(r.marks)-keep-1]
		size := 0
		for i := cut.N; i < len(r.msgs); i++ {
			size += tokens.Message(&r.msgs[i])
		}
		if est, raw := r.estimate(specs); raw > 0 && float64(est)/float64(raw)*float64(size) <= float64(target) {
			break
		}
	}
	if len(r.marks) == 0 || keep >= len(r.marks) {
		return nil // nothing older than this turn to drop
	}
	cut := r.marks[len(r.marks)-keep-1]
	folded := r.msgs[:cut.N]
	missing := missingIdentifiers(folded, "")
	text := fmt.Sprintf("%d earlier messages were left out to fit the context window; the session's log keeps them.", cut.N)
	if len(missing) > 0 {
		text += "\nIdentifiers from the left-out part: " + strings.Join(missing, ", ")
	}
	d := event.SummaryData{Text: text, Through: cut.Seq, Folded: cut.N, FoldedTokens: tokens.Messages(folded),
		Tokens: tokens.Text(text), Pruned: true, Restored: missing}
	ev := event.New(r.session, r.t.ID, event.ContextWarning, event.ContextData{Tokens: target, Window: r.def.Memory.ContextWindow, Action: "prune"})
	if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}}, true); err != nil {
		return fmt.Errorf("engine: log prune: %w: %w", errStore, err)
	}
	return r.applySummary(d, cut, keep)
}

func (r *run) summaryModel() agent.Model {
	if m := r.def.Memory.SummaryModel; m != nil && m.Provider != "" {
		return *m
	}
	return r.def.Model
}

// summarize asks the summary model for a summary of folded.
func (r *run) summarize(ctx context.Context, folded []model.Message, focus string) (string, error) {
	m := r.summaryModel()
	p, err := r.e.o.Models.Provider(m)
	if err != nil {
		return "", err
	}
	prompt := summaryPrompt
	if focus != "" {
		prompt += "\n\nKeep in particular: " + focus
	}
	req := &model.Request{Model: m.Name, System: prompt,
		Messages: []model.Message{{Role: model.RoleUser, Content: transcript(folded)}}, MaxTokens: m.Params.MaxTokens}
	resp, err := r.sideCall(ctx, p, m, req)
	if err != nil {
		return "", fmt.Errorf("summary: %w", err)
	}
	text := strings.TrimSpace(resp.Text)
	if text == "" {
		return "", errors.New("summary: the model returned no text")
	}
	return text, nil
}

// flushMemory gives the model one chance to store what matters from
// folded with the remember tool, if the agent has one. Its calls are
// logged as lifecycle events, not as part of the conversation.
func (r *run) flushMemory(ctx context.Context, folded []model.Message) {
	t, ok := r.e.o.Tools.Get("remember")
	if !ok {
		return
	}
	spec := t.Spec()
	if !r.sees(&spec) || r.policy.Decide(spec).Verdict != tool.Allow {
		return
	}
	p, err := r.e.o.Models.Provider(r.def.Model)
	if err != nil {
		return
	}
	req := &model.Request{Model: r.def.Model.Name, System: flushPrompt,
		Messages: []model.Message{{Role: model.RoleUser, Content: FlushLead + transcript(folded)}},
		Tools:    []model.ToolSpec{{Name: spec.Name, Description: spec.Description, Parameters: spec.InputSchema}}}
	xml := r.xml(&r.def.Model)
	if xml {
		// The tool as an action in the XML prompt, its calls parsed from
		// the text.
		p := xmlproto.Prompt{Instructions: flushPrompt, Actions: []xmlproto.Action{{Name: spec.Name, Description: spec.Description, Schema: spec.InputSchema}}}
		req.System, req.Tools = p.Render(), nil
		req.Messages[0].Content = xmlproto.Escape(req.Messages[0].Content)
	}
	resp, err := r.sideCall(ctx, p, r.def.Model, req)
	if err == nil && xml {
		resp, _ = newXMLStream().finish(resp, func(model.Delta) {})
	}
	if err != nil {
		r.e.o.Logger.Warn("memory flush failed", "agent", r.def.ID, "err", err)
		return
	}
	var evs []event.Event
	for i, c := range resp.ToolCalls {
		if c.Name != spec.Name {
			continue
		}
		out := r.e.o.Tools.Run(ctx, r.call(fmt.Sprintf("%d.flush.%d", r.t.ID, i), c.Name, c.Args), &tool.RunOptions{Timeout: r.def.Tools.Timeout.D(), MaxOutputBytes: r.def.Tools.MaxOutputBytes})
		evs = append(evs, event.New(r.session, r.t.ID, event.Lifecycle, event.LifecycleData{Phase: event.PhaseMemoryFlush,
			Tool: c.Name, Args: c.Args, Output: out.Result.Output, IsError: out.Result.IsError, DurationMS: ms(out.Duration)}))
	}
	if len(evs) > 0 {
		if err := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: evs}, true); err != nil {
			r.e.o.Logger.Warn("log memory flush", "err", err)
		}
	}
}

// sideCall makes a model call outside the conversation (a summary, a
// memory flush), logging its usage and cost against the turn.
func (r *run) sideCall(ctx context.Context, p model.Provider, m agent.Model, req *model.Request) (*model.Response, error) {
	wireOptions(m, req)
	start := time.Now()
	cctx := ctx
	if d := m.Timeout.D(); d > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	resp, err := p.Stream(cctx, req, nil)
	mc := event.ModelCallData{Provider: m.Provider, Model: m.Name, Step: r.steps, Attempt: 1, LatencyMS: ms(time.Since(start))}
	var usage []store.Usage
	if err != nil {
		mc.Error, mc.ErrorKind = err.Error(), model.Kind(err)
	} else {
		mc.InputTokens, mc.OutputTokens, mc.StopReason = resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.StopReason
		mc.CostUSD = r.price(m.Name, resp.Usage)
		r.inTok += resp.Usage.InputTokens
		r.outTok += resp.Usage.OutputTokens
		r.cost += mc.CostUSD
		if a := r.t.Account; a != nil {
			a.Settle(0, mc.CostUSD) // not reserved: a side call is bounded by the turn's own checks
		}
		usage = []store.Usage{{Session: r.session, Agent: r.def.ID, Model: m.Name, InputTokens: mc.InputTokens,
			OutputTokens: mc.OutputTokens, CostUSD: mc.CostUSD, Time: time.Now().UTC(), Payer: r.t.Payer, Account: r.accountKey()}}
	}
	ev := event.New(r.session, r.t.ID, event.ModelCall, mc)
	if werr := r.w.write(r.wctx, &store.Batch{Session: r.session, Events: []event.Event{ev}, Usage: usage}, true); werr != nil {
		return nil, fmt.Errorf("engine: log model call: %w: %w", errStore, werr)
	}
	return resp, err
}

// transcript renders messages as text for a summary or a memory flush.
// The messages' contents are neutralised already (see Neutralise); the
// calls' names and arguments, which the model wrote, are here.
func transcript(msgs []model.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case model.RoleUser:
			b.WriteString("User: ")
			b.WriteString(m.Content)
		case model.RoleAssistant:
			if m.Content != "" {
				b.WriteString("Assistant: ")
				b.WriteString(m.Content)
			}
			for _, c := range m.ToolCalls {
				if m.Content != "" || b.Len() > 0 {
					b.WriteString("\n")
				}
				fmt.Fprintf(&b, "Assistant called %s with %s", Neutralise(c.Name), Neutralise(string(c.Args)))
			}
		case model.RoleTool:
			out := m.Content
			if len(out) > 4000 {
				out = out[:4000] + " …(cut)"
			}
			fmt.Fprintf(&b, "Tool %s returned: %s", m.ToolName, out)
		default:
			b.WriteString(string(m.Role) + ": " + m.Content)
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// Identifiers a summary must not lose (compiled when a summary is first
// checked, not at every start of every agentd command).
var identifierREs = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`https?://[^\s"'<>()\[\]{}]+[^\s"'<>()\[\]{}.,;:!?]`),                                                // URLs
		regexp.MustCompile(`[\w.+-]+@[\w-]+(?:\.[\w-]+)+`),                                                                      // e-mail addresses
		regexp.MustCompile(`(?:~|\.{1,2})?(?:/[\w.@+-]+){2,}`),                                                                  // paths
		regexp.MustCompile(`\b[\w-]+\.(?:go|py|js|ts|tsx|rs|java|c|h|cpp|md|yaml|yml|json|toml|txt|sql|sh|csv|log|html|css)\b`), // file names
		regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`),                   // UUIDs
		regexp.MustCompile(`#\d+|\b[A-Z][A-Z0-9]+-\d+\b`),                                                                       // issue numbers, ticket keys
		regexp.MustCompile(`\b\d+(?:[.,:/-]\d+)+\b|\b\d{3,}\b`),                                                                 // numbers, dates, versions
	}
})

// hexRE finds hexadecimal ids (digits and letters mixed); those of 7 or
// more digits are identifiers.
var hexRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\b(?:0x)?[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*\b|\b(?:0x)?[0-9a-f]*[a-f][0-9a-f]*[0-9][0-9a-f]*\b`)
})

// wordRE finds words and words joined by "-" or "." (Project-X42,
// api.v2.example, getUserById); compound tells which are identifiers.
var wordRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b\w+(?:[-.]\w+)*\b`) })

// quantityRE matches a number with a short unit or suffix.
var quantityRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+[A-Za-z]{1,3}$`) })

// compound reports whether a word found by wordRE is an identifier: letters
// and digits mixed (X42, v1.2.3-rc1), a lower-case letter followed by a
// capital inside it (getUserById, GitHub), a hyphenated word with a capital
// after the hyphen (Project-X, Jean-Luc), or a dotted name whose parts are
// not all single letters (example.com, os.path; not e.g). A number with a
// short unit or suffix (10am, 5GB, 1st) is not one.
func compound(w string) bool {
	if quantityRE().MatchString(w) {
		return false
	}
	var letter, digit, dot, lowerUpper, hyphenUpper, longPart bool
	part := 0
	var prev byte
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'A' && c <= 'Z':
			letter = true
			lowerUpper = lowerUpper || prev >= 'a' && prev <= 'z'
			hyphenUpper = hyphenUpper || prev == '-'
		case c >= 'a' && c <= 'z' || c >= 0x80:
			letter = true
		}
		if c == '.' || c == '-' {
			dot = dot || c == '.'
			part = 0
		} else if part++; part > 1 {
			longPart = true
		}
		prev = c
	}
	return letter && digit || lowerUpper || hyphenUpper || dot && longPart
}

// quotedRE finds quoted names in what the user wrote.
var quotedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"[^"\n]{2,60}"`) })

// nameRE finds capitalised words (names) in what the user wrote.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[A-Z][a-z]+(?:[ -][A-Z][a-z]+)*\b`) })

// missingIdentifiers returns the identifiers in msgs that summary does not
// contain, in order of first appearance.
func missingIdentifiers(msgs []model.Message, summary string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		id = strings.TrimSpace(id)
		if len(id) < 3 || seen[id] {
			return
		}
		seen[id] = true
		if !strings.Contains(summary, strings.Trim(id, `"`)) {
			out = append(out, id)
		}
	}
	for _, m := range msgs {
		texts := []string{m.Content}
		for _, c := range m.ToolCalls {
			texts = append(texts, string(c.Args))
		}
		for _, t := range texts {
			for _, re := range identifierREs() {
				for _, id := range re.FindAllString(t, -1) {
					add(id)
				}
			}
			for _, w := range wordRE().FindAllString(t, -1) {
				if compound(w) {
					add(w)
				}
			}
			for _, h := range hexRE().FindAllString(t, -1) {
				if len(strings.TrimPrefix(h, "0x")) >= 7 {
					add(h)
				}
			}
		}
		if m.Role == model.RoleUser {
			for _, q := range quotedRE().FindAllString(m.Content, -1) {
				add(q)
			}
			for _, n := range nameRE().FindAllStringIndex(m.Content, -1) {
				if n[0] == 0 || sentenceStart(m.Content[:n[0]]) {
					continue // a capital that starts a sentence says nothing
				}
				add(m.Content[n[0]:n[1]])
			}
		}
	}
	// A piece of a longer identifier ("1001" of "#1001", a path inside a
	// URL) is kept with it.
	return slices.DeleteFunc(out, func(id string) bool {
		for other := range seen {
			if other = strings.Trim(other, `"`); len(other) > len(id) && strings.Contains(other, id) {
				return true
			}
		}
		return false
	})
}

// sentenceStart reports whether a word after prefix starts a sentence.
func sentenceStart(prefix string) bool {
	p := strings.TrimRight(prefix, " \t\"'(")
	return p == "" || strings.HasSuffix(p, ".") || strings.HasSuffix(p, "!") || strings.HasSuffix(p, "?") ||
		strings.HasSuffix(p, "\n") || strings.HasSuffix(p, ":")
}

// Compact runs a compaction that was asked for (agentd compact, /compact):
// the turns before the last memory.recent_turns are folded into a summary
// whose writer is told to keep t.Item.Text (the focus) in particular. It
// completes the inbox item like a turn.
func (e *Engine) Compact(ctx context.Context, t *Turn) (event.TurnEndData, error) {
	r, err := e.newRun(ctx, t)
	if err != nil {
		return event.TurnEndData{}, err
	}
	r.skills.add(t.Skills...) // for the summary; no tool of theirs runs
	r.initLifecycle()
	r.msgs, r.marks = t.Context, t.Marks
	end := event.TurnEndData{Status: event.StatusDone}
	done := slices.ContainsFunc(t.Prior, func(e event.Event) bool { return e.Kind == event.Summary })
	switch {
	case done:
		end.Reply = "compacted before agentd restarted"
	default:
		keep := max(r.def.Memory.RecentTurns, 1)
		if len(r.marks) <= keep {
			end.Reply = fmt.Sprintf("nothing to compact: the context holds %d turns, and the last %d stay verbatim", len(r.marks), keep)
			break
		}
		n := r.marks[len(r.marks)-keep-1].N
		if err = r.compact(ctx, t.Item.Text, keep); err != nil {
			if errors.Is(err, errStore) {
				break
			}
			end = event.TurnEndData{Status: event.StatusError, Reason: "compaction failed: " + err.Error()}
			err = nil
			break
		}
		end.Reply = fmt.Sprintf("compacted %d messages into a summary; the log keeps them", n)
	}
	if err == nil {
		if err = r.w.write(r.wctx, r.endBatch(&end), false); err != nil {
			err = fmt.Errorf("engine: end compaction: %w", err)
		}
	}
	if cerr := r.w.close(); cerr != nil && err == nil {
		err = fmt.Errorf("engine: %w: %w", errStore, cerr)
	}
	return end, err
}
