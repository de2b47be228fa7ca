package engine

import (
	"maps"
	"slices"
	"strings"

	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/prompttag"
	"agentd/internal/tokens"
	"agentd/internal/xmlproto"
)

// Messages derives the model conversation from log events (those after the
// last reset marker, in order). It keeps every tool call paired with a
// result, as the model APIs require: a call whose result never arrived (the
// turn was cancelled, or agentd stopped) gets a synthetic result saying so,
// and a message logged between a call and its result is moved after the
// results. Events that are not part of the conversation (model calls,
// thoughts, errors, markers) are skipped, and so is a heartbeat's turn
// that ended with nothing to do (see "Quiet heartbeats").
func Messages(evs []event.Event) []model.Message {
	var c Conversation
	c.Add(evs...)
	return c.Messages()
}

// Conversation derives the model conversation from log events one at a
// time, so a session's context is kept up to date as events are logged
// instead of being decoded again for every turn. The zero value is empty.
// It is not safe for concurrent use.
type Conversation struct {
	b    builder
	toks []int // token estimates of b.msgs[:len(toks)]; the last may be stale
}

// Tokens returns the estimated tokens of each message Messages would
// return, as far as known: estimates are kept, so each call sizes only
// what was added since (and the last message, which may have grown).
func (c *Conversation) Tokens() []int {
	msgs := c.b.msgs
	if len(c.toks) > len(msgs) {
		c.toks = c.toks[:0]
	}
	if n := len(c.toks); n > 0 {
		c.toks = c.toks[:n-1]
	}
	for i := len(c.toks); i < len(msgs); i++ {
		c.toks = append(c.toks, tokens.Message(&msgs[i]))
	}
	return c.toks[:len(c.toks):len(c.toks)]
}

// Mark is a turn boundary in a conversation: the messages before index N
// come from events up to and including sequence number Seq (a turn_end).
type Mark struct {
	N   int
	Seq int64
}

// Marks returns the turn boundaries so far, oldest first.
func (c *Conversation) Marks() []Mark { return c.b.marks[:len(c.b.marks):len(c.b.marks)] }

// Size is roughly how many bytes the conversation holds.
func (c *Conversation) Size() int { return c.b.size }

// Add folds logged events into the conversation.
func (c *Conversation) Add(evs ...event.Event) {
	if c.b.msgs == nil {
		c.b.group = -1
	}
	for i := range evs {
		c.b.add(&evs[i])
	}
	// A quiet heartbeat left out takes its messages' estimates with it.
	if len(c.toks) > len(c.b.msgs) {
		c.toks = c.toks[:len(c.b.msgs)]
	}
}

// Seed starts the conversation from messages derived earlier, with their
// turn boundaries (nil if unknown).
func (c *Conversation) Seed(msgs []model.Message, marks []Mark) {
	c.b = builder{msgs: append([]model.Message(nil), msgs...), group: -1, marks: append([]Mark(nil), marks...), size: c.b.size}
	c.toks = nil
}

// Messages returns the conversation so far, with calls still waiting for
// results closed as Messages describes. The caller may append to the
// returned slice; the conversation never changes a message it returned.
func (c *Conversation) Messages() []model.Message {
	b := &c.b
	// The next event starts a new message rather than extending one the
	// caller holds.
	b.hasStep = false
	if len(b.open) == 0 && len(b.deferred) == 0 {
		return b.msgs[:len(b.msgs):len(b.msgs)]
	}
	cp := builder{msgs: append([]model.Message(nil), b.msgs...), group: b.group,
		open: maps.Clone(b.open), deferred: append([]model.Message(nil), b.deferred...)}
	cp.closeGroup()
	return cp.msgs
}

// Len returns the number of messages so far.
func (c *Conversation) Len() int { return len(c.b.msgs) }

// Skills returns the skills the conversation loaded (see "Skills a session
// has loaded"), sorted, in a slice of the caller's.
func (c *Conversation) Skills() []string { return slices.Clone(c.b.skills.names) }

type builder struct {
	msgs []model.Message
	// The open tool group: the assistant message whose calls still wait for
	// results, and what was logged meanwhile.
	group    int // index of the assistant message in msgs, -1 if none
	open     map[string]bool
	deferred []model.Message
	turn     int64
	step     int
	hasStep  bool
	marks    []Mark
	skills   loadedSkills
	size     int        // roughly the bytes of the events added
	beat     *heartbeat // the heartbeat turn under way, nil if none
}

// Quiet heartbeats.
//
// A heartbeat (a job's periodic turn in an agent's main session, its input
// marked event.SourceHeartbeat) that ends done with the answer
// event.HeartbeatOK had nothing to say: its whole turn — the prompt, any
// tool calls and results, the answer — is left out of the conversation
// when its turn_end is added, so that every later turn's context, and the
// part compaction summarizes, holds no such no-op, and the model is not
// taught to answer HEARTBEAT_OK by seeing it every half hour. The log keeps
// the turn (the log is append-only); the turn under way, quiet or not,
// is in its own context. A heartbeat that answered anything else stays,
// as does a person's message that says HEARTBEAT_OK (not a heartbeat's
// input). Should another turn's message be logged inside a heartbeat's
// turn, the turn stays too: leaving it out would take that message along.

// heartbeat is where a heartbeat's turn began in the conversation.
type heartbeat struct {
	turn   int64
	n      int      // len(msgs) before its input
	size   int      // the builder's size before its input
	marks  int      // len(marks) before it
	skills []string // the skills loaded before it (loadedSkills.list)
}

// startBeat notes a heartbeat's input, about to be added.
func (b *builder) startBeat(e *event.Event) {
	b.beat = nil
	if len(b.open) > 0 {
		return // a group still open defers the input: no clean start
	}
	b.beat = &heartbeat{turn: e.Turn, n: len(b.msgs), size: b.size - eventSize(e), marks: len(b.marks), skills: b.skills.list()}
}

// endBeat leaves out the heartbeat turn that e, its turn_end, ends if it
// had nothing to do; it reports whether it did.
func (b *builder) endBeat(e *event.Event) bool {
	hb := b.beat
	b.beat = nil
	var d event.TurnEndData
	if hb.turn != e.Turn || e.Decode(&d) != nil || !d.NothingToDo() {
		return false
	}
	b.closeGroup()
	b.hasStep = false
	// Capped: the next message is appended to a copy, never over a
	// message a caller of Messages holds.
	b.msgs = b.msgs[:hb.n:hb.n]
	b.marks = b.marks[:hb.marks:hb.marks]
	b.skills.names = hb.skills
	b.size = hb.size
	return true
}

// stranger reports whether e adds to the conversation a message of
// another turn than the heartbeat's under way.
func (b *builder) stranger(e *event.Event) bool {
	switch e.Kind {
	case event.Input, event.SystemMessage, event.Text, event.ToolCall, event.ToolResult, event.Summary:
		return e.Turn != b.beat.turn
	}
	return false
}

// eventSize is roughly the bytes an event takes in a conversation.
func eventSize(e *event.Event) int { return len(e.Data) + 64 }

func (b *builder) add(e *event.Event) {
	b.size += eventSize(e)
	if b.beat != nil && b.stranger(e) {
		b.beat = nil
	}
	switch e.Kind {
	case event.Input, event.SystemMessage:
		var d event.InputData
		if e.Decode(&d) != nil {
			return
		}
		if e.Kind == event.Input && d.Heartbeat() {
			b.startBeat(e)
		}
		b.other(InputMessage(e.Kind, &d))
	case event.Text:
		var d event.TextData
		if e.Decode(&d) != nil {
			return
		}
		a := b.assistant(e.Turn, d.Step)
		if a.Content != "" {
			a.Content += "\n"
		}
		// A model's text is no more agentd's than a user's (whole, in
		// case a tag spans two pieces).
		a.Content = Neutralise(a.Content + d.Text)
		a.Wire = new(model.Encoded) // changed: encoded anew
	case event.ToolCall:
		var d event.ToolCallData
		if e.Decode(&d) != nil {
			return
		}
		b.skills.call(&d)
		a := b.assistant(e.Turn, d.Step)
		a.ToolCalls = append(a.ToolCalls, model.ToolCall{ID: d.ID, Name: d.Name, Args: d.Args})
		a.Wire = new(model.Encoded) // changed: encoded anew
		if b.open == nil {
			b.open = make(map[string]bool)
		}
		b.open[d.ID] = true
		b.group = len(b.msgs) - 1
	case event.ToolResult:
		var d event.ToolResultData
		if e.Decode(&d) != nil || !b.open[d.ID] {
			return // a result without its call cannot be sent
		}
		b.skills.result(&d)
		delete(b.open, d.ID)
		b.msgs = append(b.msgs, ToolMessage(&d))
		if len(b.open) == 0 {
			b.closeGroup()
		}
	case event.Marker:
		var d event.MarkerData
		if e.Decode(&d) == nil && d.Name == ProtocolMarker {
			b.problems(e.Turn, d.Reason)
		}
	case event.TurnEnd:
		if b.beat != nil && b.endBeat(e) {
			return
		}
		b.closeGroup()
		b.hasStep = false
		if len(b.marks) == 0 || b.marks[len(b.marks)-1].N < len(b.msgs) {
			b.marks = append(b.marks, Mark{N: len(b.msgs), Seq: e.Seq})
		}
	case event.Summary:
		// A summary starts the conversation it is part of (see
		// FromSummary); one met later is the caller's to apply.
		var d event.SummaryData
		if len(b.msgs) > 0 || len(b.open) > 0 || e.Decode(&d) != nil {
			return
		}
		b.skills.add(d.Skills...)
		b.msgs = append(b.msgs, SummaryMessage(&d))
		b.marks = append(b.marks, Mark{N: 1, Seq: d.Through})
	}
}

// SummaryMessage is the model message that stands in for folded events:
// the summary, which a model wrote from what users and tools said, with
// agentd's tags neutralised, in a <conversation_summary> tag.
func SummaryMessage(d *event.SummaryData) model.Message {
	return model.Message{Role: model.RoleUser, Content: wrap(summaryTag, "", "\n"+Neutralise(d.Text)+"\n"), Wire: new(model.Encoded)}
}

// FromSummary returns the events a context is built from: those after the
// last reset (evs), with the latest summary standing in for the events it
// folds — the summary first, then the events after the last one it folds.
// evs is returned as is when it holds no summary.
func FromSummary(evs []event.Event) []event.Event {
	last := -1
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == event.Summary {
			last = i
			break
		}
	}
	if last < 0 {
		return evs
	}
	var d event.SummaryData
	if evs[last].Decode(&d) != nil {
		return evs
	}
	out := make([]event.Event, 0, len(evs)-last+8)
	out = append(out, evs[last])
	for i := range evs {
		if evs[i].Seq > d.Through && i != last && evs[i].Kind != event.Summary {
			out = append(out, evs[i])
		}
	}
	return out
}

// assistant returns the assistant message of (turn, step), starting one if
// the last message is not it.
func (b *builder) assistant(turn int64, step int) *model.Message {
	if b.hasStep && b.turn == turn && b.step == step && len(b.msgs) > 0 && b.msgs[len(b.msgs)-1].Role == model.RoleAssistant {
		return &b.msgs[len(b.msgs)-1]
	}
	b.closeGroup()
	b.turn, b.step, b.hasStep = turn, step, true
	b.msgs = append(b.msgs, model.Message{Role: model.RoleAssistant})
	return &b.msgs[len(b.msgs)-1]
}

// problems adds the problems message of a step in the XML protocol after
// the step's results, as the run added it; a step with neither text nor
// calls still has its (empty) assistant message.
func (b *builder) problems(turn int64, reason string) {
	if len(b.open) == 0 && (!b.hasStep || b.turn != turn || len(b.msgs) == 0 || b.msgs[len(b.msgs)-1].Role != model.RoleAssistant) {
		b.closeGroup()
		b.msgs = append(b.msgs, model.Message{Role: model.RoleAssistant, Wire: new(model.Encoded)})
	}
	b.other(ProblemsMessage(reason))
}

// other adds a non-assistant, non-tool message, deferring it while a tool
// group waits for results.
func (b *builder) other(m model.Message) {
	b.hasStep = false
	if len(b.open) > 0 {
		b.deferred = append(b.deferred, m)
		return
	}
	b.msgs = append(b.msgs, m)
}

// closeGroup gives every call still open a synthetic result, then appends
// the messages deferred meanwhile.
func (b *builder) closeGroup() {
	if len(b.open) > 0 && b.group >= 0 && b.group < len(b.msgs) {
		for _, c := range b.msgs[b.group].ToolCalls {
			if b.open[c.ID] {
				b.msgs = append(b.msgs, model.Message{Role: model.RoleTool, ToolCallID: c.ID, ToolName: c.Name, IsError: true,
					Content: "no result: the turn ended before this call finished", Wire: new(model.Encoded)})
			}
		}
	}
	clear(b.open)
	b.group = -1
	b.msgs = append(b.msgs, b.deferred...)
	b.deferred = b.deferred[:0]
}

// InputMessage is the model message for an input or system message. A
// system message is wrapped in <system_message origin="…"> tags; agentd's
// tags in any text it holds are neutralised (see Neutralise), so that only
// agentd makes them.
func InputMessage(kind event.Kind, d *event.InputData) model.Message {
	text := Neutralise(d.Text)
	if kind == event.SystemMessage {
		text = wrap(systemTag, d.Origin, text)
	}
	return model.Message{Role: model.RoleUser, Content: text, Images: Images(d.Images), Wire: new(model.Encoded)}
}

// ToolMessage is the model message for a tool result, agentd's tags
// neutralised.
func ToolMessage(d *event.ToolResultData) model.Message {
	return model.Message{Role: model.RoleTool, Content: Neutralise(d.Output), ToolCallID: d.ID, ToolName: d.Name, IsError: d.IsError,
		Images: Images(d.Images), Wire: new(model.Encoded)}
}

// Images returns the logged images as model images (sharing their bytes).
func Images(refs []event.ImageRef) []model.Image {
	if len(refs) == 0 {
		return nil
	}
	imgs := make([]model.Image, len(refs))
	for i, r := range refs {
		imgs[i] = model.Image{MIMEType: r.MIMEType, Data: r.Data}
	}
	return imgs
}

// ImageRefs returns images as the log stores them (sharing their bytes).
func ImageRefs(imgs []model.Image) []event.ImageRef {
	if len(imgs) == 0 {
		return nil
	}
	refs := make([]event.ImageRef, len(imgs))
	for i, img := range imgs {
		refs[i] = event.ImageRef{MIMEType: img.MIMEType, Size: len(img.Data), Data: img.Data}
	}
	return refs
}

// ownTag is a tag agentd wraps its own text in, in what the model reads.
// Every wrapper takes its tag from here (see wrap), and Neutralise escapes
// all of them in any other text, so the two cannot drift apart.
type ownTag int

const (
	systemTag   ownTag = iota // a system or inter-agent message, with its origin
	summaryTag                // a summary standing in for folded turns
	problemsTag               // a problem in what a model wrote in the XML protocol (ProblemsMessage)
	numOwnTags
)

// ownTagNames are the tags' names. The summary's is not plain "summary",
// an HTML element that pages and files a tool reads hold, which would be
// escaped with it.
var ownTagNames = [numOwnTags]string{
	systemTag:   "system_message",
	summaryTag:  "conversation_summary",
	problemsTag: xmlproto.TagProblem,
}

// wrap returns text, neutralised already, in tag t, with an origin
// attribute when origin is not "".
func wrap(t ownTag, origin, text string) string {
	name := ownTagNames[t]
	var sb strings.Builder
	sb.Grow(2*len(name) + len(origin) + len(text) + 16)
	sb.WriteString("<" + name)
	if origin != "" {
		sb.WriteString(` origin="`)
		sb.WriteString(attrEscaper.Replace(origin))
		sb.WriteString(`"`)
	}
	sb.WriteString(">")
	sb.WriteString(text)
	sb.WriteString("</" + name + ">")
	return sb.String()
}

// attrEscaper escapes a system message's origin for its attribute, so it
// can neither end the attribute nor the tag.
var attrEscaper = strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;", ">", "&gt;")

// Neutralise escapes agentd's own tags (ownTagNames) in text that agentd
// did not write — a user's message, a tool's output, a recalled memory, a
// context tool's lines, a skill's description, what a model wrote: the "<"
// of <system_message …> or </conversation_summary>, in any case and with
// any white space after "<" or "/", becomes "&lt;", so that no such text
// can pass for text agentd wrapped. Text without such a tag is returned as
// it is, without copying.
func Neutralise(text string) string { return prompttag.Escape(text, ownTagNames[:]) }
