package sqlite_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkContextEvents10k reads the context of a session with 10,000
// events (2,500 turns of input, model call, text and turn end): what a
// turn of a session that is not cached reads before it starts.
func BenchmarkContextEvents10k(b *testing.B) {
	ctx := context.Background()
	s, ids := benchStore(b, 1)
	sess := ids[0]
	var evs []event.Event
	for i := range 2500 {
		turn := int64(i + 1)
		evs = append(evs,
			event.New(sess, turn, event.Input, event.InputData{Text: "Question " + strconv.Itoa(i) + ": how do I rotate the logs of service-" + strconv.Itoa(i%40) + "?"}),
			event.New(sess, turn, event.ModelCall, event.ModelCallData{Step: 1, InputTokens: 900, OutputTokens: 60}),
			event.New(sess, turn, event.Text, event.TextData{Text: "Use logrotate with a daily rule for /var/log/service-" + strconv.Itoa(i%40) + "; keep 14 files and compress them.", Step: 1}),
			event.New(sess, turn, event.TurnEnd, event.TurnEndData{Status: event.StatusDone}))
	}
	if err := s.Commit(ctx, &store.Batch{Session: sess, Events: evs}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		got, err := s.ContextEvents(ctx, sess)
		if err != nil || len(got) != 7500 {
			b.Fatal(len(got), err)
		}
	}
}

// BenchmarkTurnWrites is what a one-step turn writes, one after the
// other: its input into the inbox, then its input event, and its model
// call, text and turn end with the inbox item done. synchronous=NORMAL, so
// that what is measured is the statements rather than the disk's syncs.
func BenchmarkTurnWrites(b *testing.B) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), &sqlite.Options{Synchronous: sqlite.SyncNormal})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	sess, _, err := s.Session(ctx, "bench", "s")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		it, _, err := s.Enqueue(ctx, store.InboxItem{Session: sess.ID, Kind: event.Input, Text: "hello"})
		if err != nil {
			b.Fatal(err)
		}
		in := &store.Batch{Session: sess.ID, State: store.StateActive,
			Events: []event.Event{event.New(sess.ID, it.ID, event.Input, event.InputData{Text: "hello", Source: "api"})}}
		if err := s.Commit(ctx, in); err != nil {
			b.Fatal(err)
		}
		end := turnBatch(sess.ID)
		end.Done, end.State = []int64{it.ID}, store.StateIdle
		if err := s.Commit(ctx, end); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJobRunReads: what a scheduler's start reads of each job (its
// undelivered runs, its open runs, its last scheduled run) and a fire of
// its open runs, over 100 jobs of 3 runs each. An op is one job's four
// reads.
func BenchmarkJobRunReads(b *testing.B) {
	ctx := context.Background()
	s, _ := benchStore(b, 0)
	const jobs = 100
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	for j := range jobs {
		for k := range 3 {
			jr := store.JobRun{Job: "j" + strconv.Itoa(j), Run: store.RunID(at.Add(time.Duration(k)*time.Hour), ""),
				ScheduledAt: at.Add(time.Duration(k) * time.Hour), Trigger: store.TriggerCron, Status: store.RunRunning}
			if _, _, err := s.StartRun(ctx, jr); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		job := "j" + strconv.Itoa(i%jobs)
		i++
		if _, err := s.UndeliveredRuns(ctx, job, store.MaxRunLimit); err != nil {
			b.Fatal(err)
		}
		if _, err := s.OpenRuns(ctx, job); err != nil {
			b.Fatal(err)
		}
		if _, err := s.LastRun(ctx, job, store.TriggerCron, store.TriggerEvery, store.TriggerAt); err != nil {
			b.Fatal(err)
		}
		if _, err := s.OpenRuns(ctx, job); err != nil {
			b.Fatal(err)
		}
	}
}
