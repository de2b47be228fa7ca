package engine

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/permit"
	"agentd/internal/store"
	"agentd/internal/tool"
	"agentd/internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected event logs of testdata/transcripts")

// TestTranscripts runs the turns described by testdata/transcripts/*.txtar
// and compares the event log each leaves with the archive's "events" file
// (-update rewrites it). An archive's files:
//
//	agent.yaml    the agent's file, loaded as agentd loads it (id "a")
//	model NAME    the replies of the model NAME, one per call, in order,
//	              separated by "---" lines: "say TEXT", "think TEXT",
//	              "call TOOL ARGS", "usage IN OUT", or "fail KIND [TEXT]"
//	              with KIND as model.Kind names it (rate_limited, auth, ...)
//	tools         one tool a line, "NAME [read-only] [idempotent] [error]
//	              [ask-first] [card] [card-inexact] [preview-error] [inert]:
//	              OUTPUT"; OUTPUT may hold {{args}}, the call's arguments.
//	              card: the tool previews a call as a command card whose
//	              Exact is the arguments (card-inexact: no Exact);
//	              preview-error: its preview fails; inert: a call whose
//	              arguments hold "poll" changes nothing
//	approvals     the answers a person gives, in order: "grant [BY]",
//	              "session [BY]", "always [BY]" (granted with that scope)
//	              or "deny [REASON]"
//	grants        the standing grants before the turn, one a line:
//	              "ID session=S tool=T exact=E" (S and E may be empty;
//	              E is the rest of the line)
//	grants after  the grants after the turn, as "grants" holds them, the
//	              ones it made named new1, new2, …
//	cards asked   the card each request for approval carried, one a line
//	              ("-" for none)
//	history       the events of earlier turns, each input starting a turn
//	prior         this turn's events logged before agentd restarted
//	input         the message the turn answers (default "hello")
//	compact       instead of a turn, a compaction asked for, with this
//	              text as its focus
//	events        the event log the turn leaves
//
// Events are written one a line, "KIND DATA", in the order they reach the
// log, without what changes from run to run: latencies, durations,
// expiry times and approval ids. Results of tool calls run in parallel,
// which reach the log as each finishes, are listed in call order.
func TestTranscripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := runTranscript(t, a)
			if *update {
				a.Set("events", got)
				if err := os.WriteFile(path, a.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, _ := a.Get("events")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("event log (-want +got):\n%s", diff)
			}
		})
	}
}

// runTranscript runs the turn an archive describes and returns its event
// log, written as the "events" file holds it.
func runTranscript(t *testing.T, a *txtar.Archive) string {
	t.Helper()
	def := transcriptAgent(t, a)
	ms := models{}
	for _, f := range a.Files {
		if name, ok := strings.CutPrefix(f.Name, "model "); ok {
			ms[name] = parseReplies(t, f.Data)
		}
	}
	reg := tool.NewRegistry(nil)
	if s, ok := a.Get("tools"); ok {
		for _, tl := range parseTools(t, s) {
			if err := reg.Register(tl); err != nil {
				t.Fatal(err)
			}
		}
	}
	o := &Options{Models: ms, Tools: reg, BaseBackoff: time.Microsecond, MaxBackoff: time.Microsecond}
	var asked *approvals
	if s, ok := a.Get("approvals"); ok {
		asked = parseApprovals(t, s)
		o.Permits = asked
	}
	book := &grantBook{}
	if s, ok := a.Get("grants"); ok {
		book.list = parseGrants(t, s, def.ID)
	}
	o.Grants = book
	e := New(o)
	tr := transcriptTurn(t, a, def)
	log := &memLog{}
	tr.Log = log
	run := e.Run
	if _, ok := a.Get("compact"); ok {
		run = e.Compact
	}
	if _, err := run(context.Background(), tr); err != nil {
		t.Fatalf("the turn failed: %v", err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	out := formatEvents(t, log.events)
	after := book.format()
	for i, id := range book.made {
		name := fmt.Sprintf("new%d", i+1)
		out, after = strings.ReplaceAll(out, id, name), strings.ReplaceAll(after, id, name)
	}
	if want, ok := a.Get("cards asked"); ok && asked != nil {
		got := strings.Join(asked.cards, "\n") + "\n"
		if *update {
			a.Set("cards asked", got)
		} else if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the cards the person was shown (-want +got):\n%s", diff)
		}
	}
	if want, ok := a.Get("grants after"); ok {
		if *update {
			a.Set("grants after", after)
		} else if diff := cmp.Diff(want, after); diff != "" {
			t.Errorf("grants after the turn (-want +got):\n%s", diff)
		}
	}
	return out
}

// transcriptAgent loads the archive's agent.yaml as agentd loads an agent
// file.
func transcriptAgent(t *testing.T, a *txtar.Archive) *agent.Definition {
	t.Helper()
	src, ok := a.Get("agent.yaml")
	if !ok {
		src = "model:\n  provider: openai\n  name: m\n"
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	def, err := agent.LoadDefinition(dir, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	return def
}

// transcriptTurn is turn 7 of session 1, after the archive's history and,
// if it has some, its prior events.
func transcriptTurn(t *testing.T, a *txtar.Archive, def *agent.Definition) *Turn {
	t.Helper()
	input, ok := a.Get("input")
	if !ok {
		input = "hello"
	}
	kind := event.Input
	if focus, ok := a.Get("compact"); ok {
		input, kind = strings.TrimSuffix(focus, "\n"), event.CompactRequest
	}
	tr := &Turn{ID: 7, Session: store.Session{ID: 1, Agent: def.ID, Key: "k"}, Agent: def,
		Item: store.InboxItem{ID: 7, Session: 1, Kind: kind, Text: strings.TrimSuffix(input, "\n")}}
	var seq int64
	if s, ok := a.Get("history"); ok {
		evs := parseEvents(t, s, &seq, 0)
		var c Conversation
		c.Add(evs...)
		tr.Context, tr.Marks, tr.Skills = c.Messages(), c.Marks(), c.Skills()
	}
	if s, ok := a.Get("prior"); ok {
		tr.Prior, tr.Recovered = parseEvents(t, s, &seq, tr.ID), true
	}
	return tr
}

// parseEvents reads events written "KIND DATA", one a line, numbering
// them after *seq. Their turn is turn, or if it is 0, one per input.
func parseEvents(t *testing.T, s string, seq *int64, turn int64) []event.Event {
	t.Helper()
	var evs []event.Event
	n := int64(0)
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kind, data, _ := strings.Cut(line, " ")
		if !json.Valid([]byte(data)) {
			t.Fatalf("event %q: the data is not JSON", line)
		}
		if event.Kind(kind) == event.Input {
			n++
		}
		tn := turn
		if tn == 0 {
			tn = n
		}
		*seq++
		evs = append(evs, event.Event{Seq: *seq, Session: 1, Turn: tn, Kind: event.Kind(kind), Data: json.RawMessage(data)})
	}
	return evs
}

// unstable are the fields of event data that change from run to run, by
// kind ("" for every kind).
var unstable = map[event.Kind][]string{
	"":                      {"latency_ms", "duration_ms"},
	event.ApprovalRequested: {"id", "expires_at"},
	event.ApprovalResolved:  {"id"},
}

// formatEvents writes events as the "events" file holds them.
func formatEvents(t *testing.T, evs []event.Event) string {
	t.Helper()
	lines := make([]string, len(evs))
	for i, e := range evs {
		var data map[string]any
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatalf("event %s: %v", e.Kind, err)
		}
		for _, k := range append(unstable[""], unstable[e.Kind]...) {
			delete(data, k)
		}
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(e.Kind) + " " + string(b)
	}
	// Parallel calls' results reach the log in the order they finish.
	for i := 0; i < len(evs); {
		j := i
		for j < len(evs) && evs[j].Kind == event.ToolResult {
			j++
		}
		slices.Sort(lines[i:j]) // the ids are in call order
		i = max(j, i+1)
	}
	return strings.Join(lines, "\n") + "\n"
}

// reply is one scripted model response, or failure.
type reply struct {
	resp model.Response
	err  error
}

// replies is a model that answers each call with the next reply.
type replies struct {
	mu   sync.Mutex
	list []reply
	next int
}

func (r *replies) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == len(r.list) {
		return nil, fmt.Errorf("the script has no reply for call %d", r.next+1)
	}
	rp := r.list[r.next]
	r.next++
	if rp.err != nil {
		return nil, rp.err
	}
	resp := rp.resp
	return &resp, nil
}

// modelErrors are the model's error kinds, by the name model.Kind gives.
var modelErrors = func() map[string]error {
	m := map[string]error{}
	for _, err := range []error{model.ErrRateLimited, model.ErrOverloaded, model.ErrServer, model.ErrAuth,
		model.ErrContextOverflow, model.ErrBadRequest, model.ErrProtocol, model.ErrTransport} {
		m[model.Kind(err)] = err
	}
	return m
}()

// parseReplies reads a model's replies.
func parseReplies(t *testing.T, s string) *replies {
	t.Helper()
	r := &replies{list: []reply{{}}}
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		cur := &r.list[len(r.list)-1]
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "", "#":
		case "---":
			r.list = append(r.list, reply{})
		case "say":
			cur.resp.Text = join(cur.resp.Text, rest)
		case "think":
			cur.resp.Reasoning = join(cur.resp.Reasoning, rest)
		case "call":
			name, args, _ := strings.Cut(rest, " ")
			cur.resp.ToolCalls = append(cur.resp.ToolCalls, model.ToolCall{Name: name, Args: json.RawMessage(args)})
		case "usage":
			in, out, _ := strings.Cut(rest, " ")
			cur.resp.Usage.InputTokens, _ = strconv.Atoi(in)
			cur.resp.Usage.OutputTokens, _ = strconv.Atoi(out)
		case "fail":
			kind, msg, _ := strings.Cut(rest, " ")
			sentinel, ok := modelErrors[kind]
			if !ok {
				t.Fatalf("model script: no error kind %q", kind)
			}
			cur.err = &model.Error{Kind: sentinel, Provider: "script", Message: msg}
		default:
			t.Fatalf("model script: %q", line)
		}
	}
	for i := range r.list {
		if r.list[i].resp.StopReason == "" {
			r.list[i].resp.StopReason = "stop"
			if len(r.list[i].resp.ToolCalls) > 0 {
				r.list[i].resp.StopReason = "tool_calls"
			}
		}
	}
	return r
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// parseTools reads the tools: "NAME [flags]: OUTPUT" a line.
func parseTools(t *testing.T, s string) []tool.Tool {
	t.Helper()
	var out []tool.Tool
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		head, output, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("tool %q: want NAME [flags]: OUTPUT", line)
		}
		fields := strings.Fields(head)
		spec := tool.Spec{Name: fields[0], Description: "the " + fields[0] + " tool", InputSchema: json.RawMessage(`{"type":"object"}`)}
		isError := false
		var with previewing
		for _, f := range fields[1:] {
			switch f {
			case "ask-first":
				spec.AskFirst = true
			case "card", "card-inexact", "preview-error", "inert":
				with.flags = append(with.flags, f)
			case "read-only":
				spec.ReadOnly = true
			case "idempotent":
				spec.Idempotent = true
			case "error":
				isError = true
			default:
				t.Fatalf("tool %q: no flag %q", line, f)
			}
		}
		output = strings.TrimSpace(output)
		with.Tool = tool.Func(spec, func(ctx context.Context, c *tool.Call) (tool.Result, error) {
			return tool.Result{Output: strings.ReplaceAll(output, "{{args}}", string(c.Args)), IsError: isError}, nil
		})
		switch {
		case len(with.flags) == 0:
			out = append(out, with.Tool)
		case slices.Equal(with.flags, []string{"inert"}):
			out = append(out, inertOnly{with})
		default:
			out = append(out, with)
		}
	}
	return out
}

// approvals answers each call that waits for a person with the next
// scripted decision.
type approvals struct {
	mu    sync.Mutex
	list  []permit.Decision
	cards []string // the card each request carried, "-" for none
}

func (a *approvals) Wait(ctx context.Context, req permit.Request) (permit.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	card := string(req.Card)
	if card == "" {
		card = "-"
	}
	a.cards = append(a.cards, card)
	if len(a.list) == 0 {
		return permit.Decision{}, errors.New("the script has no more answers")
	}
	d := a.list[0]
	a.list = a.list[1:]
	return d, nil
}

func parseApprovals(t *testing.T, s string) *approvals {
	t.Helper()
	a := &approvals{}
	for line := range strings.Lines(s) {
		word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch word {
		case "":
		case "grant":
			a.list = append(a.list, permit.Decision{Granted: true, By: rest})
		case permit.ScopeSession, permit.ScopeAlways:
			a.list = append(a.list, permit.Decision{Granted: true, By: rest, Scope: word})
		case "deny":
			a.list = append(a.list, permit.Decision{Reason: rest})
		default:
			t.Fatalf("approvals: %q", line)
		}
	}
	return a
}

// previewing is a scripted tool with the abilities its flags give: a
// card for each call, a preview that fails, inert calls.
type previewing struct {
	tool.Tool
	flags []string
}

func (p previewing) Preview(ctx context.Context, c *tool.Call) (tool.Card, error) {
	switch {
	case slices.Contains(p.flags, "preview-error"):
		return tool.Card{}, errors.New("the edit does not apply: no line reads \"x\"")
	case slices.Contains(p.flags, "card"):
		return tool.Card{Kind: tool.CardCommand, Title: "run " + string(c.Args), Command: []string{"run", string(c.Args)},
			Sandbox: "bwrap, no network", Exact: "run " + string(c.Args)}, nil
	case slices.Contains(p.flags, "card-inexact"):
		return tool.Card{Kind: tool.CardDiff, Title: "change x", Paths: []string{"x"}, Diff: "-a\n+b\n"}, nil
	}
	return tool.Card{}, errors.New("no card")
}

// inertOnly is a scripted tool with inert calls and no card.
type inertOnly struct{ p previewing }

func (t inertOnly) Spec() tool.Spec { return t.p.Spec() }
func (t inertOnly) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	return t.p.Call(ctx, c)
}
func (t inertOnly) Inert(args json.RawMessage) bool { return t.p.Inert(args) }

func (p previewing) Inert(args json.RawMessage) bool {
	return slices.Contains(p.flags, "inert") && strings.Contains(string(args), "poll")
}

// grantBook is a GrantStore in memory that remembers the grants it was
// given, in order.
type grantBook struct {
	mu   sync.Mutex
	list []store.Grant
	made []string
}

func (b *grantBook) PutGrant(ctx context.Context, g *store.Grant) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.list = append(b.list, *g)
	b.made = append(b.made, g.ID)
	return nil
}

func (b *grantBook) Grants(ctx context.Context, agent string) ([]store.Grant, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []store.Grant
	for _, g := range b.list {
		if agent == "" || g.Agent == agent {
			out = append(out, g)
		}
	}
	return out, nil
}

func (b *grantBook) format() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	for _, g := range b.list {
		fmt.Fprintf(&s, "%s session=%s tool=%s exact=%s\n", g.ID, g.Session, g.Tool, g.Exact)
	}
	return s.String()
}

func parseGrants(t *testing.T, s, agent string) []store.Grant {
	t.Helper()
	var out []store.Grant
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		id, rest, _ := strings.Cut(line, " ")
		head, exact, ok := strings.Cut(rest, " exact=")
		fields := strings.Fields(head)
		if !ok || len(fields) != 2 {
			t.Fatalf("grants: %q: want ID session=S tool=T exact=E", line)
		}
		out = append(out, store.Grant{ID: id, Agent: agent, Session: strings.TrimPrefix(fields[0], "session="),
			Tool: strings.TrimPrefix(fields[1], "tool="), Exact: exact})
	}
	return out
}
