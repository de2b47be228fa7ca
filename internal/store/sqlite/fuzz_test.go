package sqlite_test

import (
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
)

// FuzzSearchText feeds arbitrary FTS5 queries to SearchText: each must give
// results or an error, never a panic, and results only of indexed kinds.
func FuzzSearchText(f *testing.F) {
	for _, q := range []string{
		"paris", `"at noon"`, "sunny OR café", "lov*", "NEAR(paris sunny, 3)", "paris NOT sunny",
		"text:paris", "^paris", "(", `"`, "*", "AND", "a AND (b OR", "\x00", "col:", "{text}: x",
	} {
		f.Add(q)
	}
	s := newStore(f)
	sess := mustSession(f, s, "assistant", "chat:alice")
	mustCommit(f, s, &store.Batch{Session: sess.ID, Events: []event.Event{
		input(0, 1, "What is the weather in Paris?"),
		text(0, 1, "Paris is sunny; the café opens at noon."),
		event.New(0, 1, event.ToolResult, event.ToolResultData{Output: "paris sunny"}),
	}})
	f.Fuzz(func(t *testing.T, query string) {
		evs, err := s.SearchText(t.Context(), query, 10)
		if err != nil {
			return
		}
		for _, e := range evs {
			if e.Kind != event.Input && e.Kind != event.Text {
				t.Errorf("SearchText(%q) returned a %s event", query, e.Kind)
			}
		}
		if len(evs) > 2 {
			t.Errorf("SearchText(%q) returned %d events; only 2 are indexed", query, len(evs))
		}
	})
}
