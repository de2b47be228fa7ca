package vector

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTopK(t *testing.T) {
	ids := []int64{10, 11, 12, 13, 14}
	vecs := [][]float32{
		{1, 0},     // 1
		{0, 1},     // 0
		{0.6, 0.8}, // 0.6
		{1, 0},     // 1, ties with 10
		{-1, 0},    // -1
	}
	q := []float32{1, 0}
	tests := []struct {
		name string
		ids  []int64
		vecs [][]float32
		k    int
		want []Hit
	}{
		{"top 2 tie by id", ids, vecs, 2, []Hit{{10, 1}, {13, 1}}},
		{"top 3", ids, vecs, 3, []Hit{{10, 1}, {13, 1}, {12, 0.6}}},
		{"all", ids, vecs, 5, []Hit{{10, 1}, {13, 1}, {12, 0.6}, {11, 0}, {14, -1}}},
		{"k beyond n", ids, vecs, 50, []Hit{{10, 1}, {13, 1}, {12, 0.6}, {11, 0}, {14, -1}}},
		{"k zero", ids, vecs, 0, nil},
		{"k negative", ids, vecs, -1, nil},
		{"empty", nil, nil, 3, nil},
		{"fewer ids than vecs", ids[:2], vecs, 5, []Hit{{10, 1}, {11, 0}}},
		{"fewer vecs than ids", ids, vecs[:1], 5, []Hit{{10, 1}}},
		{"nan skipped", []int64{1, 2}, [][]float32{{float32(math.NaN()), 0}, {0.5, 0}}, 2, []Hit{{2, 0.5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TopK(q, tt.ids, tt.vecs, tt.k)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("TopK (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTopKTiesKeepSmallestIDs(t *testing.T) {
	// Every vector scores the same; the heap must keep the smallest ids
	// whatever order they arrive in.
	ids := []int64{9, 3, 7, 1, 8, 2, 6, 4, 5, 0}
	vecs := make([][]float32, len(ids))
	for i := range vecs {
		vecs[i] = []float32{1}
	}
	got := TopK([]float32{1}, ids, vecs, 4)
	want := []Hit{{0, 1}, {1, 1}, {2, 1}, {3, 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TopK (-want +got):\n%s", diff)
	}
}

// bruteForce ranks by sorting every score, as a reference for the heap.
func bruteForce(q []float32, ids []int64, vecs [][]float32, k int, filter func(int64) bool) []Hit {
	var all []Hit
	for i, v := range vecs {
		if filter == nil || filter(ids[i]) {
			all = append(all, Hit{ids[i], Dot(q, v)})
		}
	}
	h := topHeap{h: all}
	all = h.sorted()
	if len(all) > k {
		all = all[:k]
	}
	return all
}

func TestTopKMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ids := make([]int64, 500)
	vecs := make([][]float32, 500)
	for i := range ids {
		ids[i] = int64(r.IntN(1000)) // duplicates allowed
		vecs[i] = randUnit(r, 16)
	}
	for _, k := range []int{1, 5, 20, 499, 500, 600} {
		q := randUnit(r, 16)
		got := TopK(q, ids, vecs, k)
		want := bruteForce(q, ids, vecs, k, nil)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("k=%d (-want +got):\n%s", k, diff)
		}
	}
}

func TestIndex(t *testing.T) {
	x := NewIndex(2)
	for id, v := range map[int64][]float32{
		1: {1, 0},
		2: {0, 1},
		3: {0.6, 0.8},
		4: {-1, 0},
	} {
		if err := x.Add(id, v); err != nil {
			t.Fatal(err)
		}
	}
	q := []float32{1, 0}
	if got := x.Len(); got != 4 {
		t.Fatalf("Len = %d, want 4", got)
	}
	check := func(name string, got, want []Hit) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	check("search", x.Search(q, 3, nil), []Hit{{1, 1}, {3, 0.6}, {2, 0}})
	check("filter", x.Search(q, 3, func(id int64) bool { return id%2 == 0 }), []Hit{{2, 0}, {4, -1}})
	check("filter none", x.Search(q, 3, func(int64) bool { return false }), nil)

	// Replacing keeps one row per id.
	if err := x.Add(4, []float32{0.8, 0.6}); err != nil {
		t.Fatal(err)
	}
	if got := x.Len(); got != 4 {
		t.Fatalf("Len after replace = %d, want 4", got)
	}
	check("after replace", x.Search(q, 2, nil), []Hit{{1, 1}, {4, 0.8}})

	// Removing the first row moves the last one into its place.
	if !x.Remove(1) {
		t.Fatal("Remove(1) = false")
	}
	if x.Remove(1) {
		t.Fatal("second Remove(1) = true")
	}
	check("after remove", x.Search(q, 10, nil), []Hit{{4, 0.8}, {3, 0.6}, {2, 0}})
	for _, id := range []int64{2, 3, 4} {
		x.Remove(id)
	}
	if got := x.Len(); got != 0 {
		t.Fatalf("Len after removing all = %d", got)
	}
	check("empty", x.Search(q, 10, nil), nil)
	if err := x.Add(7, []float32{0, 1}); err != nil {
		t.Fatal(err)
	}
	check("reuse", x.Search([]float32{0, 1}, 1, nil), []Hit{{7, 1}})
}

func TestIndexErrors(t *testing.T) {
	x := NewIndex(3)
	if err := x.Add(1, []float32{1, 0}); !errors.Is(err, ErrDim) {
		t.Errorf("short vector: %v, want ErrDim", err)
	}
	if err := x.Add(1, nil); !errors.Is(err, ErrDim) {
		t.Errorf("nil vector: %v, want ErrDim", err)
	}
	if err := x.Add(1, []float32{1, float32(math.NaN()), 0}); !errors.Is(err, ErrNotFinite) {
		t.Errorf("NaN: %v, want ErrNotFinite", err)
	}
	if err := x.Add(1, []float32{1, 0, float32(math.Inf(-1))}); !errors.Is(err, ErrNotFinite) {
		t.Errorf("Inf: %v, want ErrNotFinite", err)
	}
	if err := x.Add(1, []float32{1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if got := x.Search([]float32{1, 0}, 5, nil); got != nil {
		t.Errorf("wrong-length query = %v, want nil", got)
	}
	if got := x.Search([]float32{1, 0, 0}, 0, nil); got != nil {
		t.Errorf("k=0 = %v, want nil", got)
	}
	if got := x.Len(); got != 1 {
		t.Errorf("Len = %d, want 1", got)
	}
}

func TestIndexLearnsDim(t *testing.T) {
	x := NewIndex(0)
	if got := x.Dim(); got != 0 {
		t.Fatalf("Dim = %d, want 0", got)
	}
	if err := x.Add(1, []float32{0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if got := x.Dim(); got != 3 {
		t.Fatalf("Dim = %d, want 3", got)
	}
	if err := x.Add(2, []float32{1, 0}); !errors.Is(err, ErrDim) {
		t.Errorf("second vector of another length: %v, want ErrDim", err)
	}
}

// TestIndexMatchesTopK covers both the sequential scan and the split scan
// (n × dim ≥ parallelMin) against the reference.
func TestIndexMatchesTopK(t *testing.T) {
	for _, n := range []int{50, parallelMin/64 + 777} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, uint64(n)))
			x := NewIndex(64)
			ids := make([]int64, n)
			vecs := make([][]float32, n)
			for i := range n {
				ids[i] = int64(i * 3)
				vecs[i] = randUnit(r, 64)
				if err := x.Add(ids[i], vecs[i]); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			seen := 0
			filter := func(id int64) bool {
				mu.Lock()
				seen++
				mu.Unlock()
				return id%2 == 0
			}
			for _, k := range []int{1, 20, n + 1} {
				q := randUnit(r, 64)
				if diff := cmp.Diff(bruteForce(q, ids, vecs, k, nil), x.Search(q, k, nil)); diff != "" {
					t.Errorf("k=%d (-want +got):\n%s", k, diff)
				}
				seen = 0
				got := x.Search(q, k, filter)
				if seen != n {
					t.Errorf("filter called %d times, want %d", seen, n)
				}
				if diff := cmp.Diff(bruteForce(q, ids, vecs, k, func(id int64) bool { return id%2 == 0 }), got); diff != "" {
					t.Errorf("k=%d filtered (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

func TestIndexConcurrent(t *testing.T) {
	x := NewIndex(8)
	r := rand.New(rand.NewPCG(11, 12))
	vecs := make([][]float32, 200)
	for i := range vecs {
		vecs[i] = randUnit(r, 8)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for round := range 20 {
			for i, v := range vecs {
				if err := x.Add(int64(i), v); err != nil {
					t.Error(err)
					return
				}
				if (i+round)%3 == 0 {
					x.Remove(int64(i))
				}
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			for i := range 200 {
				hits := x.Search(vecs[i], 5, nil)
				for j := 1; j < len(hits); j++ {
					if worse(hits[j-1], hits[j]) {
						t.Errorf("hits out of order: %v", hits)
						return
					}
				}
				_ = x.Len()
			}
		})
	}
	wg.Wait()
}

// benchIndex builds an index of n random unit vectors of dim elements.
func benchIndex(b *testing.B, n, dim int) (*Index, []float32) {
	b.Helper()
	r := rand.New(rand.NewPCG(13, 14))
	x := NewIndex(dim)
	v := make([]float32, dim)
	for i := range n {
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		Normalize(v)
		if err := x.Add(int64(i), v); err != nil {
			b.Fatal(err)
		}
	}
	return x, randUnit(r, dim)
}

func BenchmarkIndexSearch100kx384(b *testing.B) {
	x, q := benchIndex(b, 100_000, 384)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if hits := x.Search(q, 20, nil); len(hits) != 20 {
			b.Fatalf("%d hits", len(hits))
		}
	}
}

func BenchmarkIndexSearch10kx384(b *testing.B) {
	x, q := benchIndex(b, 10_000, 384)
	b.ReportAllocs()
	for b.Loop() {
		x.Search(q, 20, nil)
	}
}

func BenchmarkTopK(b *testing.B) {
	r := rand.New(rand.NewPCG(15, 16))
	const n = 10_000
	ids := make([]int64, n)
	vecs := make([][]float32, n)
	for i := range n {
		ids[i] = int64(i)
		vecs[i] = randUnit(r, 384)
	}
	q := randUnit(r, 384)
	b.ReportAllocs()
	for b.Loop() {
		TopK(q, ids, vecs, 20)
	}
}
