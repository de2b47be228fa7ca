package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/tokens"
)

// history makes n finished turns, each mentioning identifiers, as logged
// events with sequence numbers from 1.
func history(n int) []event.Event {
	var evs []event.Event
	seq := int64(0)
	add := func(turn int64, kind event.Kind, v any) {
		seq++
		e := event.New(1, turn, kind, v)
		e.Seq = seq
		evs = append(evs, e)
	}
	for i := 1; i <= n; i++ {
		turn := int64(i)
		add(turn, event.Input, event.InputData{Text: fmt.Sprintf("Please file order #%d for Ada Lovelace, the data is in /srv/data/batch-%d.csv and https://example.com/orders/%d", 1000+i, i, i)})
		add(turn, event.ModelCall, event.ModelCallData{Step: 1})
		add(turn, event.Text, event.TextData{Text: fmt.Sprintf("Filed order #%d. Anything else about batch %d?", 1000+i, i), Step: 1})
		add(turn, event.TurnEnd, event.TurnEndData{Status: event.StatusDone})
	}
	return evs
}

func compactTurn(evs []event.Event, mem agent.Memory) *Turn {
	var c Conversation
	c.Add(evs...)
	t := turn(&agent.Definition{Memory: mem})
	t.ID = 100
	t.Context, t.Marks = c.Messages(), c.Marks()
	return t
}

func TestCompactionFoldsOlderTurns(t *testing.T) {
	evs := history(8)
	var c Conversation
	c.Add(evs...)
	size := tokens.Messages(c.Messages())
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("The user filed several orders for Ada."), text("done")}}
	h := newHarness(t, models{"m": p})
	tr := compactTurn(evs, agent.Memory{ContextWindow: size, Compaction: agent.CompactSummarize, RecentTurns: 2, WarnAt: 0.75, CompactAt: 0.9})
	tr.Skills = []string{"tea"} // loaded in a folded turn
	end, err := h.run(context.Background(), tr)
	if err != nil || end.Status != event.StatusDone || end.Reply != "done" {
		t.Fatalf("end %+v err %v", end, err)
	}
	var sum event.SummaryData
	if !h.log.decoded(event.Summary, &sum) {
		t.Fatalf("no summary: %v", h.log.kinds())
	}
	// The skills loaded stay loaded after their turns are folded.
	if !slices.Equal(sum.Skills, []string{"tea"}) {
		t.Errorf("summary skills %q", sum.Skills)
	}
	var warn event.ContextData
	if !h.log.decoded(event.ContextWarning, &warn) || warn.Action != "compact" {
		t.Errorf("warning %+v", warn)
	}
	// Six turns folded; the summary runs through the sixth turn's end.
	if sum.Through != 24 || sum.Folded != 12 || sum.Pruned {
		t.Errorf("summary %+v", sum)
	}
	// Every identifier of the folded turns is kept, none of the recent ones.
	for i := 1; i <= 6; i++ {
		for _, id := range []string{fmt.Sprintf("#%d", 1000+i), fmt.Sprintf("/srv/data/batch-%d.csv", i), fmt.Sprintf("https://example.com/orders/%d", i)} {
			if !strings.Contains(sum.Text, id) {
				t.Errorf("summary lost %s:\n%s", id, sum.Text)
			}
		}
	}
	if strings.Contains(sum.Text, "#1007") || !strings.Contains(sum.Text, "Lovelace") {
		t.Errorf("summary text:\n%s", sum.Text)
	}
	// The summary call saw the folded transcript; the answer call saw the
	// summary, the two recent turns and the input.
	if !strings.Contains(p.reqs[0].Messages[0].Content, "#1006") || strings.Contains(p.reqs[0].Messages[0].Content, "#1007") {
		t.Errorf("summary request %q", p.reqs[0].Messages[0].Content)
	}
	msgs := p.reqs[1].Messages
	if len(msgs) != 6 || !strings.HasPrefix(msgs[0].Content, "<conversation_summary>") ||
		!strings.Contains(msgs[1].Content, "#1007") || msgs[5].Content != "hello" {
		t.Errorf("answer request: %d messages, first %q", len(msgs), msgs[0].Content)
	}

	// The context rebuilt from the whole log starts from the summary.
	h.log.mu.Lock()
	all := slices.Clone(evs)
	for _, e := range h.log.events {
		e.Seq += int64(len(evs)) // the memory log numbers from 1
		all = append(all, e)
	}
	h.log.mu.Unlock()
	var rebuilt Conversation
	rebuilt.Add(FromSummary(all)...)
	got := rebuilt.Messages()
	if !strings.HasPrefix(got[0].Content, "<conversation_summary>") || !strings.Contains(got[1].Content, "#1007") || got[len(got)-1].Content != "done" {
		t.Errorf("rebuilt context: %d messages: %q … %q", len(got), got[0].Content, got[len(got)-1].Content)
	}
	if m := rebuilt.Marks(); len(m) != 4 || m[0] != (Mark{N: 1, Seq: 24}) {
		t.Errorf("rebuilt marks %+v", m)
	}
	if sk := rebuilt.Skills(); !slices.Equal(sk, []string{"tea"}) {
		t.Errorf("rebuilt skills %q", sk)
	}
}

// A context that stays under the thresholds is left alone.
func TestNoCompactionUnderThreshold(t *testing.T) {
	evs := history(3)
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("ok")}}
	h := newHarness(t, models{"m": p})
	tr := compactTurn(evs, agent.Memory{ContextWindow: 100000, Compaction: agent.CompactSummarize, RecentTurns: 1, WarnAt: 0.75, CompactAt: 0.9})
	if _, err := h.run(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	if k := h.log.kinds(); slices.Contains(k, event.Summary) || slices.Contains(k, event.ContextWarning) || p.calls != 1 {
		t.Errorf("events %v, %d model calls", k, p.calls)
	}
}

func TestRetrieveKeepsRecentTurns(t *testing.T) {
	evs := history(12)
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("ok")}}
	h := newHarness(t, models{"m": p})
	tr := compactTurn(evs, agent.Memory{ContextWindow: 100000, Compaction: agent.CompactRetrieve, RecentTurns: 3, WarnAt: 0.75, CompactAt: 0.9})
	if _, err := h.run(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	msgs := p.reqs[0].Messages
	if len(msgs) != 7 || !strings.Contains(msgs[0].Content, "#1010") {
		t.Errorf("%d messages, first %q", len(msgs), msgs[0].Content)
	}
	if slices.Contains(h.log.kinds(), event.Summary) {
		t.Error("retrieve mode wrote a summary")
	}
}

// A provider's context-overflow error prunes the oldest turns and retries
// once; what was left out is named in a pruned summary.
func TestOverflowPrunesAndRetries(t *testing.T) {
	evs := history(6)
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		fail(fmt.Errorf("%w: prompt is too long", model.ErrContextOverflow)), text("fits now")}}
	h := newHarness(t, models{"m": p})
	tr := compactTurn(evs, agent.Memory{ContextWindow: 100000, Compaction: agent.CompactSummarize, RecentTurns: 2, WarnAt: 0.75, CompactAt: 0.9})
	tr.Agent.Model.Retries = 1
	end, err := h.run(context.Background(), tr)
	if err != nil || end.Reply != "fits now" {
		t.Fatalf("end %+v err %v", end, err)
	}
	var sum event.SummaryData
	if !h.log.decoded(event.Summary, &sum) || !sum.Pruned || !strings.Contains(sum.Text, "#1001") {
		t.Fatalf("summary %+v", sum)
	}
	if len(p.reqs[1].Messages) >= len(p.reqs[0].Messages) {
		t.Errorf("retry sent %d messages, first try %d", len(p.reqs[1].Messages), len(p.reqs[0].Messages))
	}
}

// The identifier corpus: what a summary must not lose (each found whole,
// never a piece of it) and what is not an identifier.
func TestMissingIdentifiers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msgs    []model.Message
		summary string
		missing []string // found and missing from the summary
		not     []string // not reported: in the summary, a piece of a longer identifier, or no identifier
	}{
		{
			name: "ids, paths, dates, amounts, quotes",
			msgs: []model.Message{
				{Role: model.RoleUser, Content: "Hi. My colleague Grace Hopper needs ticket OPS-42 and build 3f9c0a17be21 from https://ci.example.com/b/77 at ~/work/agentd/main.go by 2026-11-30, budget 1,250.50 for \"Project Falcon\"."},
				{Role: model.RoleAssistant, Content: "Sure.", ToolCalls: []model.ToolCall{{Name: "fetch", Args: []byte(`{"id":"deadbeef-1234-5678-9abc-def012345678"}`)}}},
			},
			summary: "Grace Hopper asked about OPS-42.",
			missing: []string{"3f9c0a17be21", "https://ci.example.com/b/77", "~/work/agentd/main.go", "2026-11-30", "1,250.50", `"Project Falcon"`, "deadbeef-1234-5678-9abc-def012345678"},
			not:     []string{"Grace Hopper", "OPS-42", "Hi", "Sure", "ci.example.com", "main.go", "1234-5678"},
		},
		{
			name: "hyphenated, dotted and mixed-case identifiers whole",
			msgs: []model.Message{
				{Role: model.RoleUser, Content: "Ship Project-X42 to eu-west-1 with release v1.2.3-rc1 of api.v2.example once getUserById and the GitHub app pass; ask Jean-Luc about node-7."},
				{Role: model.RoleTool, Content: "deployed svc.payments.internal as build-2026a (h264 encoder, gpt4o-mini)"},
			},
			summary: "Ship it once tests pass.",
			missing: []string{"Project-X42", "eu-west-1", "v1.2.3-rc1", "api.v2.example", "getUserById", "GitHub", "Jean-Luc", "node-7",
				"svc.payments.internal", "build-2026a", "h264", "gpt4o-mini"},
			not: []string{"Project", "X42", "1.2.3", "v1.2", "west-1", "payments.internal", "Ship", "deployed"},
		},
		{
			name: "plain words are not identifiers",
			msgs: []model.Message{
				{Role: model.RoleUser, Content: "It is a well-known follow-up, e.g. at 10am on the 1st, with 5GB and 100ms to spare."},
			},
			not: []string{"well-known", "follow-up", "e.g", "10am", "1st", "5GB", "100ms"},
		},
		{
			name:    "kept in the summary",
			msgs:    []model.Message{{Role: model.RoleUser, Content: "Use Project-X42 and config.prod.yaml."}},
			summary: "The user works on Project-X42 with config.prod.yaml.",
			not:     []string{"Project-X42", "config.prod.yaml", "Project", "prod.yaml"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := missingIdentifiers(tc.msgs, tc.summary)
			for _, want := range tc.missing {
				if !slices.Contains(got, want) {
					t.Errorf("missing %q from %q", want, got)
				}
			}
			for _, not := range tc.not {
				if slices.Contains(got, not) {
					t.Errorf("%q reported missing: %q", not, got)
				}
			}
		})
	}
}

type recaller struct{ deg string }

func (r recaller) Recall(ctx context.Context, agentID, query string, k int, shared bool) ([]string, string, error) {
	return []string{fmt.Sprintf("%s likes green tea (k=%d, shared=%v, q=%s)", agentID, k, shared, query)}, r.deg, nil
}

func TestRecallInContext(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("ok")}}
	h := newHarness(t, models{"m": p})
	h.eng.o.Recall = recaller{deg: "lexical only: the embedder is unreachable"}
	if _, err := h.run(context.Background(), turn(&agent.Definition{Memory: agent.Memory{Recall: 3, Shared: true}})); err != nil {
		t.Fatal(err)
	}
	if sys := p.reqs[0].System; !strings.Contains(sys, "a likes green tea (k=3, shared=true, q=hello)") {
		t.Errorf("system prompt:\n%s", sys)
	}
	var m event.MarkerData
	if !h.log.decoded(event.Marker, &m) || m.Name != "recall_degraded" || !strings.Contains(m.Reason, "unreachable") {
		t.Errorf("marker %+v", m)
	}
}

// A model whose vocabulary agentd embeds is counted exactly before the
// provider reports any usage, which calibrates the estimate.
func TestExactCountCalibrates(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){func(*model.Request) (*model.Response, error) {
		return &model.Response{Text: "ok"}, nil // no usage reported
	}}}
	h := newHarness(t, models{"gpt-4o-mini": p})
	def := &agent.Definition{Model: agent.Model{Provider: "openai", Name: "gpt-4o-mini"}}
	if _, err := h.run(context.Background(), turn(def)); err != nil {
		t.Fatal(err)
	}
	r, ok := h.eng.calib.Ratio("gpt-4o-mini")
	if !ok || r <= 0.4 || r >= 2.5 {
		t.Errorf("ratio %v, %v", r, ok)
	}
	if _, ok := h.eng.calib.Ratio("m"); ok {
		t.Error("a model without a known vocabulary was calibrated")
	}
}
