package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// BenchmarkFireBurst: n jobs due at one time, fired by the Scheduler
// through a Runner over a real runtime and store (SQLite, synchronous
// full), as many cron jobs of one minute are. An op is one burst; its
// figures are how late the fires were accepted (Fired's fired − due):
// late-p50-ms, late-p99-ms, late-max-ms.
func BenchmarkFireBurst(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var p50, p99, pmax float64
			ops := 0
			for b.Loop() {
				late := fireBurst(b, n)
				p50 += pctMS(late, 50)
				p99 += pctMS(late, 99)
				pmax += pctMS(late, 100)
				ops++
			}
			b.ReportMetric(p50/float64(ops), "late-p50-ms")
			b.ReportMetric(p99/float64(ops), "late-p99-ms")
			b.ReportMetric(pmax/float64(ops), "late-max-ms")
		})
	}
}

// fireBurst activates n jobs due at one time a little ahead, runs a
// Scheduler until they have all fired and returns their lateness.
func fireBurst(b *testing.B, n int) []time.Duration {
	m := testkit.NewModel()
	agents := testkit.Agents{"assistant": testkit.Agent("assistant")}
	k := testkit.New(b, &testkit.Options{Model: m, Agents: agents})
	r := job.New(k.Runtime, k.Store, agents, nil)
	defer r.Close()
	late := make(chan time.Duration, n)
	s := job.NewScheduler(r, k.Store, &job.SchedulerOptions{Fired: func(_, _ string, due, fired time.Time, err error) {
		if err != nil {
			b.Error(err)
		}
		late <- fired.Sub(due)
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	at := time.Now().Add(time.Second + time.Duration(n)*4*time.Millisecond).Truncate(time.Millisecond)
	for i := range n {
		spec := fmt.Sprintf(`{"agent": "assistant", "prompt": "hello", "triggers": [{"at": %q}]}`, at.UTC().Format(time.RFC3339Nano))
		if err := r.Activate(ctx, &store.Extension{Type: "job", Name: fmt.Sprintf("j%04d", i), Spec: json.RawMessage(spec)}); err != nil {
			b.Fatal(err)
		}
	}
	for len(s.Next()) < n {
		if time.Now().After(at) {
			b.Fatalf("%d of %d jobs scheduled before their time (%s)", len(s.Next()), n, time.Until(at))
		}
		time.Sleep(time.Millisecond)
	}
	out := make([]time.Duration, 0, n)
	for range n {
		out = append(out, <-late)
	}
	return out
}

func pctMS(ds []time.Duration, p int) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := max((len(s)*p+99)/100-1, 0)
	return float64(s[i]) / float64(time.Millisecond)
}
