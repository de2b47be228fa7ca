package sqlite_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// turnBatch is what a turn typically commits at its end: the assistant's
// text, the model call and the turn end.
func turnBatch(session int64) *store.Batch {
	return &store.Batch{
		Session: session,
		Events: []event.Event{
			event.New(session, 1, event.Text, event.TextData{Text: "The weather in Paris is sunny, 21°C."}),
			event.New(session, 1, event.ModelCall, event.ModelCallData{Provider: "openai", Model: "gpt", Step: 1, InputTokens: 812, OutputTokens: 34}),
			event.New(session, 1, event.TurnEnd, event.TurnEndData{Status: event.StatusDone, Reply: "The weather in Paris is sunny, 21°C.", Steps: 1}),
		},
	}
}

func benchStore(b *testing.B, sessions int) (*sqlite.Store, []int64) {
	b.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), &sqlite.Options{Synchronous: sqlite.SyncFull})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ids := make([]int64, sessions)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			sess, _, err := s.Session(ctx, "bench", "s"+strconv.Itoa(i))
			if err != nil {
				b.Error(err)
			}
			ids[i] = sess.ID
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return s, ids
}

func reportCommits(b *testing.B, s *sqlite.Store, before sqlite.WriterStats) {
	st := s.Stats()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	if tx := st.Commits - before.Commits; tx > 0 {
		b.ReportMetric(float64(st.Requests-before.Requests)/float64(tx), "req/tx")
	}
}

// BenchmarkCommit measures 3-event commits under synchronous=FULL, from one
// goroutine (every commit pays its own fsync) and from 100 (sessions share
// fsyncs through group commit).
func BenchmarkCommit(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		s, ids := benchStore(b, 1)
		ctx := context.Background()
		batch := turnBatch(ids[0])
		before := s.Stats()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := s.Commit(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		reportCommits(b, s, before)
	})
	b.Run("parallel100", func(b *testing.B) {
		const goroutinesPerProc = 50
		s, ids := benchStore(b, runtime.GOMAXPROCS(0)*goroutinesPerProc)
		ctx := context.Background()
		var next atomic.Int64
		before := s.Stats()
		b.SetParallelism(goroutinesPerProc) // 50 × GOMAXPROCS goroutines: 100 on 2 cores
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			batch := turnBatch(ids[int(next.Add(1)-1)%len(ids)])
			for pb.Next() {
				if err := s.Commit(ctx, batch); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportCommits(b, s, before)
	})
}
