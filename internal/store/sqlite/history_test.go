package sqlite_test

import (
	"errors"
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// FuzzSearchHistory feeds arbitrary user text to SearchHistory: the
// sanitised query is never an FTS5 syntax error; the only refusal is a
// text without words.
func FuzzSearchHistory(f *testing.F) {
	for _, q := range []string{
		"paris", `"at noon"`, "sunny OR café", "lov*", "NEAR(paris sunny, 3)", "paris NOT sunny", "text:paris", "^paris",
		"(", `"`, "*", "AND", "a AND (b OR", "\x00", "col:", "{text}: x", "a\"b", "ｆｕｌｌ", "日本語", "x* * y**", "é̀",
	} {
		f.Add(q)
	}
	s := newStore(f)
	sess := mustSession(f, s, "assistant", "chat:alice")
	mustCommit(f, s, &store.Batch{Session: sess.ID, Events: []event.Event{
		input(0, 1, "What is the weather in Paris?"),
		text(0, 1, "Paris is sunny; the café opens at noon. 日本語"),
	}})
	f.Fuzz(func(t *testing.T, query string) {
		hits, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: query, Agents: []string{"assistant"}})
		if errors.Is(err, sqlite.ErrInvalid) {
			return
		}
		if err != nil {
			t.Fatalf("SearchHistory(%q): %v", query, err)
		}
		if len(hits) > 2 {
			t.Errorf("SearchHistory(%q) returned %d hits; only 2 are indexed", query, len(hits))
		}
	})
}
