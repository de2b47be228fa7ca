package storetest

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
)

func at(session int64, kind event.Kind, text string, t time.Time) event.Event {
	var e event.Event
	if kind == event.Text {
		e = event.New(session, 1, kind, event.TextData{Text: text})
	} else {
		e = event.New(session, 1, kind, event.InputData{Text: text})
	}
	e.Time = t
	return e
}

func keys(hits []store.HistoryHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Agent + "/" + h.Key + "#" + strconv.FormatInt(h.Event.Seq, 10)
	}
	return out
}

func testSearchHistoryRankingScopeAndSnippets(t *testing.T, x *suite) {
	s := x.newStore(t)
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	a := mustSession(t, s, "alice", "chat:1")
	b := mustSession(t, s, "bob", "chat:1")
	mustCommit(t, s, &store.Batch{Session: a.ID, Events: []event.Event{
		at(0, event.Input, "The postgres migration failed again with a lock timeout.", base),
		at(0, event.Text, "Postgres postgres postgres: the migration holds a lock.", base.Add(time.Minute)),
		at(0, event.Input, "Nothing to see here about gardens.", base.Add(2*time.Minute)),
		event.New(0, 1, event.ToolResult, event.ToolResultData{Output: "postgres migration"}),
	}})
	mustCommit(t, s, &store.Batch{Session: b.ID, Events: []event.Event{
		at(0, event.Input, "Bob's postgres migration secret.", base),
	}})
	hits, next, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: "postgres MIGRATION", Agents: []string{"alice"}})
	if err != nil {
		t.Fatal(err)
	}
	if next != "" {
		t.Errorf("next = %q, want none", next)
	}
	// The text repeating the word ranks first; bob's and the tool result never appear.
	if diff := cmp.Diff([]string{"alice/chat:1#2", "alice/chat:1#1"}, keys(hits)); diff != "" {
		t.Errorf("hits (-want +got):\n%s", diff)
	}
	if hits[0].Score <= hits[1].Score || hits[1].Score <= 0 {
		t.Errorf("scores %v, %v: want positive, best first", hits[0].Score, hits[1].Score)
	}
	if want := "The «postgres» «migration» failed again with a lock timeout."; hits[1].Snippet != want {
		t.Errorf("snippet = %q, want %q", hits[1].Snippet, want)
	}
	all, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: "postgres migration"})
	if err != nil || len(all) != 3 {
		t.Errorf("all agents: %d hits, %v; want 3", len(all), err)
	}
	// Query syntax is text: OR, NOT, quotes, parentheses and columns are words or nothing.
	for _, q := range []string{`postgres OR garden`, `"postgres`, `text:postgres (`, `NOT postgres`, `postgres*`} {
		if _, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: q}); err != nil {
			t.Errorf("SearchHistory(%q): %v", q, err)
		}
	}
	if h, _, _ := s.SearchHistory(t.Context(), store.HistoryQuery{Query: "postg* migr*", Agents: []string{"alice"}}); len(h) != 2 {
		t.Errorf("prefix search: %d hits, want 2", len(h))
	}
	if _, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: " ?! "}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a query without words: %v, want ErrInvalid", err)
	}
}

func testSearchHistorySnippetWindow(t *testing.T, x *suite) {
	s := x.newStore(t)
	sess := mustSession(t, s, "alice", "chat:1")
	words := make([]string, 100)
	for i := range words {
		words[i] = "filler"
	}
	words[60] = "Café"
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{input(0, 1, strings.Join(words, " "))}})
	hits, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: "cafe"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits %v, %v", hits, err)
	}
	want := "…" + strings.Repeat("filler ", 8) + "«Café»" + strings.Repeat(" filler", 21) + " …"
	if hits[0].Snippet != want {
		t.Errorf("snippet\n got %q\nwant %q", hits[0].Snippet, want)
	}
}

func testSearchHistoryTimeRange(t *testing.T, x *suite) {
	s := x.newStore(t)
	sess := mustSession(t, s, "alice", "chat:1")
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	var evs []event.Event
	for d := range 5 {
		evs = append(evs, at(0, event.Input, "daily report", base.Add(time.Duration(d)*24*time.Hour)))
	}
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: evs})
	hits, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: "report",
		Since: base.Add(24 * time.Hour), Until: base.Add(3 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, h := range hits {
		got = append(got, h.Event.Seq)
	}
	if diff := cmp.Diff([]int64{2, 3}, got); diff != "" {
		t.Errorf("seqs in [day 1, day 3) (-want +got):\n%s", diff)
	}
}

func testSearchHistoryCursorStable(t *testing.T, x *suite) {
	s := x.newStore(t)
	sess := mustSession(t, s, "alice", "chat:1")
	var evs []event.Event
	for range 25 {
		evs = append(evs, input(0, 1, "the same deploy note"))
	}
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: evs})
	q := store.HistoryQuery{Query: "deploy", Agents: []string{"alice"}, Limit: 10}
	var seen []int64
	for page := 0; ; page++ {
		hits, next, err := s.SearchHistory(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			seen = append(seen, h.Event.Seq)
		}
		// New matching events arrive between pages.
		mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{input(0, 2, "another deploy note")}})
		if next == "" {
			break
		}
		q.Cursor = next
		if page > 5 {
			t.Fatal("paging does not end")
		}
	}
	want := make([]int64, 25)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("paged seqs (-want +got):\n%s", diff)
	}
	// A cursor is bound to its query.
	if _, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: "note", Cursor: q.Cursor}); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("cursor of another query: %v, want ErrBadCursor", err)
	}
	for _, c := range []string{"x", "h1!!", "h1", "t1AAAA"} {
		if _, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: "deploy", Cursor: c}); !errors.Is(err, store.ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
}

func testThreads(t *testing.T, x *suite) {
	s := x.newStore(t)
	var ids []int64
	for i := range 5 {
		sess := mustSession(t, s, "alice", "chat:"+string(rune('a'+i)))
		mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{
			input(0, 1, "  Hello   from\nthread "+string(rune('a'+i))),
			text(0, 1, "hi"),
			event.New(0, 1, event.TurnEnd, event.TurnEndData{Status: event.StatusDone}),
		}})
		ids = append(ids, sess.ID)
	}
	mustSession(t, s, "bob", "chat:z")
	var got []string
	var gotIDs []int64
	cursor := ""
	for {
		ts, next, err := s.Threads(t.Context(), "alice", 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, th := range ts {
			if th.Messages != 2 || !strings.HasPrefix(th.Title, "Hello from thread ") || th.LastActivity.IsZero() {
				t.Errorf("thread %+v", th)
			}
			got = append(got, th.Key)
			gotIDs = append(gotIDs, th.ID)
		}
		// A new session meanwhile does not disturb the pages.
		mustSession(t, s, "alice", "new:"+next)
		if next == "" {
			break
		}
		cursor = next
	}
	if diff := cmp.Diff([]string{"chat:e", "chat:d", "chat:c", "chat:b", "chat:a"}, got); diff != "" {
		t.Errorf("threads (-want +got):\n%s", diff)
	}
	slices.Reverse(ids)
	if diff := cmp.Diff(ids, gotIDs); diff != "" {
		t.Errorf("thread ids (-want +got):\n%s", diff)
	}
	if _, _, err := s.Threads(t.Context(), "alice", 2, "h1AAAA"); !errors.Is(err, store.ErrBadCursor) {
		t.Errorf("bad cursor: %v", err)
	}
}

func testWorkingMemory(t *testing.T, x *suite) {
	path := x.name()
	s := x.open(t, path)
	sess := mustSession(t, s, "alice", "chat:1")
	ctx := t.Context()
	for _, kv := range []struct{ k, v string }{{"plan", `{"step": 1}`}, {"city", `"Paris"`}, {"plan", `{"step":2}`}, {"tmp", `true`}} {
		if _, err := s.SetWorking(ctx, sess.ID, kv.k, json.RawMessage(kv.v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DeleteWorking(ctx, sess.ID, "tmp"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteWorking(ctx, sess.ID, "tmp"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting a missing key: %v, want ErrNotFound", err)
	}
	for _, bad := range []struct {
		k, v string
	}{{"", `1`}, {"k", `{`}, {"k\n", `1`}, {strings.Repeat("k", 300), `1`}} {
		if _, err := s.SetWorking(ctx, sess.ID, bad.k, json.RawMessage(bad.v)); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SetWorking(%q, %q): %v, want ErrInvalid", bad.k, bad.v, err)
		}
	}
	if _, err := s.SetWorking(ctx, 9999, "k", json.RawMessage(`1`)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown session: %v, want ErrNotFound", err)
	}
	s.Close()

	s = x.open(t, path)
	wm, err := s.Working(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]json.RawMessage{"plan": json.RawMessage(`{"step":2}`), "city": json.RawMessage(`"Paris"`)}
	if diff := cmp.Diff(want, wm); diff != "" {
		t.Errorf("working memory after reopen (-want +got):\n%s", diff)
	}
	evs, err := s.Events(ctx, sess.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var log []event.WorkingMemoryData
	for _, e := range evs {
		if e.Kind != event.WorkingMemory {
			t.Errorf("event %d is %s", e.Seq, e.Kind)
		}
		var d event.WorkingMemoryData
		if err := e.Decode(&d); err != nil {
			t.Fatal(err)
		}
		log = append(log, d)
	}
	wantLog := []event.WorkingMemoryData{
		{Key: "plan", Value: json.RawMessage(`{"step":1}`)}, {Key: "city", Value: json.RawMessage(`"Paris"`)},
		{Key: "plan", Value: json.RawMessage(`{"step":2}`)}, {Key: "tmp", Value: json.RawMessage(`true`)},
		{Key: "tmp", Deleted: true},
	}
	if diff := cmp.Diff(wantLog, log); diff != "" {
		t.Errorf("working memory events (-want +got):\n%s", diff)
	}
	// A working_memory event committed directly updates the table too; a bad one fails its commit.
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{
		event.New(0, 0, event.WorkingMemory, event.WorkingMemoryData{Key: "city", Deleted: true})}})
	if err := s.Commit(ctx, &store.Batch{Session: sess.ID, Events: []event.Event{
		event.New(0, 0, event.WorkingMemory, event.WorkingMemoryData{Key: ""})}}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("bad working memory event: %v, want ErrInvalid", err)
	}
	if wm, _ := s.Working(ctx, sess.ID); len(wm) != 1 {
		t.Errorf("working memory = %v, want only plan", wm)
	}
}
