package job

import (
	"context"
	"fmt"
	"time"
)

// Run history retention: the scheduling node prunes the active jobs'
// old runs every PruneEvery while it leads.
const (
	// DefaultKeepRuns is how many of a job's newest runs are kept at
	// least when SchedulerOptions.KeepRuns is 0.
	DefaultKeepRuns = 1000
	// DefaultPruneEvery is how often the leader prunes when
	// SchedulerOptions.PruneEvery is 0.
	DefaultPruneEvery = time.Hour
)

// Pruner prunes a job's run history (store.JobRunStore): the optional
// ability of a Scheduler's LastRuns that has it pruning.
type Pruner interface {
	PruneRuns(ctx context.Context, job string, keep int, before time.Time) (int64, error)
}

// Prune removes the runs of the active jobs beyond the newest KeepRuns
// of each and, KeepRunsFor set, those scheduled longer than that before
// now (the store keeps each job's newest run, its open runs and those
// whose delivery is pending whatever their age). It returns how many it
// removed; the first job whose prune failed is told in the error, the
// others are still pruned. Without a Pruner it removes nothing.
func (s *Scheduler) Prune(ctx context.Context, now time.Time) (int64, error) {
	p, ok := s.runs.(Pruner)
	if !ok {
		return 0, nil
	}
	var before time.Time
	if s.keepFor > 0 {
		before = now.Add(-s.keepFor)
	}
	var n int64
	var first error
	for name := range s.r.Jobs() {
		k, err := p.PruneRuns(ctx, name, s.keep, before)
		n += k
		if err != nil && first == nil {
			first = fmt.Errorf("job %s: prune runs: %w", name, err)
		}
	}
	return n, first
}

// prune prunes the run history now and every s.pruneEvery until ctx
// ends: in a goroutine of its own, so that a long prune delays no fire.
func (s *Scheduler) prune(ctx context.Context) {
	if _, ok := s.runs.(Pruner); !ok {
		return
	}
	t := time.NewTicker(s.pruneEvery)
	defer t.Stop()
	for {
		n, err := s.Prune(ctx, time.Now())
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("job runs not pruned", "removed", n, "err", err)
		case n > 0:
			s.log.Info("job runs pruned", "removed", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
