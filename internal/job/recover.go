package job

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"agentd/internal/store"
)

// Recover resumes the runs left open in the store (queued or running,
// by a node that stopped or lost its lead) of the jobs named, or of
// every active job if none is: each is submitted again with its
// idempotency key, so that an input accepted before is not accepted
// twice (the runtime returns its turn), then waited for, finished and
// delivered like any run. A job's open runs are resumed in order, one
// after the other, in a goroutine the Runner owns. Runs this Runner is
// executing already are left to it; the runs of a job that is not active
// stay open until it is (the Scheduler recovers a job it activates).
// It also fires the chained runs a crash kept from starting
// (recoverChains). It returns how many runs it resumed.
func (r *Runner) Recover(ctx context.Context, jobs ...string) (int, error) {
	if len(jobs) == 0 {
		for name := range r.Jobs() {
			jobs = append(jobs, name)
		}
	}
	n := 0
	for _, name := range jobs {
		open, err := r.runs.OpenRuns(ctx, name)
		if err != nil {
			return n, fmt.Errorf("job %s: open runs: %w", name, err)
		}
		if err := r.recoverChains(ctx, name, time.Now()); err != nil {
			return n, err
		}
		runs := r.adopt(name, open)
		if len(runs) == 0 {
			continue
		}
		n += len(runs)
		go func() {
			for _, ru := range runs {
				r.log.Info("job run resumed", "job", ru.name, "run", ru.res.Run, "status", ru.res.Status)
				r.execute(ru)
			}
		}()
	}
	return n, nil
}

// adopt returns the runs of open this Runner is not executing, marked
// in flight and counted in r.wg (none once it is closed).
func (r *Runner) adopt(name string, open []store.JobRun) []*run {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.jobs[name]
	if r.closed || !ok {
		return nil
	}
	var runs []*run
	for _, jr := range open {
		if r.inFlight[name+"/"+jr.Run] {
			continue
		}
		var f Fire
		switch jr.Trigger {
		case store.TriggerWebhook, store.TriggerWatch:
			f.Body = storedBody(jr.Payload)
		case store.TriggerChain:
			f.Body = storedBody(jr.Payload)
			f.Parent = bodyField(f.Body, "output")
		default:
			json.Unmarshal(jr.Payload, &f.Payload) // as it was written
		}
		f.At, f.Trigger = jr.ScheduledAt, jr.Trigger
		r.inFlight[name+"/"+jr.Run] = true
		r.wg.Add(1)
		runs = append(runs, r.newRun(s, jr, f))
	}
	return runs
}
