package postgres_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/store/sqlite"
	"agentd/internal/testkit"
)

// The benchmarks here run the same work on both stores in one run, so
// that their figures compare on the same machine under the same load:
//
//	go test -run '^$' -bench . ./internal/store/postgres/
//
// SQLite runs with synchronous=full and PostgreSQL with its defaults
// (synchronous_commit=on, fsync=on): a commit is durable in both.

// benchStores opens a new store of each kind.
func benchStores(b *testing.B) map[string]func(b *testing.B) store.Store {
	return map[string]func(b *testing.B) store.Store{
		"sqlite": func(b *testing.B) store.Store {
			s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"), &sqlite.Options{Synchronous: sqlite.SyncFull})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		},
		"postgres": func(b *testing.B) store.Store {
			s, err := postgres.Open(b.Context(), pgtest.NewDB(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		},
	}
}

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

// latencies collects durations and reports their percentiles.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B, unit string) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	at := func(p float64) float64 { return float64(l.d[int(p*float64(len(l.d)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs/"+unit)
	b.ReportMetric(at(0.99), "p99-µs/"+unit)
}

// BenchmarkStoreCommit measures 3-event commits from one goroutine (each
// pays its own sync) and from 100 goroutines on 100 sessions (sharing
// syncs through group commit), with each commit's latency.
func BenchmarkStoreCommit(b *testing.B) {
	pgtest.URL(b)
	for _, kind := range []string{"sqlite", "postgres"} {
		open := benchStores(b)[kind]
		for _, par := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/writers=%d", kind, par), func(b *testing.B) {
				s := open(b)
				ids := make([]int64, par)
				for i := range ids {
					sess, _, err := s.Session(b.Context(), "bench", "s"+strconv.Itoa(i))
					if err != nil {
						b.Fatal(err)
					}
					ids[i] = sess.ID
				}
				var lat latencies
				var next atomic.Int64
				b.ResetTimer()
				var wg sync.WaitGroup
				var done atomic.Int64
				for g := range par {
					wg.Go(func() {
						batch := turnBatch(ids[g])
						for next.Add(1) <= int64(b.N) {
							t0 := time.Now()
							if err := s.Commit(context.Background(), batch); err != nil {
								b.Error(err)
								return
							}
							lat.add(time.Since(t0))
							done.Add(1)
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(done.Load())/b.Elapsed().Seconds(), "commits/s")
				lat.report(b, "commit")
			})
		}
	}
}

// BenchmarkStoreTurns measures durable turns through the runtime (the
// echo model, no tools): 50 sessions each sending inputs one after the
// other and waiting for each reply, the turn's latency from send to its
// end.
func BenchmarkStoreTurns(b *testing.B) {
	pgtest.URL(b)
	const sessions = 50
	for _, kind := range []string{"sqlite", "postgres"} {
		open := benchStores(b)[kind]
		b.Run(kind, func(b *testing.B) {
			st := open(b)
			k := testkit.New(b, &testkit.Options{Wrap: func(store.Store) store.Store { return st }})
			if _, err := k.Runtime.Start(b.Context()); err != nil {
				b.Fatal(err)
			}
			var lat latencies
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range sessions {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						_, end, err := k.Runtime.Send(context.Background(), runtime.Input{Session: "assistant/s" + strconv.Itoa(i), Text: "hello", Source: "bench"})
						if err != nil || end.Status != event.StatusDone {
							b.Errorf("send: %v %+v", err, end)
							return
						}
						lat.add(time.Since(t0))
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
			lat.report(b, "turn")
		})
	}
}
