package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/event"
	"agentd/internal/store"
)

func testSession(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	before := time.Now()
	a, created, err := s.Session(ctx, "assistant", "chat:alice")
	if err != nil || !created {
		t.Fatalf("first Session = created %v, %v; want created", created, err)
	}
	if a.ID == 0 || a.Agent != "assistant" || a.Key != "chat:alice" || a.State != store.StateCreated || a.LastSeq != 0 {
		t.Errorf("new session = %+v", a)
	}
	if a.CreatedAt.Before(before.Add(-time.Second)) || !a.CreatedAt.Equal(a.UpdatedAt) {
		t.Errorf("new session times = %v, %v", a.CreatedAt, a.UpdatedAt)
	}
	again, created, err := s.Session(ctx, "assistant", "chat:alice")
	if err != nil || created {
		t.Fatalf("second Session = created %v, %v; want existing", created, err)
	}
	if diff := cmp.Diff(a, again); diff != "" {
		t.Errorf("second Session differs (-first +second):\n%s", diff)
	}
	other := mustSession(t, s, "assistant", "chat:bob")
	if other.ID == a.ID {
		t.Errorf("two addresses share session %d", a.ID)
	}

	byID, err := s.SessionByID(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, byID); diff != "" {
		t.Errorf("SessionByID differs:\n%s", diff)
	}
	byAddr, err := s.SessionByAddress(ctx, "assistant", "chat:alice")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, byAddr); diff != "" {
		t.Errorf("SessionByAddress differs:\n%s", diff)
	}
	if _, err := s.SessionByID(ctx, 999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SessionByID(999) = %v, want ErrNotFound", err)
	}
	if _, err := s.SessionByAddress(ctx, "assistant", "chat:nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SessionByAddress(missing) = %v, want ErrNotFound", err)
	}

	for _, tc := range []struct{ agent, key string }{{"", "k"}, {"a", ""}, {"a/b", "k"}} {
		if _, _, err := s.Session(ctx, tc.agent, tc.key); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Session(%q, %q) = %v, want ErrInvalid", tc.agent, tc.key, err)
		}
	}
}

func testSessionConcurrentCreate(t *testing.T, x *suite) {
	s := x.newStore(t)
	const n = 30
	ids := make([]int64, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sess, c, err := s.Session(t.Context(), "assistant", "chat:race")
			if err != nil {
				t.Error(err)
			}
			ids[i], created[i] = sess.ID, c
		})
	}
	wg.Wait()
	ncreated := 0
	for i := range n {
		if ids[i] != ids[0] {
			t.Errorf("caller %d got session %d, caller 0 got %d", i, ids[i], ids[0])
		}
		if created[i] {
			ncreated++
		}
	}
	if ncreated != 1 {
		t.Errorf("%d callers saw created, want exactly 1", ncreated)
	}
}

func testCommitAndEvents(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	sess := mustSession(t, s, "assistant", "chat:alice")

	first := &store.Batch{Session: sess.ID, State: store.StateActive, Events: []event.Event{
		input(sess.ID, 7, "what is the weather?"),
		event.New(sess.ID, 7, event.ToolCall, event.ToolCallData{ID: "c1", Name: "weather", Args: json.RawMessage(`{"city":"Paris"}`)}),
	}}
	mustCommit(t, s, first)
	if got := seqs(first.Events); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("first batch seqs = %v, want [1 2]", got)
	}
	// Events without a session or time get both from the store.
	second := &store.Batch{Session: sess.ID, Events: []event.Event{
		{Turn: 7, Kind: event.ToolResult, Data: json.RawMessage(`{"id":"c1","name":"weather","output":"sunny","duration_ms":3}`)},
		text(sess.ID, 7, "It is sunny."),
		{Turn: 7, Kind: event.Marker}, // no payload
	}}
	before := time.Now()
	mustCommit(t, s, second)
	if got := seqs(second.Events); !slices.Equal(got, []int64{3, 4, 5}) {
		t.Errorf("second batch seqs = %v, want [3 4 5]", got)
	}
	if second.Events[0].Session != sess.ID || second.Events[0].Time.Before(before.Add(-time.Second)) {
		t.Errorf("store did not fill session and time: %+v", second.Events[0])
	}

	all, err := s.Events(ctx, sess.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(first.Events), second.Events...)
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("Events differ from what was committed (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		after int64
		limit int
		want  []int64
	}{
		{0, 2, []int64{1, 2}},
		{2, 0, []int64{3, 4, 5}},
		{2, 2, []int64{3, 4}},
		{5, 0, []int64{}},
		{0, -1, []int64{1, 2, 3, 4, 5}},
	} {
		got, err := s.Events(ctx, sess.ID, tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqs(got), tc.want) {
			t.Errorf("Events(after %d, limit %d) seqs = %v, want %v", tc.after, tc.limit, seqs(got), tc.want)
		}
	}

	got, err := s.SessionByID(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastSeq != 5 || got.State != store.StateActive || !got.UpdatedAt.After(sess.UpdatedAt) {
		t.Errorf("session after commits = %+v, want last seq 5, active, updated", got)
	}

	// A batch without events changes the state and nothing else.
	mustCommit(t, s, &store.Batch{Session: sess.ID, State: store.StateIdle})
	got, _ = s.SessionByID(ctx, sess.ID)
	if got.LastSeq != 5 || got.State != store.StateIdle {
		t.Errorf("session after a state-only commit = %+v", got)
	}
	// An empty batch is a no-op.
	mustCommit(t, s, &store.Batch{})
}

func testCommitInvalid(t *testing.T, x *suite) {
	s := x.newStore(t)
	sess := mustSession(t, s, "assistant", "chat:alice")
	id := sess.ID
	for _, tc := range []struct {
		name  string
		batch *store.Batch
	}{
		{"nil", nil},
		{"events without session", &store.Batch{Events: []event.Event{input(0, 0, "x")}}},
		{"state without session", &store.Batch{State: store.StateIdle}},
		{"unknown state", &store.Batch{Session: id, State: "sleeping"}},
		{"negative session", &store.Batch{Session: -1}},
		{"event of another session", &store.Batch{Session: id, Events: []event.Event{input(id+1, 0, "x")}}},
		{"no kind", &store.Batch{Session: id, Events: []event.Event{{Data: json.RawMessage(`{}`)}}}},
		{"live-only kind", &store.Batch{Session: id, Events: []event.Event{{Kind: event.TextDelta}}}},
		{"bad json", &store.Batch{Session: id, Events: []event.Event{{Kind: event.Text, Data: json.RawMessage(`{"text":`)}}}},
		{"bad done id", &store.Batch{Session: id, Done: []int64{0}}},
		{"usage without session", &store.Batch{Usage: []store.Usage{{Model: "m"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Commit(t.Context(), tc.batch); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("Commit = %v, want ErrInvalid", err)
			}
		})
	}
	got, _ := s.SessionByID(t.Context(), id)
	if got.LastSeq != 0 {
		t.Errorf("invalid batches wrote events: last seq %d", got.LastSeq)
	}
}

func testCommitNotFound(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	sess := mustSession(t, s, "assistant", "chat:alice")
	other := mustSession(t, s, "assistant", "chat:bob")
	item := mustEnqueue(t, s, store.InboxItem{Session: other.ID, Kind: event.Input, Text: "hi"})

	for _, tc := range []struct {
		name  string
		batch store.Batch
	}{
		{"unknown session", store.Batch{Session: 9999, Events: []event.Event{input(0, 0, "x")}}},
		{"unknown inbox item", store.Batch{Session: sess.ID, Events: []event.Event{input(0, 0, "x")}, Done: []int64{9999}}},
		{"inbox item of another session", store.Batch{Session: sess.ID, Events: []event.Event{input(0, 0, "x")}, Done: []int64{item.ID}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.batch
			b.Events = slices.Clone(b.Events)
			if err := s.Commit(ctx, &b); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Commit = %v, want ErrNotFound", err)
			}
			if b.Events[0].Seq != 0 {
				t.Errorf("a failed commit changed the caller's events: %+v", b.Events[0])
			}
		})
	}
	// Nothing of the failed batches is visible.
	got, _ := s.SessionByID(ctx, sess.ID)
	if got.LastSeq != 0 {
		t.Errorf("session last seq = %d after failed commits, want 0", got.LastSeq)
	}
	if evs, _ := s.Events(ctx, sess.ID, 0, 0); len(evs) != 0 {
		t.Errorf("failed commits left events: %+v", evs)
	}
	if it, _ := s.InboxItem(ctx, item.ID); it.State != store.InboxPending {
		t.Errorf("inbox item of another session was marked %q", it.State)
	}
}

func testContextEvents(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	sess := mustSession(t, s, "assistant", "chat:alice")
	other := mustSession(t, s, "assistant", "chat:bob")
	reset := func() event.Event {
		return event.New(sess.ID, 0, event.Reset, event.MarkerData{Name: "reset"})
	}

	got, err := s.ContextEvents(ctx, sess.ID)
	if err != nil || len(got) != 0 {
		t.Fatalf("ContextEvents of an empty session = %v, %v", got, err)
	}
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{input(0, 1, "a"), text(0, 1, "b")}})
	// Another session's reset does not count.
	mustCommit(t, s, &store.Batch{Session: other.ID, Events: []event.Event{input(0, 1, "x"), {Kind: event.Reset}}})
	got, _ = s.ContextEvents(ctx, sess.ID)
	if !slices.Equal(seqs(got), []int64{1, 2}) {
		t.Errorf("ContextEvents without a reset = %v, want [1 2]", seqs(got))
	}
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{reset(), input(0, 2, "c"), reset(), input(0, 3, "d"), text(0, 3, "e")}})
	got, _ = s.ContextEvents(ctx, sess.ID)
	if !slices.Equal(seqs(got), []int64{6, 7}) {
		t.Errorf("ContextEvents after resets = %v, want [6 7]", seqs(got))
	}
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{reset()}})
	got, _ = s.ContextEvents(ctx, sess.ID)
	if len(got) != 0 {
		t.Errorf("ContextEvents right after a reset = %v, want none", seqs(got))
	}
}

func testTurnEvents(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	a := mustSession(t, s, "assistant", "chat:alice")
	b := mustSession(t, s, "assistant", "chat:bob")
	mustCommit(t, s, &store.Batch{Session: a.ID, Events: []event.Event{input(0, 1, "a1"), text(0, 1, "r1"), input(0, 2, "a2")}})
	mustCommit(t, s, &store.Batch{Session: b.ID, Events: []event.Event{input(0, 1, "b1")}})
	mustCommit(t, s, &store.Batch{Session: a.ID, Events: []event.Event{text(0, 2, "r2"), text(0, 1, "late")}})

	for _, tc := range []struct {
		session, turn int64
		want          []int64
	}{
		{a.ID, 1, []int64{1, 2, 5}},
		{a.ID, 2, []int64{3, 4}},
		{b.ID, 1, []int64{1}},
		{a.ID, 3, []int64{}},
	} {
		got, err := s.TurnEvents(ctx, tc.session, tc.turn)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqs(got), tc.want) {
			t.Errorf("TurnEvents(%d, %d) = %v, want %v", tc.session, tc.turn, seqs(got), tc.want)
		}
		for _, e := range got {
			if e.Session != tc.session || e.Turn != tc.turn {
				t.Errorf("TurnEvents(%d, %d) returned %+v", tc.session, tc.turn, e)
			}
		}
	}
}

func testInbox(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	a := mustSession(t, s, "assistant", "chat:alice")
	b := mustSession(t, s, "assistant", "chat:bob")

	created := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	first := mustEnqueue(t, s, store.InboxItem{Session: a.ID, Kind: event.Input, Text: "one", Source: "cli", IdempotencyKey: "k1", Options: json.RawMessage(`{"channelId":"c1"}`), State: "ignored", CreatedAt: created})
	want := store.InboxItem{ID: first.ID, Session: a.ID, Kind: event.Input, Text: "one", Source: "cli", IdempotencyKey: "k1", Options: json.RawMessage(`{"channelId":"c1"}`), State: store.InboxPending, CreatedAt: created}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("Enqueue result (-want +got):\n%s", diff)
	}
	second := mustEnqueue(t, s, store.InboxItem{Session: a.ID, Kind: event.SystemMessage, Silent: true, Text: "two", Origin: "agent:helper"})
	third := mustEnqueue(t, s, store.InboxItem{Session: b.ID, Kind: event.Reset})
	if !(first.ID < second.ID && second.ID < third.ID) {
		t.Errorf("ids not increasing: %d %d %d", first.ID, second.ID, third.ID)
	}
	if second.CreatedAt.IsZero() {
		t.Error("zero CreatedAt not filled in")
	}

	got, err := s.InboxItem(ctx, second.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(second, got); diff != "" {
		t.Errorf("InboxItem (-enqueued +read):\n%s", diff)
	}
	if _, err := s.InboxItem(ctx, 9999); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("InboxItem(9999) = %v, want ErrNotFound", err)
	}
	pending, err := s.Pending(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.InboxItem{first, second}, pending); diff != "" {
		t.Errorf("Pending (-want +got):\n%s", diff)
	}
	ids, err := s.PendingSessions(ctx)
	if err != nil || !slices.Equal(ids, []int64{a.ID, b.ID}) {
		t.Errorf("PendingSessions = %v, %v; want [%d %d]", ids, err, a.ID, b.ID)
	}

	// Finishing the first turn: its events and the item's completion commit together.
	mustCommit(t, s, &store.Batch{Session: a.ID, Events: []event.Event{input(0, first.ID, "one")}, Done: []int64{first.ID}})
	pending, _ = s.Pending(ctx, a.ID)
	if len(pending) != 1 || pending[0].ID != second.ID {
		t.Errorf("Pending after done = %+v, want only the second item", pending)
	}
	if it, _ := s.InboxItem(ctx, first.ID); it.State != store.InboxDone {
		t.Errorf("done item state = %q", it.State)
	}
	// Marking an item done twice is harmless; so is a batch with only Done.
	mustCommit(t, s, &store.Batch{Done: []int64{first.ID, second.ID, third.ID}})
	ids, _ = s.PendingSessions(ctx)
	if len(ids) != 0 {
		t.Errorf("PendingSessions after all done = %v", ids)
	}

	for _, bad := range []store.InboxItem{
		{Kind: event.Input, Text: "no session"},
		{Session: a.ID, Kind: event.Text, Text: "wrong kind"},
	} {
		if _, _, err := s.Enqueue(ctx, bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Enqueue(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, _, err := s.Enqueue(ctx, store.InboxItem{Session: 9999, Kind: event.Input}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Enqueue to an unknown session = %v, want ErrNotFound", err)
	}
}

func testEnqueueIdempotency(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	a := mustSession(t, s, "telegram", "chat:1")
	b := mustSession(t, s, "telegram", "chat:2")

	orig := mustEnqueue(t, s, store.InboxItem{Session: a.ID, Kind: event.Input, Text: "hi", IdempotencyKey: "update:42"})
	again, dup, err := s.Enqueue(ctx, store.InboxItem{Session: a.ID, Kind: event.Input, Text: "hi (redelivered)", IdempotencyKey: "update:42"})
	if err != nil || !dup {
		t.Fatalf("redelivery = duplicate %v, %v; want duplicate", dup, err)
	}
	if diff := cmp.Diff(orig, again); diff != "" {
		t.Errorf("duplicate should return the stored item (-stored +returned):\n%s", diff)
	}
	// The same key in another session is another item; empty keys never collide.
	mustEnqueue(t, s, store.InboxItem{Session: b.ID, Kind: event.Input, Text: "hi", IdempotencyKey: "update:42"})
	mustEnqueue(t, s, store.InboxItem{Session: a.ID, Kind: event.Input, Text: "x"})
	mustEnqueue(t, s, store.InboxItem{Session: a.ID, Kind: event.Input, Text: "x"})
	pending, _ := s.Pending(ctx, a.ID)
	if len(pending) != 3 {
		t.Errorf("session a has %d pending items, want 3", len(pending))
	}
	// A key stays taken after its item is done.
	mustCommit(t, s, &store.Batch{Done: []int64{orig.ID}})
	if _, dup, _ := s.Enqueue(ctx, store.InboxItem{Session: a.ID, Kind: event.Input, IdempotencyKey: "update:42"}); !dup {
		t.Error("a done item's key was accepted again")
	}
	// InboxByKey finds what Enqueue would answer as a duplicate, done or not.
	byKey, err := s.InboxByKey(ctx, a.ID, "update:42")
	if err != nil || byKey.ID != orig.ID || byKey.State != store.InboxDone {
		t.Errorf("InboxByKey(update:42) = %+v, %v; want item %d, done", byKey, err, orig.ID)
	}
	for _, key := range []string{"update:43", ""} {
		if it, err := s.InboxByKey(ctx, a.ID, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("InboxByKey(%q) = %+v, %v; want ErrNotFound", key, it, err)
		}
	}

	// Concurrent deliveries of one new key store one item.
	const n = 20
	var wg sync.WaitGroup
	results := make([]store.InboxItem, n)
	dups := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			it, d, err := s.Enqueue(ctx, store.InboxItem{Session: b.ID, Kind: event.Input, Text: "race", IdempotencyKey: "update:99"})
			if err != nil {
				t.Error(err)
			}
			results[i], dups[i] = it, d
		})
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if !dups[i] {
			fresh++
		}
		if results[i].ID != results[0].ID {
			t.Errorf("delivery %d stored as %d, delivery 0 as %d", i, results[i].ID, results[0].ID)
		}
	}
	if fresh != 1 {
		t.Errorf("%d concurrent deliveries were stored, want 1", fresh)
	}
}

func testUsage(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	a := mustSession(t, s, "assistant", "chat:alice")
	r := mustSession(t, s, "researcher", "job:daily:1")
	t0 := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	mustCommit(t, s, &store.Batch{Session: a.ID, Usage: []store.Usage{
		{Model: "m1", InputTokens: 100, OutputTokens: 10, CostUSD: 0.5, Time: t0},
		{Model: "m1", InputTokens: 200, OutputTokens: 20, CostUSD: 0.25, Time: t0.Add(time.Hour)},
	}})
	mustCommit(t, s, &store.Batch{Usage: []store.Usage{
		{Session: r.ID, Agent: "researcher", Model: "m2", InputTokens: 1000, OutputTokens: 100, CostUSD: 2, Time: t0.Add(2 * time.Hour)},
		{Session: r.ID, Model: "m2", InputTokens: 1, OutputTokens: 1, CostUSD: 1}, // now, agent from the session
	}})
	for _, tc := range []struct {
		agent string
		since time.Time
		want  store.Usage
	}{
		{"assistant", time.Time{}, store.Usage{InputTokens: 300, OutputTokens: 30, CostUSD: 0.75}},
		{"assistant", t0.Add(time.Minute), store.Usage{InputTokens: 200, OutputTokens: 20, CostUSD: 0.25}},
		{"researcher", t0, store.Usage{InputTokens: 1001, OutputTokens: 101, CostUSD: 3}},
		{"", t0, store.Usage{InputTokens: 1301, OutputTokens: 131, CostUSD: 3.75}},
		{"", t0.Add(90 * time.Minute), store.Usage{InputTokens: 1001, OutputTokens: 101, CostUSD: 3}},
		{"nobody", t0, store.Usage{}},
	} {
		got, err := s.UsageSince(ctx, tc.agent, tc.since)
		if err != nil {
			t.Fatal(err)
		}
		tc.want.Agent, tc.want.Time = tc.agent, tc.since
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			t.Errorf("UsageSince(%q, %v) (-want +got):\n%s", tc.agent, tc.since, diff)
		}
	}
}

func testSessions(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	var all []store.Session
	for i := range 5 {
		agent := "assistant"
		if i%2 == 1 {
			agent = "researcher"
		}
		all = append(all, mustSession(t, s, agent, "k"+strconv.Itoa(i)))
	}
	// Touch sessions 1 then 3 so that they are the most recently updated.
	mustCommit(t, s, &store.Batch{Session: all[1].ID, State: store.StateIdle})
	mustCommit(t, s, &store.Batch{Session: all[3].ID, State: store.StateActive})

	ids := func(ss []store.Session) []int64 {
		out := []int64{}
		for _, x := range ss {
			out = append(out, x.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.SessionFilter
		want []int64
	}{
		{"all", store.SessionFilter{}, []int64{all[3].ID, all[1].ID, all[4].ID, all[2].ID, all[0].ID}},
		{"agent", store.SessionFilter{Agent: "researcher"}, []int64{all[3].ID, all[1].ID}},
		{"state", store.SessionFilter{State: store.StateCreated}, []int64{all[4].ID, all[2].ID, all[0].ID}},
		{"agent and state", store.SessionFilter{Agent: "researcher", State: store.StateIdle}, []int64{all[1].ID}},
		{"limit", store.SessionFilter{Limit: 2}, []int64{all[3].ID, all[1].ID}},
		{"none", store.SessionFilter{Agent: "nobody"}, []int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Sessions(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tc.want) {
				t.Errorf("Sessions(%+v) = %v, want %v", tc.f, ids(got), tc.want)
			}
		})
	}
}

func testAgents(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	recs := []store.AgentRecord{
		{ID: "researcher", Name: "Researcher", Type: "background", Definition: []byte(`{"model":"m"}`), UpdatedAt: t0},
		{ID: "assistant", Name: "Assistant", Type: "user", Definition: []byte(`{}`), UpdatedAt: t0},
	}
	for _, r := range recs {
		if err := s.SaveAgent(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	recs[0].Name, recs[0].Definition, recs[0].UpdatedAt = "Research bot", []byte(`{"model":"m2"}`), t0.Add(time.Hour)
	if err := s.SaveAgent(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	got, err := s.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.AgentRecord{recs[1], recs[0]}, got); diff != "" {
		t.Errorf("Agents (-want +got):\n%s", diff)
	}
	if err := s.SaveAgent(ctx, store.AgentRecord{Name: "no id"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SaveAgent without id = %v, want ErrInvalid", err)
	}
	if err := s.SaveAgent(ctx, store.AgentRecord{ID: "x", Definition: []byte("{")}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("SaveAgent with bad JSON = %v, want ErrInvalid", err)
	}
}

func testConcurrentCommitsGapless(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	const sessions, goroutines, commits = 10, 100, 15
	ids := make([]int64, sessions)
	for i := range ids {
		ids[i] = mustSession(t, s, "assistant", "k"+strconv.Itoa(i)).ID
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			sess := ids[g%sessions]
			for i := range commits {
				b := &store.Batch{Session: sess, Events: []event.Event{
					input(0, int64(g), fmt.Sprintf("g%d i%d", g, i)),
					text(0, int64(g), "reply"),
				}}
				if err := s.Commit(ctx, b); err != nil {
					t.Error(err)
					return
				}
				if b.Events[1].Seq != b.Events[0].Seq+1 {
					t.Errorf("one batch got seqs %d, %d", b.Events[0].Seq, b.Events[1].Seq)
				}
			}
		})
	}
	wg.Wait()
	perSession := goroutines / sessions * commits * 2
	for _, id := range ids {
		evs, err := s.Events(ctx, id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("session %d: event %d has seq %d: not gapless", id, i, e.Seq)
			}
		}
		if len(evs) != perSession {
			t.Errorf("session %d has %d events, want %d", id, len(evs), perSession)
		}
		sess, _ := s.SessionByID(ctx, id)
		if sess.LastSeq != int64(perSession) {
			t.Errorf("session %d last seq %d, want %d", id, sess.LastSeq, perSession)
		}
	}
	if c, ok := s.(Checker); ok {
		if res, err := c.IntegrityCheck(ctx); err != nil || res != "ok" {
			t.Errorf("IntegrityCheck = %q, %v", res, err)
		}
	}
}

func testCommitDeepPayload(t *testing.T, x *suite) {
	s := x.newStore(t)
	sess := mustSession(t, s, "assistant", "chat:alice")
	deep := []byte(`{"text":"deep",` + `"x":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`)
	b := &store.Batch{Session: sess.ID, Events: []event.Event{
		{Kind: event.Text, Data: deep},
		text(0, 0, "shallow words"),
	}}
	mustCommit(t, s, b)
	evs, err := s.Events(t.Context(), sess.ID, 0, 0)
	if err != nil || len(evs) != 2 || !bytes.Equal(evs[0].Data, deep) {
		t.Fatalf("events = %d, %v; want the deep payload stored as given", len(evs), err)
	}
	if got, _, err := s.SearchHistory(t.Context(), store.HistoryQuery{Query: "shallow"}); err != nil || len(got) != 1 {
		t.Errorf("SearchHistory(shallow) = %d hits, %v", len(got), err)
	}
}

func testClosed(t *testing.T, x *suite) {
	s := x.newStore(t)
	ctx := t.Context()
	sess := mustSession(t, s, "assistant", "chat:alice")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	calls := map[string]func() error{
		"Commit": func() error {
			return s.Commit(ctx, &store.Batch{Session: sess.ID, Events: []event.Event{input(0, 0, "x")}})
		},
		"Enqueue": func() error {
			_, _, err := s.Enqueue(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input})
			return err
		},
		"Enqueue with key": func() error {
			_, _, err := s.Enqueue(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input, IdempotencyKey: "k"})
			return err
		},
		"Session":          func() error { _, _, err := s.Session(ctx, "a", "k"); return err },
		"SessionByID":      func() error { _, err := s.SessionByID(ctx, sess.ID); return err },
		"SessionByAddress": func() error { _, err := s.SessionByAddress(ctx, "a", "k"); return err },
		"Sessions":         func() error { _, err := s.Sessions(ctx, store.SessionFilter{}); return err },
		"Pending":          func() error { _, err := s.Pending(ctx, sess.ID); return err },
		"PendingSessions":  func() error { _, err := s.PendingSessions(ctx); return err },
		"InboxItem":        func() error { _, err := s.InboxItem(ctx, 1); return err },
		"Events":           func() error { _, err := s.Events(ctx, sess.ID, 0, 0); return err },
		"ContextEvents":    func() error { _, err := s.ContextEvents(ctx, sess.ID); return err },
		"TurnEvents":       func() error { _, err := s.TurnEvents(ctx, sess.ID, 1); return err },
		"SearchHistory":    func() error { _, _, err := s.SearchHistory(ctx, store.HistoryQuery{Query: "x"}); return err },
		"Threads":          func() error { _, _, err := s.Threads(ctx, "a", 0, ""); return err },
		"Working":          func() error { _, err := s.Working(ctx, sess.ID); return err },
		"SetWorking":       func() error { _, err := s.SetWorking(ctx, sess.ID, "k", json.RawMessage("1")); return err },
		"DeleteWorking":    func() error { _, err := s.DeleteWorking(ctx, sess.ID, "k"); return err },
		"SetTitle":         func() error { _, err := s.SetTitle(ctx, sess.ID, "t", store.TitleByUser); return err },
		"UsageReport":      func() error { _, err := s.UsageReport(ctx, store.UsageQuery{Group: store.UsageByDay}); return err },
		"QueueDepth":       func() error { _, err := s.QueueDepth(ctx); return err },
		"SessionStates":    func() error { _, err := s.SessionStates(ctx); return err },
		"Ping":             func() error { return s.Ping(ctx) },
		"SaveAgent":        func() error { return s.SaveAgent(ctx, store.AgentRecord{ID: "a"}) },
		"Agents":           func() error { _, err := s.Agents(ctx); return err },
		"UsageSince":       func() error { _, err := s.UsageSince(ctx, "", time.Time{}); return err },
		"Extensions":       func() error { _, err := s.Extensions(ctx, ""); return err },
		"Extension":        func() error { _, err := s.Extension(ctx, "action", "a"); return err },
		"ExtensionHistory": func() error { _, err := s.ExtensionHistory(ctx, "action", "a"); return err },
		"PutExtension": func() error {
			_, err := s.PutExtension(ctx, ext("a", "x", true, store.ProvenanceUser, ""), store.ExtPut, store.AnyVersion)
			return err
		},
		"DeleteExtension": func() error { return s.DeleteExtension(ctx, "action", "a", "user", store.AnyVersion) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

func testCancelledContext(t *testing.T, x *suite) {
	s := x.newStore(t)
	sess := mustSession(t, s, "assistant", "chat:alice")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b := &store.Batch{Session: sess.ID, Events: []event.Event{input(0, 0, "x")}}
	if err := s.Commit(ctx, b); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a cancelled context = %v, want context.Canceled", err)
	}
	if b.Events[0].Seq != 0 {
		t.Errorf("cancelled Commit changed the batch: %+v", b.Events[0])
	}
}
