package postgres_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"agentd/internal/store"
	"agentd/internal/store/postgres/pgtest"
)

// benchRunAt is the first scheduled time of the runs' benchmarks.
var benchRunAt = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

// benchRun is the i-th run of job: scheduled i seconds after benchRunAt.
func benchRun(job string, i int64, trigger string) store.JobRun {
	at := benchRunAt.Add(time.Duration(i) * time.Second)
	return store.JobRun{Job: job, Run: store.RunID(at, ""), ScheduledAt: at, Trigger: trigger,
		Session: "briefer/job:" + job + ":" + store.RunID(at, ""), Status: store.RunRunning, Node: "bench",
		Payload: []byte(`{"delivery":"d-1234","paths":["notes/today.md"]}`)}
}

// benchOutput is a run's output of a typical size: a briefing of about
// 1 KiB.
var benchOutput = strings.Repeat("A line of the morning briefing, with a figure or two: 42. ", 18)

// BenchmarkJobRun measures one run's record from one goroutine: taken
// (StartRun) and ended with its figures and output (FinishRun), two
// durable writes.
func BenchmarkJobRun(b *testing.B) {
	pgtest.URL(b)
	for _, kind := range []string{"sqlite", "postgres"} {
		open := benchStores(b)[kind]
		b.Run(kind, func(b *testing.B) {
			s := open(b).(store.JobRunStore)
			ctx := context.Background()
			b.ReportAllocs()
			var i int64
			for b.Loop() {
				i++
				r, created, err := s.StartRun(ctx, benchRun("digest", i, store.TriggerCron))
				if err != nil || !created {
					b.Fatalf("StartRun = %v, %v", created, err)
				}
				if _, err := s.FinishRun(ctx, store.JobRun{Job: r.Job, Run: r.Run, Status: store.RunDone, Steps: 3,
					TokensIn: 1800, TokensOut: 420, CostUSD: 0.004, Output: benchOutput}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLastRun measures a schedule's catch-up question, the last
// fire of one job, with 10,000 jobs of 3 runs each (two cron fires, then
// a webhook's, the newest): of any trigger, and of cron only, which
// passes over the webhook's.
func BenchmarkLastRun(b *testing.B) {
	pgtest.URL(b)
	const jobs = 10000
	triggers := []string{store.TriggerWebhook, store.TriggerCron, store.TriggerCron} // newest first
	for _, kind := range []string{"sqlite", "postgres"} {
		open := benchStores(b)[kind]
		b.Run(kind, func(b *testing.B) {
			s := open(b).(store.JobRunStore)
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range 32 {
				wg.Go(func() {
					for i := next.Add(1); i <= jobs; i = next.Add(1) {
						for k, tr := range triggers {
							if _, _, err := s.StartRun(ctx, benchRun("job"+strconv.FormatInt(i, 10), int64(3-k), tr)); err != nil {
								b.Error(err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			if b.Failed() {
				b.FailNow()
			}
			for _, c := range []struct {
				name     string
				triggers []string
				want     int64
			}{{"any", nil, 3}, {"cron", []string{store.TriggerCron}, 2}} {
				b.Run(c.name, func(b *testing.B) {
					want := benchRunAt.Add(time.Duration(c.want) * time.Second)
					b.ReportAllocs()
					var i int64
					for b.Loop() {
						i++
						r, err := s.LastRun(ctx, "job"+strconv.FormatInt(i%jobs+1, 10), c.triggers...)
						if err != nil || !r.ScheduledAt.Equal(want) {
							b.Fatalf("LastRun = %v, %v; want the run at %v", r.ScheduledAt, err, want)
						}
					}
				})
			}
		})
	}
}
