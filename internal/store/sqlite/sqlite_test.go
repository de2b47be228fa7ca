package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

func openStore(t testing.TB, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t testing.TB) *sqlite.Store {
	t.Helper()
	return openStore(t, filepath.Join(t.TempDir(), "agentd.db"))
}

func mustSession(t testing.TB, s *sqlite.Store, agent, key string) store.Session {
	t.Helper()
	sess, _, err := s.Session(t.Context(), agent, key)
	if err != nil {
		t.Fatalf("Session(%q, %q): %v", agent, key, err)
	}
	return sess
}

func mustCommit(t testing.TB, s *sqlite.Store, b *store.Batch) {
	t.Helper()
	if err := s.Commit(t.Context(), b); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func input(session, turn int64, text string) event.Event {
	return event.New(session, turn, event.Input, event.InputData{Text: text, Source: "cli"})
}

func text(session, turn int64, s string) event.Event {
	return event.New(session, turn, event.Text, event.TextData{Text: s})
}

// userVersion reads the schema version with a connection of its own.
func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpenFreshAndExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	ctx := t.Context()
	s, err := sqlite.Open(ctx, path, &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	sess := mustSession(t, s, "assistant", "chat:alice")
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{input(sess.ID, 0, "hello")}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	fresh := userVersion(t, path)
	if fresh < 1 {
		t.Fatalf("user_version after the first Open = %d, want >= 1", fresh)
	}

	s = openStore(t, path)
	if got := userVersion(t, path); got != fresh {
		t.Errorf("user_version after reopening = %d, want %d", got, fresh)
	}
	got, err := s.Events(ctx, sess.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Seq != 1 {
		t.Fatalf("events after reopening = %+v, want the one committed", got)
	}
	if res, err := s.IntegrityCheck(ctx); err != nil || res != "ok" {
		t.Errorf("IntegrityCheck = %q, %v; want ok", res, err)
	}
}

func TestOpenNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	s, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 1000"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = sqlite.Open(t.Context(), path, nil)
	if !errors.Is(err, sqlite.ErrSchemaTooNew) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("Open of a newer database: %v, want ErrSchemaTooNew", err)
	}
}

func TestOpenBadArguments(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		path string
		opts *sqlite.Options
	}{
		{"empty path", "", nil},
		{"memory", ":memory:", nil},
		{"uri", "file:x.db", nil},
		{"bad synchronous", filepath.Join(dir, "a.db"), &sqlite.Options{Synchronous: "off"}},
		{"negative batch", filepath.Join(dir, "b.db"), &sqlite.Options{MaxBatch: -1}},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "c.db"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlite.Open(t.Context(), tc.path, tc.opts)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
		})
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%d e.db")
	s := openStore(t, path)
	mustSession(t, s, "a", "k")
	s.Close()
	s = openStore(t, path)
	if _, err := s.SessionByAddress(t.Context(), "a", "k"); err != nil {
		t.Fatalf("session lost on reopening %q: %v", path, err)
	}
}

func TestSearchText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	s := openStore(t, path)
	ctx := t.Context()
	a := mustSession(t, s, "assistant", "chat:alice")
	b := mustSession(t, s, "assistant", "chat:bob")
	mustCommit(t, s, &store.Batch{Session: a.ID, Events: []event.Event{
		input(0, 1, "What is the weather in Paris today?"),                                         // 1
		text(0, 1, "Paris is sunny. Paris in spring is lovely; Paris, Paris!"),                     // 2
		event.New(0, 1, event.ToolResult, event.ToolResultData{ID: "c", Output: "zanzibar paris"}), // 3: not indexed
		event.New(0, 1, event.Thought, event.TextData{Text: "zanzibar"}),                           // 4: not indexed
	}})
	mustCommit(t, s, &store.Batch{Session: b.ID, Events: []event.Event{
		event.New(0, 2, event.SystemMessage, event.InputData{Text: "Reminder: café at noon"}), // 1
		text(0, 2, "Noted, the café at noon."),                                                // 2
	}})

	type hit struct {
		Session, Seq int64
	}
	hits := func(evs []event.Event) []hit {
		out := []hit{}
		for _, e := range evs {
			out = append(out, hit{e.Session, e.Seq})
		}
		return out
	}
	for _, tc := range []struct {
		query   string
		limit   int
		ordered bool // whether the order of want is the BM25 order
		want    []hit
	}{
		{"paris", 0, true, []hit{{a.ID, 2}, {a.ID, 1}}}, // the text that says Paris five times ranks first
		{"paris", 1, true, []hit{{a.ID, 2}}},
		{"weather paris", 0, true, []hit{{a.ID, 1}}},
		{"cafe", 0, false, []hit{{b.ID, 1}, {b.ID, 2}}}, // diacritics folded
		{`"at noon"`, 0, false, []hit{{b.ID, 1}, {b.ID, 2}}},
		{"zanzibar", 0, true, []hit{}},
		{"lov*", 0, true, []hit{{a.ID, 2}}},
		{"sunny OR reminder", 0, false, []hit{{a.ID, 2}, {b.ID, 1}}},
	} {
		got, err := s.SearchText(ctx, tc.query, tc.limit)
		if err != nil {
			t.Fatalf("SearchText(%q): %v", tc.query, err)
		}
		var opts []cmp.Option
		if !tc.ordered {
			opts = append(opts, cmpopts.SortSlices(func(x, y hit) bool {
				return x.Session < y.Session || x.Session == y.Session && x.Seq < y.Seq
			}))
		}
		if diff := cmp.Diff(tc.want, hits(got), opts...); diff != "" {
			t.Errorf("SearchText(%q, %d) (-want +got):\n%s", tc.query, tc.limit, diff)
		}
	}
	got, _ := s.SearchText(ctx, "weather", 0)
	if len(got) != 1 || got[0].Kind != event.Input {
		t.Fatalf("SearchText(weather) = %+v", got)
	}
	var in event.InputData
	if err := got[0].Decode(&in); err != nil || in.Text != "What is the weather in Paris today?" {
		t.Errorf("found event decodes to %+v, %v", in, err)
	}

	for _, bad := range []string{"", "   ", `"unbalanced`, "AND"} {
		if _, err := s.SearchText(ctx, bad, 0); err == nil {
			t.Errorf("SearchText(%q) succeeded, want an error", bad)
		}
	}

	// The index is durable like the events.
	s.Close()
	s = openStore(t, path)
	if got, err := s.SearchText(ctx, "cafe", 0); err != nil || len(got) != 2 {
		t.Errorf("after reopening SearchText(cafe) = %d hits, %v", len(got), err)
	}
}
