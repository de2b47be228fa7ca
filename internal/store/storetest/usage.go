package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/store"
)

// usageFixture records usage for two agents, three sessions, two models
// over three days.
func usageFixture(t *testing.T, x *suite) (Store, time.Time) {
	t.Helper()
	s := x.newStore(t)
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	sess := map[string]int64{}
	for _, addr := range []string{"ada/one", "ada/two", "bob/one"} {
		a, k, _ := strings.Cut(addr, "/")
		ss, _, err := s.Session(t.Context(), a, k)
		if err != nil {
			t.Fatal(err)
		}
		sess[addr] = ss.ID
	}
	for _, u := range []struct {
		addr, model string
		in, out     int
		cost        float64
		at          time.Duration
	}{
		{"ada/one", "m1", 100, 10, 0.5, 1 * time.Hour},
		{"ada/one", "m1", 200, 20, 0.25, 25 * time.Hour},
		{"ada/two", "m2", 300, 30, 1, 26 * time.Hour},
		{"bob/one", "m1", 400, 40, 2, 49 * time.Hour},
		{"bob/one", "m2", 500, 50, 0.125, 50 * time.Hour},
	} {
		a, _, _ := strings.Cut(u.addr, "/")
		if err := s.Commit(t.Context(), &store.Batch{Usage: []store.Usage{{Session: sess[u.addr], Agent: a, Model: u.model,
			InputTokens: u.in, OutputTokens: u.out, CostUSD: u.cost, Time: day.Add(u.at)}}}); err != nil {
			t.Fatal(err)
		}
	}
	return s, day
}

func testUsageReport(t *testing.T, x *suite) {
	s, day := usageFixture(t, x)
	row := func(key string, in, out int64, cost float64, calls int64) store.UsageRow {
		return store.UsageRow{Key: key, InputTokens: in, OutputTokens: out, CostUSD: cost, Calls: calls}
	}
	all := row("", 1500, 150, 3.875, 5)
	for _, tc := range []struct {
		name string
		q    store.UsageQuery
		want store.UsageReport
	}{
		{"by day", store.UsageQuery{Group: store.UsageByDay}, store.UsageReport{Total: all, Rows: []store.UsageRow{
			row("2026-11-20", 100, 10, 0.5, 1), row("2026-11-21", 500, 50, 1.25, 2), row("2026-11-22", 900, 90, 2.125, 2)}}},
		{"by agent, costliest first", store.UsageQuery{Group: store.UsageByAgent}, store.UsageReport{Total: all, Rows: []store.UsageRow{
			row("bob", 900, 90, 2.125, 2), row("ada", 600, 60, 1.75, 3)}}},
		{"by model", store.UsageQuery{Group: store.UsageByModel}, store.UsageReport{Total: all, Rows: []store.UsageRow{
			row("m1", 700, 70, 2.75, 3), row("m2", 800, 80, 1.125, 2)}}},
		{"by session", store.UsageQuery{Group: store.UsageBySession}, store.UsageReport{Total: all, Rows: []store.UsageRow{
			row("bob/one", 900, 90, 2.125, 2), row("ada/two", 300, 30, 1, 1), row("ada/one", 300, 30, 0.75, 2)}}},
		{"one agent", store.UsageQuery{Group: store.UsageByModel, Agent: "ada"}, store.UsageReport{Total: row("", 600, 60, 1.75, 3),
			Rows: []store.UsageRow{row("m2", 300, 30, 1, 1), row("m1", 300, 30, 0.75, 2)}}},
		{"one session", store.UsageQuery{Group: store.UsageByDay, Session: "ada/one"}, store.UsageReport{Total: row("", 300, 30, 0.75, 2),
			Rows: []store.UsageRow{row("2026-11-20", 100, 10, 0.5, 1), row("2026-11-21", 200, 20, 0.25, 1)}}},
		{"a session nobody has", store.UsageQuery{Group: store.UsageByDay, Session: "ada/none"}, store.UsageReport{Rows: []store.UsageRow{}}},
		{"since", store.UsageQuery{Group: store.UsageByAgent, Since: day.Add(26 * time.Hour)}, store.UsageReport{Total: row("", 1200, 120, 3.125, 3),
			Rows: []store.UsageRow{row("bob", 900, 90, 2.125, 2), row("ada", 300, 30, 1, 1)}}},
		{"since and until", store.UsageQuery{Group: store.UsageByAgent, Since: day.Add(25 * time.Hour), Until: day.Add(49 * time.Hour)},
			store.UsageReport{Total: row("", 500, 50, 1.25, 2), Rows: []store.UsageRow{row("ada", 500, 50, 1.25, 2)}}},
		{"limit", store.UsageQuery{Group: store.UsageBySession, Limit: 2}, store.UsageReport{Total: all, Truncated: true, Rows: []store.UsageRow{
			row("bob/one", 900, 90, 2.125, 2), row("ada/two", 300, 30, 1, 1)}}},
		{"limit equal to the rows", store.UsageQuery{Group: store.UsageByAgent, Limit: 2}, store.UsageReport{Total: all, Rows: []store.UsageRow{
			row("bob", 900, 90, 2.125, 2), row("ada", 600, 60, 1.75, 3)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.UsageReport(t.Context(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

func testUsageReportRefusesBadQueries(t *testing.T, x *suite) {
	s, day := usageFixture(t, x)
	for _, q := range []store.UsageQuery{
		{Group: ""},
		{Group: "week"},
		{Group: store.UsageByDay, Session: "no-slash"},
		{Group: store.UsageByDay, Session: "/key"},
		{Group: store.UsageByDay, Session: "ada/"},
		{Group: store.UsageByDay, Agent: "bob", Session: "ada/one"},
		{Group: store.UsageByDay, Since: day, Until: day},
		{Group: store.UsageByDay, Since: day, Until: day.Add(-time.Hour)},
		{Group: store.UsageByDay, Limit: -1},
		{Group: store.UsageByDay, Limit: store.MaxUsageLimit + 1},
	} {
		if _, err := s.UsageReport(t.Context(), q); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", q, err)
		}
	}
}

func testQueueDepthAndSessionStates(t *testing.T, x *suite) {
	s, _ := usageFixture(t, x)
	ctx := t.Context()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := s.QueueDepth(ctx); err != nil || n != 0 {
		t.Fatalf("empty inboxes: %d, %v", n, err)
	}
	ada, _ := s.SessionByAddress(ctx, "ada", "one")
	bob, _ := s.SessionByAddress(ctx, "bob", "one")
	var items []int64
	for _, id := range []int64{ada.ID, ada.ID, bob.ID} {
		it, _, err := s.Enqueue(ctx, store.InboxItem{Session: id, Kind: "input", Text: "hi", State: store.InboxPending})
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, it.ID)
	}
	if err := s.Commit(ctx, &store.Batch{Session: ada.ID, Done: items[:1], State: store.StateActive}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.QueueDepth(ctx); err != nil || n != 2 {
		t.Errorf("queue depth %d, %v; want 2", n, err)
	}
	states, err := s.SessionStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]int64{store.StateCreated: 2, store.StateActive: 1}, states); d != "" {
		t.Errorf("session states (-want +got)\n%s", d)
	}
	s.Close()
	for name, err := range map[string]error{
		"ping":   s.Ping(ctx),
		"depth":  func() error { _, err := s.QueueDepth(ctx); return err }(),
		"states": func() error { _, err := s.SessionStates(ctx); return err }(),
		"usage":  func() error { _, err := s.UsageReport(ctx, store.UsageQuery{Group: store.UsageByDay}); return err }(),
	} {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}
