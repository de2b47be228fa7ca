package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
)

// gate holds the writer after it has taken the first request of a group, so
// that a test can queue more requests and know they form one group.
type gate struct {
	once    sync.Once
	held    chan struct{} // closed when the writer is held
	release chan struct{} // closed by the test to let the writer go on
}

func newGate() *gate {
	return &gate{held: make(chan struct{}), release: make(chan struct{})}
}

// hook holds the first group only.
func (g *gate) hook() {
	g.once.Do(func() {
		close(g.held)
		<-g.release
	})
}

func openGated(t *testing.T, path string) (*Store, *gate) {
	t.Helper()
	g := newGate()
	s, err := open(t.Context(), path, nil, g.hook)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, g
}

// waitQueued waits until n requests wait in the writer's queue.
func waitQueued(s *Store, n int) {
	for len(s.reqs) < n {
		runtime.Gosched()
	}
}

// createSessions creates sessions without going through the gated writer's
// first group: it must be called before the gate is used, so it opens the
// file with an ungated store first.
func createSessions(t *testing.T, path string, n int) []int64 {
	t.Helper()
	s, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := make([]int64, n)
	for i := range ids {
		sess, _, err := s.Session(t.Context(), "assistant", "k"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = sess.ID
	}
	return ids
}

func batch(session int64, text string) *store.Batch {
	return &store.Batch{Session: session, Events: []event.Event{
		event.New(session, 1, event.Input, event.InputData{Text: text}),
	}}
}

func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	ids := createSessions(t, path, 100)
	s, g := openGated(t, path)
	ctx := t.Context()

	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	commit := func(i int) {
		wg.Go(func() { errs[i] = s.Commit(ctx, batch(ids[i], "hello")) })
	}
	commit(0)
	<-g.held // the writer holds request 0 and waits
	for i := 1; i < len(ids); i++ {
		commit(i)
	}
	waitQueued(s, len(ids)-1)
	close(g.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("commit %d: %v", i, err)
		}
	}
	st := s.Stats()
	if st.Requests != int64(len(ids)) || st.Commits != 1 || st.LargestGroup != int64(len(ids)) || st.Guarded != 0 {
		t.Errorf("Stats = %+v, want %d requests in 1 transaction, applied once", st, len(ids))
	}
	for _, id := range ids {
		evs, err := s.Events(ctx, id, 0, 0)
		if err != nil || len(evs) != 1 || evs[0].Seq != 1 {
			t.Errorf("session %d events = %+v, %v", id, evs, err)
		}
	}
}

func TestGroupMaxBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	ids := createSessions(t, path, 1)
	g := newGate()
	s, err := open(t.Context(), path, &Options{MaxBatch: 4}, g.hook)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Commit(t.Context(), batch(ids[0], "first")); err != nil {
			t.Error(err)
		}
	})
	<-g.held
	for range 4 {
		wg.Go(func() {
			if err := s.Commit(t.Context(), batch(ids[0], "more")); err != nil {
				t.Error(err)
			}
		})
	}
	waitQueued(s, 4)
	close(g.release)
	wg.Wait()
	// Five requests with at most four to a group: two transactions.
	if st := s.Stats(); st.Requests != 5 || st.Commits != 2 || st.LargestGroup != 4 {
		t.Errorf("Stats = %+v, want 5 requests in 2 transactions, largest 4", st)
	}
}

func TestGroupFailureIsolated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	ids := createSessions(t, path, 2)
	s, g := openGated(t, path)
	ctx := t.Context()

	type result struct {
		name string
		err  error
	}
	results := make(chan result, 10)
	run := func(name string, f func() error) {
		go func() { results <- result{name, f()} }()
	}
	good1 := batch(ids[0], "one")
	run("good commit 1", func() error { return s.Commit(ctx, good1) })
	<-g.held
	bad := batch(9999, "no such session")
	run("bad commit", func() error { return s.Commit(ctx, bad) })
	waitQueued(s, 1)
	run("bad done", func() error {
		return s.Commit(ctx, &store.Batch{Session: ids[1], Events: []event.Event{{Kind: event.Text}}, Done: []int64{12345}})
	})
	waitQueued(s, 2)
	good2 := batch(ids[0], "two")
	run("good commit 2", func() error { return s.Commit(ctx, good2) })
	waitQueued(s, 3)
	var item store.InboxItem
	run("enqueue", func() error {
		var err error
		item, _, err = s.Enqueue(ctx, store.InboxItem{Session: ids[1], Kind: event.Input, Text: "queued"})
		return err
	})
	waitQueued(s, 4)
	close(g.release)

	got := map[string]error{}
	for range 5 {
		r := <-results
		got[r.name] = r.err
	}
	for name, err := range got {
		wantFail := name == "bad commit" || name == "bad done"
		if wantFail != (err != nil) {
			t.Errorf("%s: err = %v, want failure %v", name, err, wantFail)
		}
		if wantFail && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", name, err)
		}
	}
	if st := s.Stats(); st.Commits != 1 || st.Requests != 5 || st.Guarded != 1 {
		t.Errorf("Stats = %+v, want 5 requests in one transaction, applied again with savepoints", st)
	}
	if good1.Events[0].Seq != 1 || good2.Events[0].Seq != 2 {
		t.Errorf("good commits got seqs %d and %d, want 1 and 2", good1.Events[0].Seq, good2.Events[0].Seq)
	}
	evs, _ := s.Events(ctx, ids[0], 0, 0)
	if len(evs) != 2 {
		t.Errorf("session %d has %d events, want 2", ids[0], len(evs))
	}
	// The failed batch for ids[1] left nothing behind, not even its seq.
	sess, _ := s.SessionByID(ctx, ids[1])
	if evs, _ := s.Events(ctx, ids[1], 0, 0); len(evs) != 0 || sess.LastSeq != 0 {
		t.Errorf("failed batch left events %+v, last seq %d", evs, sess.LastSeq)
	}
	if p, _ := s.Pending(ctx, ids[1]); len(p) != 1 || p[0].ID != item.ID {
		t.Errorf("Pending = %+v, want the enqueued item", p)
	}
}

func TestCloseDrainsQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	ids := createSessions(t, path, 1)
	s, g := openGated(t, path)
	ctx := t.Context()
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	commit := func(i int) {
		wg.Go(func() { errs[i] = s.Commit(ctx, batch(ids[0], "m"+strconv.Itoa(i))) })
	}
	commit(0)
	<-g.held
	for i := 1; i < n; i++ {
		commit(i)
	}
	waitQueued(s, n-1)
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	for !s.isDown.Load() {
		runtime.Gosched()
	}
	close(g.release)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("queued commit %d: %v", i, err)
		}
	}
	if err := s.Commit(ctx, batch(ids[0], "late")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Commit after Close = %v, want ErrClosed", err)
	}

	s2, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	evs, err := s2.Events(ctx, ids[0], 0, 0)
	if err != nil || len(evs) != n {
		t.Fatalf("after reopening: %d events, %v; want %d", len(evs), err, n)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

func TestCancelWhileQueued(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	ids := createSessions(t, path, 1)
	s, g := openGated(t, path)
	bg := t.Context()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Commit(bg, batch(ids[0], "first")); err != nil {
			t.Error(err)
		}
	})
	<-g.held
	ctx, cancel := context.WithCancel(bg)
	b := batch(ids[0], "cancelled")
	done := make(chan error)
	go func() { done <- s.Commit(ctx, b) }()
	waitQueued(s, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Commit = %v, want context.Canceled", err)
	}
	if b.Events[0].Seq != 0 {
		t.Errorf("the cancelled Commit changed its batch: %+v", b.Events[0])
	}
	close(g.release)
	wg.Wait()
	// The writer reached the request after its caller left and skipped it.
	if err := s.Commit(bg, batch(ids[0], "after")); err != nil {
		t.Fatal(err)
	}
	evs, _ := s.Events(bg, ids[0], 0, 0)
	if len(evs) != 2 {
		t.Errorf("%d events, want 2 (the cancelled commit skipped)", len(evs))
	}
}

func TestMigrate(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	log := slog.New(slog.DiscardHandler)
	version := func() int {
		v, err := userVersion(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tableExists := func(name string) bool {
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = ?", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	steps := []migration{{sql: "CREATE TABLE a (x)"}, {sql: "CREATE TABLE b (x); INSERT INTO b VALUES (1)"}}
	if err := migrate(ctx, conn, steps[:1], log); err != nil {
		t.Fatal(err)
	}
	if version() != 1 || !tableExists("a") {
		t.Fatalf("after step 1: version %d", version())
	}
	// Step 1 is not run again (it would fail: table a exists).
	if err := migrate(ctx, conn, steps, log); err != nil {
		t.Fatal(err)
	}
	if version() != 2 || !tableExists("b") {
		t.Fatalf("after step 2: version %d", version())
	}
	if err := migrate(ctx, conn, steps, log); err != nil {
		t.Errorf("migrating an up-to-date database: %v", err)
	}
	// A failing step is rolled back whole and the version stays.
	bad := append(steps, migration{sql: "CREATE TABLE c (x); INSERT INTO nosuch VALUES (1)"})
	if err := migrate(ctx, conn, bad, log); err == nil {
		t.Fatal("failing step succeeded")
	}
	if version() != 2 || tableExists("c") {
		t.Errorf("after a failed step: version %d, table c exists %v", version(), tableExists("c"))
	}
	// Code that knows fewer steps than the database refuses it.
	if err := migrate(ctx, conn, steps[:1], log); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("older code: %v, want ErrSchemaTooNew", err)
	}
}

func TestQueryPlansUseIndexes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	s, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		query string
		args  []any
		index string
	}{
		{qSessionByKey, []any{"a", "k"}, "sqlite_autoindex_sessions_1"},
		{qContextStart, []any{1}, "events_reset"},
		{qContextRange, []any{1, 5, 10}, "sqlite_autoindex_events_1"},
		{qEvents, []any{1, 5}, "sqlite_autoindex_events_1"},
		{qEventsLimit, []any{1, 5, 10}, "sqlite_autoindex_events_1"},
		{qTurnEvents, []any{3, 1}, "events_turn"},
		{qPending, []any{1}, "inbox_pending"},
		{qPendingSessions, nil, "inbox_pending"},
		{qInboxByKey, []any{1, "k"}, "inbox_idem"},
		{qUsageAgent, []any{"a", 0}, "usage_agent_ts"},
		{qOutDue, []any{"tg", 0, 10}, "agentd_outbox_due"},
		{qOutDepth, []any{"tg"}, "agentd_outbox_streaming"},
		{qOutDepth, []any{"tg"}, "agentd_outbox_due"},
		{qOutByTurn, []any{"tg", 1, 2}, "agentd_outbox_turn"},
		{qSessions, []any{"", "", 10}, "agentd_outbox_failed"},
		{qPairExpire, []any{"tg", 0}, "agentd_pairings_pending"},
		{qPairCount, []any{"tg"}, "agentd_pairings_pending"},
		{qPairDecide, []any{"CODE", "approved", 0, "ops"}, "agentd_pairings_code"},
		{qConvsBehind, []any{"tg", 10}, "sqlite_autoindex_agentd_conversations_1"},
	} {
		rows, err := s.rdb.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.query, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		plan := ""
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan += detail + "\n"
		}
		rows.Close()
		if !strings.Contains(plan, tc.index) {
			t.Errorf("plan for %q does not use %s:\n%s", tc.query, tc.index, plan)
		}
	}
}

// TestCommitEvents: a commit's events, however many (they are inserted
// maxEventRows at a time), are stored in order with their numbers, kinds,
// turns and payloads, a missing payload as none; and a turn's answer (model
// call, text, turn end) is one statement, which its allocations tell.
func TestCommitEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	id := createSessions(t, path, 1)[0]
	s, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var want []event.Event
	for n := 1; n <= 9; n++ { // 9: 2*maxEventRows + 1
		b := &store.Batch{Session: id}
		for i := range n {
			e := event.New(id, int64(n), event.Text, event.TextData{Text: fmt.Sprintf("%d of %d", i+1, n)})
			if i == 1 {
				e = event.Event{Session: id, Turn: int64(n), Kind: event.Reset}
			}
			b.Events = append(b.Events, e)
		}
		if err := s.Commit(t.Context(), b); err != nil {
			t.Fatalf("commit of %d events: %v", n, err)
		}
		want = append(want, b.Events...)
	}
	got, err := s.Events(t.Context(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	key := func(e event.Event) string { return fmt.Sprintf("%d %d %s %s", e.Seq, e.Turn, e.Kind, e.Data) }
	if diff := cmp.Diff(mapSlice(want, key), mapSlice(got, key)); diff != "" {
		t.Errorf("stored events (-committed +read):\n%s", diff)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}

	answer := &store.Batch{Session: id, Events: []event.Event{
		event.New(id, 99, event.ModelCall, event.ModelCallData{Provider: "openai", Model: "m", Step: 1}),
		event.New(id, 99, event.Text, event.TextData{Text: "hi"}),
		event.New(id, 99, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: "hi"}),
	}}
	// 55 allocations with an INSERT an event, 45 with one for the three,
	// 36 with the session's row updated without reading it back.
	if n := testing.AllocsPerRun(50, func() { s.Commit(t.Context(), answer) }); n > 40 && !raceEnabled {
		t.Errorf("a commit of 3 events: %.0f allocations, want at most 40 (one INSERT, no RETURNING)", n)
	}
	// 33 allocations reading the inserted item's id back, 18 without.
	in := store.InboxItem{Session: id, Kind: event.Input, Text: "hello"}
	if n := testing.AllocsPerRun(50, func() { s.Enqueue(t.Context(), in) }); n > 22 && !raceEnabled {
		t.Errorf("an enqueue: %.0f allocations, want at most 22 (nothing read back)", n)
	}
}

func mapSlice[T, U any](s []T, f func(T) U) []U {
	out := make([]U, len(s))
	for i := range s {
		out[i] = f(s[i])
	}
	return out
}

// The writer keeps each session's last sequence number rather than reading
// it back, and what it keeps follows the database: through a request
// rolled back in its group, and through a row another program changed.
func TestWriterTails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentd.db")
	ids := createSessions(t, path, 2)
	s, g := openGated(t, path)
	ctx := t.Context()

	// A group whose second request fails after its session update: the
	// group is applied again, and the failed request's numbers are not
	// kept.
	errs := make(chan error, 3)
	first, third := batch(ids[0], "one"), batch(ids[0], "three")
	go func() { errs <- s.Commit(ctx, first) }()
	<-g.held
	go func() {
		errs <- s.Commit(ctx, &store.Batch{Session: ids[0], Events: []event.Event{{Kind: event.Text}}, Done: []int64{12345}})
	}()
	waitQueued(s, 1)
	go func() { errs <- s.Commit(ctx, third) }()
	waitQueued(s, 2)
	close(g.release)
	failed := 0
	for range 3 {
		if err := <-errs; err != nil {
			failed++
		}
	}
	if failed != 1 || first.Events[0].Seq != 1 || third.Events[0].Seq != 2 {
		t.Fatalf("%d failed, seqs %d and %d; want 1 failure and seqs 1 and 2", failed, first.Events[0].Seq, third.Events[0].Seq)
	}

	// Another program moves the session on.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE sessions SET last_seq = 10 WHERE id = ?`, ids[0]); err != nil {
		t.Fatal(err)
	}
	next := batch(ids[0], "after")
	if err := s.Commit(ctx, next); err != nil {
		t.Fatal(err)
	}
	if next.Events[0].Seq != 11 {
		t.Errorf("seq after the row changed = %d, want 11", next.Events[0].Seq)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed, the writer's state can be read without a race.
	want := map[int64]tail{ids[0]: {last: 11, titled: true}}
	if diff := cmp.Diff(want, s.w.tails.m, cmp.AllowUnexported(tail{})); diff != "" {
		t.Errorf("tails (-want +got):\n%s", diff)
	}
}
