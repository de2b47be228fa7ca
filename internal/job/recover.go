package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentd/internal/store"
)

// Recover resumes the runs left open in the store (queued or running,
// by a node that stopped or lost its lead) of the jobs named, or of
// every active job if none is: each is submitted again with its
// idempotency key, so that an input accepted before is not accepted
// twice (the runtime returns its turn), then waited for, finished and
// delivered like any run. It first delivers the runs that ended and
// whose delivery was not recorded (a crash between the two; up to
// store.MaxRunLimit of a job at a time, the rest at the next Recover).
// A job's runs are delivered and resumed in order, one after the other,
// in a goroutine the Runner owns. Runs this Runner is executing or
// delivering already are left to it; the runs of a job that is not
// active stay as they are until it is (the Scheduler recovers a job it
// activates). It also fires the chained runs a crash kept from starting
// (recoverChains). It returns how many runs it delivered and resumed, and the errors of
// the jobs it could not read, having recovered the others.
func (r *Runner) Recover(ctx context.Context, jobs ...string) (int, error) {
	if len(jobs) == 0 {
		for name := range r.Jobs() {
			jobs = append(jobs, name)
		}
	}
	n := 0
	var errs []error // one job's failure leaves the others recovered
	for _, name := range jobs {
		pending, err := r.runs.UndeliveredRuns(ctx, name, store.MaxRunLimit)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: undelivered runs: %w", name, err))
			continue
		}
		open, err := r.runs.OpenRuns(ctx, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("job %s: open runs: %w", name, err))
			continue
		}
		if err := r.recoverChains(ctx, name, time.Now()); err != nil {
			errs = append(errs, err) // its own runs are still recovered
		}
		late := r.adopt(name, pending)
		runs := r.adopt(name, open)
		if len(runs)+len(late) == 0 {
			continue
		}
		n += len(runs) + len(late)
		go func() {
			for _, ru := range late {
				r.deliverLate(ru)
			}
			for _, ru := range runs {
				r.log.Info("job run resumed", "job", ru.name, "run", ru.res.Run, "status", ru.res.Status)
				r.execute(ru)
			}
		}()
	}
	return n, errors.Join(errs...)
}

// deliverLate delivers a run that ended undelivered, unless its delivery
// was recorded since it was listed (by the node that ended it).
func (r *Runner) deliverLate(ru *run) {
	defer func() {
		r.mu.Lock()
		delete(r.inFlight, ru.name+"/"+ru.res.Run)
		r.mu.Unlock()
		r.wg.Done()
	}()
	jr, err := r.runs.JobRun(r.ctx, ru.name, ru.res.Run)
	if err != nil || !jr.Undelivered() {
		return
	}
	r.log.Info("job run delivered late", "job", ru.name, "run", jr.Run, "status", jr.Status)
	res := ResultOf(jr)
	r.settle(r.ctx, ru.spec, &res)
}

// adopt returns the runs of open (or of undelivered runs) this Runner
// is not executing, marked in flight and counted in r.wg (none once it
// is closed).
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
