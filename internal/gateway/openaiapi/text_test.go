package openaiapi

import (
	"strings"
	"testing"

	"agentd/internal/event"
)

func delta(step, attempt int, s string) event.Event {
	return event.New(1, 1, event.TextDelta, event.DeltaData{Text: s, Step: step, Attempt: attempt})
}

func logged(step int, s string) event.Event {
	return event.New(1, 1, event.Text, event.TextData{Text: s, Step: step})
}

// The answer streamed from a turn's events is each step's text once,
// whether its deltas all came, some came or none did.
func TestText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		live  bool
		evs   []event.Event
		reply string
		want  string
	}{
		{name: "deltas then text", live: true, evs: []event.Event{delta(1, 1, "Hel"), delta(1, 1, "lo"), logged(1, "Hello")}, want: "Hello"},
		{name: "some deltas missed", live: true, evs: []event.Event{delta(1, 1, "Hel"), logged(1, "Hello world")}, want: "Hello world"},
		{name: "no deltas", live: true, evs: []event.Event{logged(1, "Hello")}, want: "Hello"},
		{name: "late deltas", live: true, evs: []event.Event{logged(1, "Hello"), delta(1, 1, "Hel"), delta(1, 1, "lo")}, want: "Hello"},
		{name: "steps", live: true, evs: []event.Event{delta(1, 1, "Let me look."), logged(1, "Let me look."), delta(2, 1, "Found"), delta(2, 1, " it."), logged(2, "Found it.")},
			want: "Let me look.\n\nFound it."},
		{name: "steps from the log", live: true, evs: []event.Event{logged(1, "Let me look."), logged(2, "Found it.")}, want: "Let me look.\n\nFound it."},
		{name: "a step without text", live: true, evs: []event.Event{delta(1, 1, "A"), logged(1, "A"), delta(3, 1, "B"), logged(3, "B")}, want: "A\n\nB"},
		{name: "a later step's deltas first", live: true, evs: []event.Event{delta(1, 1, "A"), delta(2, 1, "B"), logged(1, "A"), logged(2, "B")}, want: "A\n\nB"},
		{name: "reasoning", live: true, evs: []event.Event{event.New(1, 1, event.TextDelta, event.DeltaData{Text: "hmm", Reasoning: true, Step: 1, Attempt: 1}), logged(1, "Yes")}, want: "Yes"},
		{name: "retry of a step", live: true, evs: []event.Event{delta(1, 1, "Hel"), delta(1, 2, "Hello"), logged(1, "Hello")}, want: "HelHello"},
		{name: "not live", evs: []event.Event{delta(1, 1, "Hel"), logged(1, "Hello"), logged(2, "Bye")}, want: "Hello\n\nBye"},
		{name: "reply only", live: true, reply: "compacted", want: "compacted"},
		{name: "reply after text", live: true, evs: []event.Event{logged(1, "Hi")}, reply: "Hi", want: "Hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			tx := text{live: tc.live, emit: func(s string) error { b.WriteString(s); return nil }}
			for _, e := range tc.evs {
				if err := tx.event(e); err != nil {
					t.Fatal(err)
				}
			}
			tx.finish(event.TurnEndData{Status: event.StatusDone, Reply: tc.reply})
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

func TestFinishReason(t *testing.T) {
	for _, tc := range []struct {
		status, stop string
		want         string
		code         string
		httpStatus   int
	}{
		{status: event.StatusDone, stop: "stop", want: "stop"},
		{status: event.StatusDone, stop: "end_turn", want: "stop"},
		{status: event.StatusDone, stop: "length", want: "length"},
		{status: event.StatusDone, stop: "max_tokens", want: "length"},
		{status: event.StatusDone, stop: "content_filter", want: "content_filter"},
		{status: event.StatusBudget, want: "length"},
		{status: event.StatusCancelled, code: "turn_cancelled", httpStatus: 409},
		{status: event.StatusInterrupted, code: "turn_interrupted", httpStatus: 409},
		{status: event.StatusError, code: "turn_failed", httpStatus: 502},
		{status: "something new", code: "turn_failed", httpStatus: 502},
	} {
		got, err := finishReason(event.TurnEndData{Status: tc.status, Reason: "why\x1b[31m\nnot"}, tc.stop)
		if tc.code == "" {
			if err != nil || got != tc.want {
				t.Errorf("%s/%s: %q %v, want %q", tc.status, tc.stop, got, err, tc.want)
			}
			continue
		}
		if err == nil || err.code != tc.code || err.status != tc.httpStatus || strings.ContainsAny(err.message, "\x1b\n") {
			t.Errorf("%s: %+v, want %s %d with a clean message", tc.status, err, tc.code, tc.httpStatus)
		}
	}
}
