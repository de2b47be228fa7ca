package sqlite_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
)

// The context starts after the last reset, and from the latest summary
// since then: the summary, then the events after the last one it folds.
func TestContextEventsFromSummary(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
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
