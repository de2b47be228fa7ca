package storetest

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
)

// The context starts after the last reset, and from the latest summary
// since then: the summary, then the events after the last one it folds.
func testContextEventsFromSummary(t *testing.T, x *suite) {
	ctx := context.Background()
	s := x.newStore(t)
	sess, _, err := s.Session(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	commit := func(kind event.Kind, v any) {
		t.Helper()
		if err := s.Commit(ctx, &store.Batch{Session: sess.ID, Events: []event.Event{event.New(sess.ID, 0, kind, v)}}); err != nil {
			t.Fatal(err)
		}
	}
	seqs := func() []int64 {
		evs, err := s.ContextEvents(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, e := range evs {
			out = append(out, e.Seq)
		}
		return out
	}
	for i := 0; i < 3; i++ {
		commit(event.Input, event.InputData{Text: "x"}) // 1, 2, 3
	}
	commit(event.Reset, event.MarkerData{Name: "reset"}) // 4
	for i := 0; i < 6; i++ {
		commit(event.Input, event.InputData{Text: "y"}) // 5 … 10
	}
	if diff := cmp.Diff([]int64{5, 6, 7, 8, 9, 10}, seqs()); diff != "" {
		t.Errorf("after a reset (-want +got):\n%s", diff)
	}
	commit(event.Summary, event.SummaryData{Text: "s1", Through: 7}) // 11
	commit(event.Input, event.InputData{Text: "z"})                  // 12
	if diff := cmp.Diff([]int64{8, 9, 10, 11, 12}, seqs()); diff != "" {
		t.Errorf("after a summary (-want +got):\n%s", diff)
	}
	commit(event.Summary, event.SummaryData{Text: "s2", Through: 10}) // 13
	if diff := cmp.Diff([]int64{12, 13}, seqs()); diff != "" {
		t.Errorf("after a second summary (-want +got):\n%s", diff)
	}
	commit(event.Reset, event.MarkerData{Name: "reset"}) // 14
	commit(event.Input, event.InputData{Text: "w"})      // 15
	if diff := cmp.Diff([]int64{15}, seqs()); diff != "" {
		t.Errorf("a reset after summaries (-want +got):\n%s", diff)
	}
}

// A long context is read in parallel ranges; the result is the log's
// conversation events in order, none missing or doubled, with the summary
// in its place, whatever the ranges' boundaries.
func testContextEventsLongSession(t *testing.T, x *suite) {
	ctx := context.Background()
	s := x.newStore(t)
	sess, _, err := s.Session(ctx, "a", "long")
	if err != nil {
		t.Fatal(err)
	}
	kinds := []event.Kind{event.Input, event.ModelCall, event.ToolCall, event.ToolResult, event.Lifecycle, event.Text, event.TurnEnd}
	var evs []event.Event
	for i := range 7001 {
		k := kinds[i%len(kinds)]
		var e event.Event
		switch k {
		case event.ToolCall:
			e = event.New(sess.ID, int64(i/7+1), k, event.ToolCallData{ID: "c", Name: "t", Args: []byte(`{}`)})
		default:
			e = event.New(sess.ID, int64(i/7+1), k, event.TextData{Text: "event"})
		}
		evs = append(evs, e)
		if i == 4000 {
			evs = append(evs, event.New(sess.ID, 0, event.Summary, event.SummaryData{Text: "so far", Through: 3500}))
		}
	}
	if err := s.Commit(ctx, &store.Batch{Session: sess.ID, Events: evs}); err != nil {
		t.Fatal(err)
	}
	all, err := s.Events(ctx, sess.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for _, e := range all {
		switch e.Kind {
		case event.Summary:
			want = append(want, e.Seq)
		case event.Input, event.ToolCall, event.ToolResult, event.Text, event.TurnEnd:
			if e.Seq > 3500 {
				want = append(want, e.Seq)
			}
		}
	}
	got, err := s.ContextEvents(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range got {
		seqs = append(seqs, e.Seq)
		if e.Session != sess.ID || e.Time.IsZero() || len(e.Data) == 0 {
			t.Fatalf("event %d incomplete: %+v", e.Seq, e)
		}
	}
	if diff := cmp.Diff(want, seqs); diff != "" {
		t.Errorf("context seqs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(all[len(all)-1], got[len(got)-1]); diff != "" {
		t.Errorf("last event differs from the log's (-log +context):\n%s", diff)
	}
}
