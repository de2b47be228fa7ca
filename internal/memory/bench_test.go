package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkRecall100k measures hybrid recall (BM25 + 384-d vectors, RRF,
// recency, MMR) over 100,000 generated memories, reporting the median
// latency as p50-ms. Building the corpus takes a while and is not timed.
func BenchmarkRecall100k(b *testing.B) {
	benchRecall(b, 100_000)
}

func BenchmarkRecall10k(b *testing.B) {
	benchRecall(b, 10_000)
}

func benchRecall(b *testing.B, n int) {
	ctx := context.Background()
	s := openAt(b, filepath.Join(b.TempDir(), "memory.db"), &Options{Embedder: hashed(), BatchSize: 512})
	if err := Generate(ctx, s, "bench", n, 1); err != nil {
		b.Fatal(err)
	}
	drain(b, s)
	if got := s.indexed(); got < n {
		b.Fatalf("%d memories embedded, want at least %d", got, n)
	}
	queries := []string{
		"who prefers green tea?", "billing-service deploy failures", "what is Alice Chen responsible for",
		"meetings on Friday", "contract with Globex in Tokyo", "latency in the EU region", "error rate after deploy",
		"who works remotely in Berlin", "Postgres or SQLite", "pricing page customer churn",
	}
	lat := make([]time.Duration, 0, 1024)
	degraded := false
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		start := time.Now()
		r, err := s.Recall(ctx, Query{Scope: "bench", Text: queries[i%len(queries)], K: 10})
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		degraded = degraded || r.Degraded
		i++
	}
	if degraded {
		b.Fatal("recall was degraded")
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkRecallEmpty measures recall in a scope that holds no memory, as
// every turn of an agent with recall on does before it remembers anything:
// in an empty database, and beside another scope's 1,000 memories.
func BenchmarkRecallEmpty(b *testing.B) {
	for _, other := range []int{0, 1000} {
		b.Run(fmt.Sprintf("other=%d", other), func(b *testing.B) {
			ctx := context.Background()
			s := openAt(b, filepath.Join(b.TempDir(), "memory.db"), &Options{Embedder: hashed()})
			if other > 0 {
				if err := Generate(ctx, s, "other", other, 1); err != nil {
					b.Fatal(err)
				}
				drain(b, s)
			}
			b.ReportAllocs()
			for b.Loop() {
				r, err := s.Recall(ctx, Query{Scope: "assistant", Text: "hello there", K: 5})
				if err != nil || len(r.Items) > 0 {
					b.Fatal(r, err)
				}
			}
		})
	}
}
