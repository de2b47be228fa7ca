package history_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"agentd/internal/history"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// benchCorpus returns a store holding the generated corpus, built once into
// a file under os.TempDir named by its parameters, so that later runs
// reuse it.
func benchCorpus(b *testing.B, agents, sessions, messages int, seed int64) *sqlite.Store {
	b.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("agentd-history-bench-s%d-%d-%d-%d-%d.db", sqlite.SchemaVersion(), agents, sessions, messages, seed)
	path := filepath.Join(os.TempDir(), name)
	if _, err := os.Stat(path); err != nil {
		b.Logf("building %s (once)", path)
		tmp := path + ".building"
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(tmp + suffix)
		}
		st, err := sqlite.Open(ctx, tmp, &sqlite.Options{Synchronous: sqlite.SyncNormal})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := history.GenerateHistory(ctx, st, agents, sessions, messages, seed); err != nil {
			st.Close()
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		b.Logf("built in %v", time.Since(start).Round(time.Second))
		if err := os.Rename(tmp, path); err != nil {
			b.Fatal(err)
		}
	}
	st, err := sqlite.Open(ctx, path, &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkSearchHistory1M searches 1,000,000 stored messages (10 agents,
// 2,000 sessions) for the top 20 hits of one agent, with queries of one to
// three topic words, and reports the median latency.
func BenchmarkSearchHistory1M(b *testing.B) {
	const agents, sessions, messages = 10, 2000, 1_000_000
	st := benchCorpus(b, agents, sessions, messages, 1)
	queries := history.BenchQueries(200, 7)
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	hits := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		q := store.HistoryQuery{Query: queries[i%len(queries)], Agents: []string{fmt.Sprintf("agent-%d", rng.IntN(agents))}, Limit: 20}
		start := time.Now()
		h, _, err := st.SearchHistory(ctx, q)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		hits += len(h)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(hits)/float64(b.N), "hits/op")
}
