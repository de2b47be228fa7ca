package memory

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/embed"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// flaky is an embedder that fails while down is set.
type flaky struct {
	Embedder
	mu   sync.Mutex
	down bool
}

func (f *flaky) setDown(d bool) { f.mu.Lock(); f.down = d; f.mu.Unlock() }

func (f *flaky) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		return nil, errors.New("connection refused")
	}
	return f.Embedder.Embed(ctx, texts)
}

func openAt(t testing.TB, path string, o *Options) *Store {
	t.Helper()
	var s *Store
	var err error
	if usePostgres() {
		s, err = openPostgresAt(t, path, o)
	} else {
		s, err = Open(context.Background(), path, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newStore opens a store in a temporary directory with a fake clock and,
// unless emb is nil, the hashed embedder.
func newStore(t testing.TB, emb Embedder) (*Store, *clock) {
	t.Helper()
	c := &clock{now: t0}
	return openAt(t, filepath.Join(t.TempDir(), "memory.db"), &Options{Embedder: emb, Now: c.Now}), c
}

func hashed() Embedder { return embed.NewHashed(384) }

// drain embeds everything pending, as Run would, without a goroutine.
func drain(t testing.TB, s *Store) {
	t.Helper()
	for {
		n, err := s.embedBatch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func remember(t testing.TB, s *Store, scope string, in Remember) Result {
	t.Helper()
	r, err := s.Remember(context.Background(), scope, in, Provenance{Session: "chat:test", Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRememberAndGet(t *testing.T) {
	ctx := context.Background()
	s, c := newStore(t, nil)
	p := Provenance{Session: "telegram:1:2", Turn: 7}
	steps := []struct {
		in   Remember
		want Result
	}{
		{Remember{Entities: []EntityInput{{Name: "Alice Chen", Observations: []string{"likes green tea", "lives in Lyon"}}}},
			Result{Created: []string{"Alice Chen"}, Observations: []int64{1, 2}}},
		// Same entity, other case and spacing: appended, the duplicate skipped, the type filled in.
		{Remember{Entities: []EntityInput{{Name: " alice   chen ", Type: "person", Observations: []string{"likes green tea", " works on billing "}}}},
			Result{Observations: []int64{3}, Duplicates: 1}},
		{Remember{Insight: "Deploys on Friday go badly.", Tags: []string{"ops", "deploys"}}, Result{Insight: 1}},
		{Remember{Entities: []EntityInput{{Name: "Acme", Type: "company"}}, Insight: "Acme pays late."},
			Result{Created: []string{"Acme"}, Insight: 2}},
	}
	for i, st := range steps {
		c.Set(t0.Add(time.Duration(i) * time.Minute))
		got, err := s.Remember(ctx, "a1", st.in, p)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if d := cmp.Diff(st.want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("step %d (-want +got):\n%s", i, d)
		}
	}
	e, err := s.Get(ctx, "a1", "ALICE CHEN")
	if err != nil {
		t.Fatal(err)
	}
	want := Entity{ID: 1, Scope: "a1", Name: "Alice Chen", Type: "person", Created: t0, Updated: t0.Add(time.Minute), Provenance: p,
		Observations: []Observation{
			{ID: 1, Text: "likes green tea", Created: t0, Provenance: p},
			{ID: 2, Text: "lives in Lyon", Created: t0, Provenance: p},
			{ID: 3, Text: "works on billing", Created: t0.Add(time.Minute), Provenance: p},
		}}
	if d := cmp.Diff(want, e); d != "" {
		t.Errorf("Get (-want +got):\n%s", d)
	}
	if _, err := s.Get(ctx, "a2", "Alice Chen"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get in another scope: %v, want ErrNotFound", err)
	}
	items, err := s.List(ctx, "a1", 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, it := range items {
		kinds = append(kinds, it.Kind+":"+it.Text)
	}
	// Newest first; within one Remember, by kind and id.
	wantKinds := []string{"insight:Acme pays late.", "entity:Acme (company)", "insight:Deploys on Friday go badly.",
		"observation:works on billing", "observation:lives in Lyon", "observation:likes green tea", "entity:Alice Chen (person)"}
	if d := cmp.Diff(wantKinds, kinds); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}
}

func TestRememberErrors(t *testing.T) {
	s, _ := newStore(t, nil)
	long := string(make([]byte, MaxTextLen+1))
	for _, tc := range []struct {
		name  string
		scope string
		in    Remember
	}{
		{"nothing", "a1", Remember{}},
		{"empty scope", " ", Remember{Insight: "x"}},
		{"empty name", "a1", Remember{Entities: []EntityInput{{Name: "  ", Observations: []string{"x"}}}}},
		{"empty observation", "a1", Remember{Entities: []EntityInput{{Name: "A", Observations: []string{" "}}}}},
		{"long insight", "a1", Remember{Insight: "a" + long}},
		{"tags alone", "a1", Remember{Tags: []string{"x"}, Entities: []EntityInput{{Name: "A"}}}},
		{"bad utf8", "a1", Remember{Insight: "\xff\xfe"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Remember(context.Background(), tc.scope, tc.in, Provenance{})
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestRelate(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t, nil)
	remember(t, s, "a1", Remember{Entities: []EntityInput{{Name: "Alice", Type: "person"}}})
	p := Provenance{Session: "chat:x", Turn: 3}
	for _, tc := range []struct {
		rels    []Relation
		want    int
		wantErr error
	}{
		{[]Relation{{"Alice", "Acme", "works_at"}, {"Bob", "Alice", "reports_to"}}, 2, nil},
		{[]Relation{{"alice", "ACME", "works_at"}, {"Alice", "Acme", "founded"}}, 1, nil},
		{[]Relation{{"Alice", "", "x"}}, 0, ErrInvalid},
		{nil, 0, ErrInvalid},
	} {
		n, err := s.Relate(ctx, "a1", tc.rels, p)
		if !errors.Is(err, tc.wantErr) || n != tc.want {
			t.Errorf("Relate(%v) = %d, %v; want %d, %v", tc.rels, n, err, tc.want, tc.wantErr)
		}
	}
	e, err := s.Get(ctx, "a1", "Alice")
	if err != nil {
		t.Fatal(err)
	}
	want := []RelationInfo{
		{ID: 1, From: "Alice", To: "Acme", Type: "works_at", Created: t0, Provenance: p},
		{ID: 2, From: "Bob", To: "Alice", Type: "reports_to", Created: t0, Provenance: p},
		{ID: 3, From: "Alice", To: "Acme", Type: "founded", Created: t0, Provenance: p},
	}
	if d := cmp.Diff(want, e.Relations); d != "" {
		t.Errorf("relations (-want +got):\n%s", d)
	}
	if _, err := s.Get(ctx, "a1", "Bob"); err != nil {
		t.Errorf("Bob was not created: %v", err)
	}
}

func TestForget(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) *Store {
		s, _ := newStore(t, hashed())
		remember(t, s, "a1", Remember{Entities: []EntityInput{
			{Name: "Alice", Observations: []string{"likes tea", "plays chess"}},
			{Name: "Bob", Observations: []string{"likes coffee"}},
		}})
		remember(t, s, "a1", Remember{Insight: "standups are short"})
		remember(t, s, "a2", Remember{Insight: "another agent's insight"})
		if _, err := s.Relate(ctx, "a1", []Relation{{"Alice", "Bob", "knows"}, {"Bob", "Alice", "knows"}}, Provenance{}); err != nil {
			t.Fatal(err)
		}
		drain(t, s)
		return s
	}
	for _, tc := range []struct {
		name     string
		f        Forget
		want     int
		gone     []string // recall queries that must find nothing in a1
		indexed  int      // vectors left in a1's index
		relsLeft int      // Bob's relations left
	}{
		{"entity", Forget{Entities: []string{"alice"}}, 5, []string{"chess", "tea"}, 3, 0},
		{"observation", Forget{Observations: []int64{2}}, 1, []string{"chess"}, 5, 2},
		{"insight", Forget{Insights: []int64{1}}, 1, []string{"standups"}, 5, 2},
		{"relation id", Forget{Relations: []int64{1}}, 1, nil, 6, 1},
		{"link", Forget{Links: []Relation{{"BOB", "alice", "knows"}}}, 1, nil, 6, 1},
		{"other scope's ids", Forget{Insights: []int64{2}, Entities: []string{"Carol"}}, 0, nil, 6, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t)
			n, err := s.Forget(ctx, "a1", tc.f)
			if err != nil || n != tc.want {
				t.Fatalf("Forget = %d, %v; want %d", n, err, tc.want)
			}
			for _, q := range tc.gone {
				r, err := s.Recall(ctx, Query{Scope: "a1", Text: q})
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range r.Items {
					if it.Kind != KindEntity && it.Text != "" && containsWord(it.Text, q) {
						t.Errorf("recall %q still finds %+v", q, it)
					}
				}
			}
			if got := s.index["a1"].Len(); got != tc.indexed {
				t.Errorf("indexed vectors = %d, want %d", got, tc.indexed)
			}
			var rows int
			if err := s.rdb.QueryRow(`SELECT (SELECT count(*) FROM vectors) + (SELECT count(*) FROM pending)`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if rows != tc.indexed+1 { // a2's insight
				t.Errorf("vector rows = %d, want %d", rows, tc.indexed+1)
			}
			e, err := s.Get(ctx, "a1", "Bob")
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Relations) != tc.relsLeft {
				t.Errorf("Bob has %d relations, want %d", len(e.Relations), tc.relsLeft)
			}
		})
	}
	s := setup(t)
	if _, err := s.Forget(ctx, "a1", Forget{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty Forget: %v, want ErrInvalid", err)
	}
}

func containsWord(text, w string) bool {
	found := false
	words(text, func(x string, _, _ int) { found = found || x == w })
	return found
}
