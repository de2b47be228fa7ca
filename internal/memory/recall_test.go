package memory

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/embed"
	"agentd/internal/vector"
)

func texts(r Recall) []string {
	var out []string
	for _, it := range r.Items {
		out = append(out, it.Text)
	}
	return out
}

func recallT(t *testing.T, s *Store, q Query) Recall {
	t.Helper()
	r, err := s.Recall(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// corpus fills a1, a2 and the shared scope. The clock ends at t0.
func corpus(t *testing.T, s *Store, c *clock) {
	c.Set(t0.Add(-300 * 24 * time.Hour))
	remember(t, s, "a1", Remember{Insight: "The cache outage was fixed by a restart."})
	c.Set(t0.Add(-time.Hour))
	for _, in := range []Remember{
		{Insight: "The cache outage was fixed by a rollback."},
		{Insight: "Alice prefers green tea in the morning."},
		{Insight: "Alice prefers green tea in the mornings."},
		{Insight: "The quarterly roadmap review is on Thursdays."},
		{Entities: []EntityInput{{Name: "Bob", Type: "person", Observations: []string{"enjoys hiking in the mountains"}}}},
	} {
		remember(t, s, "a1", in)
	}
	remember(t, s, "a2", Remember{Insight: "Green tea is what a2 keeps to itself."})
	remember(t, s, Shared, Remember{Insight: "Everyone drinks green tea at the offsite."})
	c.Set(t0)
	drain(t, s)
}

func TestRecallRanking(t *testing.T) {
	s, c := newStore(t, hashed())
	corpus(t, s, c)
	for _, tc := range []struct {
		name string
		q    Query
		want []string // the first results, in order
		not  []string // results that must not appear
	}{
		{"exact word", Query{Scope: "a1", Text: "when is the roadmap review?"},
			[]string{"The quarterly roadmap review is on Thursdays."}, nil},
		{"paraphrase by shared n-grams", Query{Scope: "a1", Text: "mountain hikes", Kinds: []string{KindObservation}},
			[]string{"enjoys hiking in the mountains"}, nil},
		{"newer first", Query{Scope: "a1", Text: "cache outage fixed", K: 2},
			[]string{"The cache outage was fixed by a rollback.", "The cache outage was fixed by a restart."}, nil},
		{"near-duplicates dropped", Query{Scope: "a1", Text: "green tea"},
			[]string{"Alice prefers green tea in the morning."},
			[]string{"Alice prefers green tea in the mornings.", "Green tea is what a2 keeps to itself.", "Everyone drinks green tea at the offsite."}},
		{"shared included on request", Query{Scope: "a1", Text: "green tea offsite", Shared: true},
			[]string{"Everyone drinks green tea at the offsite."}, []string{"Green tea is what a2 keeps to itself."}},
		{"other scope", Query{Scope: "a2", Text: "green tea"},
			[]string{"Green tea is what a2 keeps to itself."}, []string{"Alice prefers green tea in the morning."}},
		{"accents folded", Query{Scope: "a1", Text: "thursdäys"},
			[]string{"The quarterly roadmap review is on Thursdays."}, nil},
		{"since", Query{Scope: "a1", Text: "cache outage", Since: t0.Add(-24 * time.Hour)},
			[]string{"The cache outage was fixed by a rollback."}, []string{"The cache outage was fixed by a restart."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := recallT(t, s, tc.q)
			if r.Degraded {
				t.Fatalf("degraded: %s", r.Reason)
			}
			got := texts(r)
			if len(got) < len(tc.want) || !slices.Equal(got[:len(tc.want)], tc.want) {
				t.Errorf("results %q, want them to start with %q", got, tc.want)
			}
			for _, n := range tc.not {
				if slices.Contains(got, n) {
					t.Errorf("results %q contain %q", got, n)
				}
			}
		})
	}
}

func TestRecallItem(t *testing.T) {
	s, c := newStore(t, hashed())
	c.Set(t0.Add(-time.Hour))
	if _, err := s.Remember(context.Background(), "a1", Remember{Entities: []EntityInput{{Name: "Bob", Observations: []string{"enjoys hiking in the mountains"}}}},
		Provenance{Session: "chat:bob", Turn: 4}); err != nil {
		t.Fatal(err)
	}
	c.Set(t0)
	drain(t, s)
	r := recallT(t, s, Query{Scope: "a1", Text: "hiking", Kinds: []string{KindObservation}})
	if len(r.Items) != 1 {
		t.Fatalf("items %+v, want one", r.Items)
	}
	it := r.Items[0]
	it.Score = 0
	want := Item{Kind: KindObservation, ID: 1, Scope: "a1", Entity: "Bob", Text: "enjoys hiking in the mountains",
		Snippet: "enjoys «hiking» in the mountains", Created: t0.Add(-time.Hour), Provenance: Provenance{Session: "chat:bob", Turn: 4}}
	if d := cmp.Diff(want, it); d != "" {
		t.Errorf("item (-want +got):\n%s", d)
	}
	if r.Items[0].Score <= 0 {
		t.Errorf("score %v, want > 0", r.Items[0].Score)
	}
}

func TestRecallKeywordOnly(t *testing.T) {
	s, c := newStore(t, nil)
	corpus(t, s, c)
	r := recallT(t, s, Query{Scope: "a1", Text: "roadmap"})
	if !r.Degraded || !strings.Contains(r.Reason, "no embedder") {
		t.Errorf("Degraded %v %q, want degraded for want of an embedder", r.Degraded, r.Reason)
	}
	if d := cmp.Diff([]string{"The quarterly roadmap review is on Thursdays."}, texts(r)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// A paraphrase sharing no word is beyond keyword search.
	if r := recallT(t, s, Query{Scope: "a1", Text: "mountain hikes"}); len(r.Items) != 0 {
		t.Errorf("keyword search found %q", texts(r))
	}
	// Recency still orders equally relevant memories.
	r = recallT(t, s, Query{Scope: "a1", Text: "cache outage", K: 2})
	if got := texts(r); len(got) != 2 || got[0] != "The cache outage was fixed by a rollback." {
		t.Errorf("got %q, want the newer first", got)
	}
}

func TestRecallErrors(t *testing.T) {
	s, _ := newStore(t, nil)
	for _, q := range []Query{
		{Scope: "", Text: "x"},
		{Scope: "a1", Text: "  "},
		{Scope: "a1", Text: "x", K: -1},
		{Scope: "a1", Text: "x", Kinds: []string{"fact"}},
	} {
		if _, err := s.Recall(context.Background(), q); err == nil {
			t.Errorf("Recall(%+v) succeeded", q)
		}
	}
}

type statusLog struct {
	mu  sync.Mutex
	got []string
}

func (l *statusLog) record(degraded bool, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if degraded {
		l.got = append(l.got, "degraded: "+reason)
	} else {
		l.got = append(l.got, "ok")
	}
}

func (l *statusLog) calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

func TestDegradedWhenEmbedderFails(t *testing.T) {
	ctx := context.Background()
	emb := &flaky{Embedder: hashed()}
	var log statusLog
	s := openAt(t, filepath.Join(t.TempDir(), "m.db"), &Options{Embedder: emb, OnStatus: log.record})
	remember(t, s, "a1", Remember{Insight: "The roadmap review is on Thursdays."})
	drain(t, s)

	emb.setDown(true)
	remember(t, s, "a1", Remember{Insight: "The budget review is on Mondays."})
	if _, err := s.embedBatch(ctx); err == nil {
		t.Fatal("embedBatch succeeded with the embedder down")
	}
	r := recallT(t, s, Query{Scope: "a1", Text: "budget review"})
	if !r.Degraded || !strings.Contains(r.Reason, "connection refused") {
		t.Errorf("Degraded %v %q, want degraded by the failure", r.Degraded, r.Reason)
	}
	if got := texts(r); len(got) == 0 || got[0] != "The budget review is on Mondays." {
		t.Errorf("keyword search gave %q", got)
	}

	emb.setDown(false)
	drain(t, s)
	r = recallT(t, s, Query{Scope: "a1", Text: "budget review"})
	if r.Degraded {
		t.Errorf("still degraded after recovery: %s", r.Reason)
	}
	want := []string{"degraded: embedder unavailable: embed: connection refused", "ok"}
	if d := cmp.Diff(want, log.calls()); d != "" {
		t.Errorf("OnStatus calls (-want +got):\n%s", d)
	}
}

func TestDegradedWhileQueryEmbeddingFails(t *testing.T) {
	emb := &flaky{Embedder: hashed()}
	s := openAt(t, filepath.Join(t.TempDir(), "m.db"), &Options{Embedder: emb})
	remember(t, s, "a1", Remember{Insight: "The roadmap review is on Thursdays."})
	drain(t, s)
	emb.setDown(true)
	r := recallT(t, s, Query{Scope: "a1", Text: "roadmap"})
	if !r.Degraded || len(r.Items) != 1 {
		t.Errorf("got %+v, want a degraded keyword result", r)
	}
}

func TestDegradedWhileBehind(t *testing.T) {
	var log statusLog
	s := openAt(t, filepath.Join(t.TempDir(), "m.db"), &Options{Embedder: hashed(), BatchSize: 2, OnStatus: log.record})
	for _, x := range []string{"alpha", "beta", "gamma", "delta"} {
		remember(t, s, "a1", Remember{Insight: "The " + x + " release ships soon."})
	}
	r := recallT(t, s, Query{Scope: "a1", Text: "release"})
	if !r.Degraded || !strings.Contains(r.Reason, "4 of 4 memories pending") {
		t.Errorf("Degraded %v %q, want catching up", r.Degraded, r.Reason)
	}
	drain(t, s)
	if r := recallT(t, s, Query{Scope: "a1", Text: "release"}); r.Degraded || len(r.Items) != 4 {
		t.Errorf("after catching up: %+v", r)
	}
	want := []string{"degraded: embeddings catching up: 4 of 4 memories pending", "ok"}
	if d := cmp.Diff(want, log.calls()); d != "" {
		t.Errorf("OnStatus calls (-want +got):\n%s", d)
	}
}

func TestNoEmbedderStatus(t *testing.T) {
	var log statusLog
	openAt(t, filepath.Join(t.TempDir(), "m.db"), &Options{OnStatus: log.record})
	want := []string{"degraded: no embedder configured: recall uses keyword search only"}
	if d := cmp.Diff(want, log.calls()); d != "" {
		t.Errorf("OnStatus calls (-want +got):\n%s", d)
	}
}

func TestRestartRebuildsIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	s := openAt(t, path, &Options{Embedder: hashed()})
	remember(t, s, "a1", Remember{Entities: []EntityInput{{Name: "Bob", Observations: []string{"enjoys hiking in the mountains"}}}})
	remember(t, s, "a1", Remember{Insight: "The roadmap review is on Thursdays."})
	drain(t, s)
	remember(t, s, "a1", Remember{Insight: "Left pending at shutdown."})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recall(ctx, Query{Scope: "a1", Text: "x"}); err == nil {
		t.Error("Recall after Close succeeded")
	}

	s = openAt(t, path, &Options{Embedder: hashed()})
	if got := s.indexed(); got != 3 {
		t.Errorf("after reopening, %d vectors indexed, want 3", got)
	}
	if got := s.backlog.Load(); got != 1 {
		t.Errorf("after reopening, %d pending, want 1", got)
	}
	r := recallT(t, s, Query{Scope: "a1", Text: "mountain hikes", Kinds: []string{KindObservation}})
	if got := texts(r); r.Degraded || len(got) == 0 || got[0] != "enjoys hiking in the mountains" {
		t.Errorf("recall after restart: %q degraded=%v", got, r.Degraded)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- s.Run(runCtx) }()
	waitFor(t, func() bool { return s.backlog.Load() == 0 && s.indexed() == 4 })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	s.Close()

	// Another embedder: the old vectors are redone.
	s = openAt(t, path, &Options{Embedder: embed.NewHashed(64)})
	if s.indexed() != 0 || s.backlog.Load() != 4 {
		t.Errorf("with a new model: %d indexed, %d pending; want 0 and 4", s.indexed(), s.backlog.Load())
	}
	drain(t, s)
	if s.index["a1"].Dim() != 64 {
		t.Errorf("index dimension %d, want 64", s.index["a1"].Dim())
	}
}

// waitFor polls cond until it holds; the test's own deadline bounds it.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMMRDropsDuplicates(t *testing.T) {
	v := func(xs ...float32) []float32 { vector.Normalize(xs); return xs }
	cs := []cand{
		{key: 1, item: Item{ID: 1, Score: 1.0}, vec: v(1, 0, 0)},
		{key: 2, item: Item{ID: 2, Score: 0.95}, vec: v(1, 0.01, 0)}, // a near-duplicate of 1
		{key: 3, item: Item{ID: 3, Score: 0.9}, vec: v(0.7, 0.7, 0)}, // related to 1
		{key: 4, item: Item{ID: 4, Score: 0.85}, vec: v(0, 0, 1)},    // different
	}
	var got []int64
	for _, c := range mmr(cs, 10) {
		got = append(got, c.item.ID)
	}
	if d := cmp.Diff([]int64{1, 4, 3}, got); d != "" {
		t.Errorf("MMR order (-want +got):\n%s", d)
	}
}

// TestRecallCrowdedScope: when another scope holds most of the matches,
// keyword search still finds the few of the asking scope.
func TestRecallCrowdedScope(t *testing.T) {
	s, _ := newStore(t, nil)
	for i := range 3 * candidates {
		remember(t, s, "busy", Remember{Insight: "Release notes for build " + strconv.Itoa(i) + " mention the release."})
	}
	remember(t, s, "quiet", Remember{Insight: "The release slipped to May."})
	r := recallT(t, s, Query{Scope: "quiet", Text: "release"})
	if d := cmp.Diff([]string{"The release slipped to May."}, texts(r)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
