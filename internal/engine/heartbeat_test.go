package engine

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/skill"
	"agentd/internal/tokens"
)

// beatPrompt is a heartbeat's prompt, as the job Runner sends it.
const beatPrompt = "Look around.\n\nIf nothing needs attention, answer exactly HEARTBEAT_OK and nothing else."

// beat returns a heartbeat's turn: its input, then the events after it,
// then its end with reply.
func beat(turn int64, reply string, middle ...event.Event) []event.Event {
	evs := []event.Event{ev(turn, event.Input, event.InputData{Text: beatPrompt, Source: event.SourceHeartbeat, Origin: "job:hb"})}
	evs = append(evs, middle...)
	if reply != "" {
		evs = append(evs, ev(turn, event.Text, event.TextData{Text: reply, Step: len(middle) + 1}))
	}
	return append(evs, ev(turn, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: reply}))
}

// talk returns a person's finished turn.
func talk(turn int64, in, reply string) []event.Event {
	return []event.Event{
		ev(turn, event.Input, event.InputData{Text: in, Source: "cli"}),
		ev(turn, event.Text, event.TextData{Text: reply, Step: 1}),
		ev(turn, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: reply}),
	}
}

// numbered returns the turns' events in order, with sequence numbers
// from 1.
func numbered(turns ...[]event.Event) []event.Event {
	evs := slices.Concat(turns...)
	for i := range evs {
		evs[i].Seq = int64(i + 1)
	}
	return evs
}

// A heartbeat's turn that ends with HEARTBEAT_OK is left out of the
// conversation, tool calls and all, with its turn boundary; one with
// anything else to say, one that did not end done, a person's message
// that says HEARTBEAT_OK and the heartbeat under way are kept.
func TestQuietHeartbeats(t *testing.T) {
	args := json.RawMessage(`{}`)
	user := func(s string) model.Message { return model.Message{Role: model.RoleUser, Content: s} }
	assistant := func(s string) model.Message { return model.Message{Role: model.RoleAssistant, Content: s} }
	tests := []struct {
		name  string
		evs   []event.Event
		want  []model.Message
		marks []Mark
	}{
		{
			name:  "quiet pair dropped",
			evs:   numbered(talk(1, "hi", "hello"), beat(2, "HEARTBEAT_OK"), talk(3, "and now?", "now this")),
			want:  []model.Message{user("hi"), assistant("hello"), user("and now?"), assistant("now this")},
			marks: []Mark{{N: 2, Seq: 3}, {N: 4, Seq: 9}},
		},
		{
			name:  "white space around the answer aside",
			evs:   numbered(talk(1, "hi", "hello"), beat(2, "\n HEARTBEAT_OK \n")),
			want:  []model.Message{user("hi"), assistant("hello")},
			marks: []Mark{{N: 2, Seq: 3}},
		},
		{
			name: "tool calls of a quiet heartbeat go with it",
			evs: numbered(beat(1, "HEARTBEAT_OK",
				ev(1, event.ToolCall, event.ToolCallData{ID: "c1", Name: "clock", Args: args, Step: 1}),
				ev(1, event.ToolResult, event.ToolResultData{ID: "c1", Name: "clock", Output: "noon"}),
			), talk(2, "hi", "hello")),
			want:  []model.Message{user("hi"), assistant("hello")},
			marks: []Mark{{N: 2, Seq: 8}},
		},
		{
			name:  "real answer kept",
			evs:   numbered(talk(1, "hi", "hello"), beat(2, "The disk is full.")),
			want:  []model.Message{user("hi"), assistant("hello"), user(beatPrompt), assistant("The disk is full.")},
			marks: []Mark{{N: 2, Seq: 3}, {N: 4, Seq: 6}},
		},
		{
			name:  "an answer that only starts with HEARTBEAT_OK kept",
			evs:   numbered(beat(1, "HEARTBEAT_OK, but the disk is full")),
			want:  []model.Message{user(beatPrompt), assistant("HEARTBEAT_OK, but the disk is full")},
			marks: []Mark{{N: 2, Seq: 3}},
		},
		{
			name:  "a person's turn that says HEARTBEAT_OK kept: not a heartbeat's input",
			evs:   numbered(talk(1, "say HEARTBEAT_OK", "HEARTBEAT_OK")),
			want:  []model.Message{user("say HEARTBEAT_OK"), assistant("HEARTBEAT_OK")},
			marks: []Mark{{N: 2, Seq: 3}},
		},
		{
			name: "a heartbeat that did not end done kept",
			evs: numbered([]event.Event{
				ev(1, event.Input, event.InputData{Text: beatPrompt, Source: event.SourceHeartbeat}),
				ev(1, event.Text, event.TextData{Text: "HEARTBEAT_OK", Step: 1}),
				ev(1, event.TurnEnd, event.TurnEndData{Status: event.StatusBudget, Reply: "HEARTBEAT_OK"}),
			}),
			want:  []model.Message{user(beatPrompt), assistant("HEARTBEAT_OK")},
			marks: []Mark{{N: 2, Seq: 3}},
		},
		{
			name: "the heartbeat under way is in its own context",
			evs: numbered(talk(1, "hi", "hello"), []event.Event{
				ev(2, event.Input, event.InputData{Text: beatPrompt, Source: event.SourceHeartbeat}),
				ev(2, event.Text, event.TextData{Text: "HEARTBEAT_OK", Step: 1}),
			}),
			want:  []model.Message{user("hi"), assistant("hello"), user(beatPrompt), assistant("HEARTBEAT_OK")},
			marks: []Mark{{N: 2, Seq: 3}},
		},
		{
			name: "another turn's message inside a heartbeat's keeps it",
			evs: numbered(beat(1, "HEARTBEAT_OK",
				ev(7, event.SystemMessage, event.InputData{Text: "note", Origin: "ops", Silent: true}),
			)),
			want:  []model.Message{user(beatPrompt), user(`<system_message origin="ops">note</system_message>`), assistant("HEARTBEAT_OK")},
			marks: []Mark{{N: 3, Seq: 4}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Conversation
			c.Add(tt.evs...)
			if diff := cmp.Diff(tt.want, c.Messages()); diff != "" {
				t.Errorf("Messages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.marks, c.Marks()); diff != "" {
				t.Errorf("Marks (-want +got):\n%s", diff)
			}
		})
	}
}

// A conversation kept up to date event by event leaves a quiet heartbeat
// out without changing a message it returned before, and its token
// estimates, size and loaded skills go back to what they were before the
// heartbeat.
func TestQuietHeartbeatIncremental(t *testing.T) {
	loadTea := json.RawMessage(`{"name":"tea"}`)
	evs := numbered(talk(1, "hi", "hello"), beat(2, "HEARTBEAT_OK",
		ev(2, event.ToolCall, event.ToolCallData{ID: "s1", Name: skill.ToolName, Args: loadTea, Step: 1}),
		ev(2, event.ToolResult, event.ToolResultData{ID: "s1", Name: skill.ToolName, Output: "# Tea"}),
	), talk(3, "again", "sure"))
	var c Conversation
	var held [][]model.Message
	var before int
	for i := range evs {
		c.Add(evs[i])
		if evs[i].Turn == 1 && evs[i].Kind == event.TurnEnd {
			before = c.Size()
		}
		if evs[i].Turn == 2 && evs[i].Kind == event.ToolResult && !slices.Equal(c.Skills(), []string{"tea"}) {
			t.Errorf("the heartbeat under way loaded %q", c.Skills())
		}
		if evs[i].Turn == 2 && evs[i].Kind == event.TurnEnd {
			if c.Size() != before || len(c.Skills()) != 0 {
				t.Errorf("after the quiet heartbeat: size %d (before it %d), skills %q", c.Size(), before, c.Skills())
			}
		}
		held = append(held, slices.Clone(c.Messages()))
		got, msgs := c.Tokens(), c.b.msgs
		if len(got) != len(msgs) {
			t.Fatalf("after %d events: %d sizes for %d messages", i+1, len(got), len(msgs))
		}
		for j := range msgs {
			if want := tokens.Message(&msgs[j]); got[j] != want {
				t.Fatalf("after %d events: message %d sized %d, want %d", i+1, j, got[j], want)
			}
		}
	}
	// Every conversation returned is as it was returned: the messages
	// after the heartbeat were not written over it.
	var again Conversation
	for i := range evs {
		again.Add(evs[i])
		msgs := again.Messages()
		if i < len(held) {
			if diff := cmp.Diff(held[i], msgs); diff != "" {
				t.Fatalf("after %d events (-held +again):\n%s", i+1, diff)
			}
		}
	}
	if diff := cmp.Diff(Messages(numbered(talk(1, "hi", "hello"), talk(3, "again", "sure"))), c.Messages()); diff != "" {
		t.Errorf("final (-want +got):\n%s", diff)
	}
}

// The held slices of a conversation: a message returned by Messages
// before a quiet heartbeat was left out is not changed by the messages
// added after it.
func TestQuietHeartbeatLeavesReturnedMessages(t *testing.T) {
	var c Conversation
	c.Add(numbered(talk(1, "hi", "hello"))...)
	c.Add(beat(2, "")[0]) // the heartbeat's input
	c.Add(ev(2, event.Text, event.TextData{Text: "HEARTBEAT_OK", Step: 1}))
	held := c.Messages()
	kept := slices.Clone(held)
	c.Add(ev(2, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: "HEARTBEAT_OK"}))
	c.Add(talk(3, "next", "answer")...)
	if diff := cmp.Diff(kept, held); diff != "" {
		t.Errorf("a returned conversation changed (-before +after):\n%s", diff)
	}
}

// Compaction summarizes no quiet heartbeat: the turns it folds, as the
// summary model reads them, hold no heartbeat prompt nor HEARTBEAT_OK,
// and the turns it keeps are counted without them.
func TestCompactionFoldsNoQuietHeartbeat(t *testing.T) {
	var turns [][]event.Event
	for _, e := range history(8) {
		if e.Kind == event.Input {
			turns = append(turns, nil)
		}
		e.Turn = int64(2 * len(turns))
		turns[len(turns)-1] = append(turns[len(turns)-1], e)
		if e.Kind == event.TurnEnd {
			turns = append(turns, beat(int64(2*len(turns)+1), "HEARTBEAT_OK"))
		}
	}
	evs := numbered(turns...)
	var c Conversation
	c.Add(evs...)
	size := tokens.Messages(c.Messages())
	p := &script{resps: []func(*model.Request) (*model.Response, error){text("The user filed several orders for Ada."), text("done")}}
	h := newHarness(t, models{"m": p})
	tr := compactTurn(evs, agent.Memory{ContextWindow: size, Compaction: agent.CompactSummarize, RecentTurns: 2, WarnAt: 0.75, CompactAt: 0.9})
	end, err := h.run(context.Background(), tr)
	if err != nil || end.Status != event.StatusDone || end.Reply != "done" {
		t.Fatalf("end %+v err %v", end, err)
	}
	var sum event.SummaryData
	if !h.log.decoded(event.Summary, &sum) {
		t.Fatalf("no summary: %v", h.log.kinds())
	}
	// Six person's turns folded (twelve messages), none of the heartbeats.
	if sum.Folded != 12 {
		t.Errorf("summary %+v", sum)
	}
	for i, req := range p.reqs {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, "HEARTBEAT_OK") || strings.Contains(m.Content, "Look around.") {
				t.Errorf("request %d holds a quiet heartbeat: %q", i, m.Content)
			}
		}
	}
	if !strings.Contains(p.reqs[0].Messages[0].Content, "#1006") || strings.Contains(p.reqs[0].Messages[0].Content, "#1007") {
		t.Errorf("summary request %q", p.reqs[0].Messages[0].Content)
	}
}
