package job

// The chain trigger: when a run of job X ends (its end recorded by
// FinishRun), each active job with a chain trigger after X whose `on`
// matches the run's status is fired once, with X's output as
// {{parent_output}} and X's run (a Result, as JSON) as {{payload}}.
//
// The child's run id is derived from the parent's run: its time is the
// parent's end as recorded, its tag a hash of the parent's job and run.
// StartRun takes an id once, so the node that ran the parent, a node
// that takes over, and Recover after a crash all fire the same child
// run, and only the first does. A crash between the parent's end and the
// child's start leaves no child run: Recover (recoverChains) fires the
// children of the parent's newest runs that ended within ChainWindow and
// after the child's row was last written (so that a job saved, changed
// or resumed does not follow the runs that ended before).

import (
	"agentd/internal/extension"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"agentd/internal/store"
)

// Chain conditions: which ends of the parent's runs fire a chain.
const (
	OnSuccess = "success" // a run done; the default
	OnFailure = "failure" // a run that ended in error
	OnEither  = "either"  // either of them
)

// ChainScan is how many of a parent's newest runs Recover looks at for
// chained runs never started; ChainWindow how long after a parent run's
// end its chained runs are still started by Recover (older ones were
// taken, or their runs pruned since, and are not fired again).
const (
	ChainScan   = store.DefaultRunLimit
	ChainWindow = 24 * time.Hour
)

// chainMatches reports whether a parent run that ended in status fires a
// chain with condition on.
func chainMatches(on, status string) bool {
	switch on {
	case OnEither:
		return status == store.RunDone || status == store.RunError
	case OnFailure:
		return status == store.RunError
	}
	return status == store.RunDone
}

// chainTag is the tag of the id of a run chained after the run parent of
// job: a hash, so that any parent makes a short id, the same every time.
func chainTag(job, parent string) string {
	sum := sha256.Sum256([]byte(job + "/" + parent))
	return "chain-" + hex.EncodeToString(sum[:8])
}

// chainFire is the fire of a run chained after the ended run parent.
func chainFire(parent store.JobRun) Fire {
	body, _ := json.Marshal(ResultOf(parent))
	return Fire{At: parent.EndedAt, Trigger: store.TriggerChain, Body: body, Parent: parent.Output,
		tag: chainTag(parent.Job, parent.Run)}
}

// children returns the active jobs with a chain trigger after parent
// that an end in status fires, sorted.
func (r *Runner) children(parent, status string) []string {
	var out []string
	r.mu.Lock()
	for name := range r.chained[parent] {
		for _, t := range r.jobs[name].Triggers {
			if t.Chain != nil && t.Chain.After == parent && chainMatches(t.Chain.On, status) {
				out = append(out, name)
				break
			}
		}
	}
	r.mu.Unlock()
	slices.Sort(out)
	return out
}

// link adds the active job name to the chained sets of the jobs it is
// chained after (on), or removes it (a job not active has none); r.mu
// is held.
func (r *Runner) link(name string, on bool) {
	s, ok := r.jobs[name]
	if !ok {
		return
	}
	for _, p := range parents(s) {
		switch {
		case on && r.chained[p] == nil:
			r.chained[p] = map[string]bool{name: true}
		case on:
			r.chained[p][name] = true
		default:
			delete(r.chained[p], name)
			if len(r.chained[p]) == 0 {
				delete(r.chained, p)
			}
		}
	}
}

// fireChains fires the jobs chained after the ended run parent. A child
// run taken before, or skipped by its job's concurrency, is no error;
// another is logged.
func (r *Runner) fireChains(ctx context.Context, parent store.JobRun) {
	if parent.EndedAt.IsZero() {
		return
	}
	for _, child := range r.children(parent.Job, parent.Status) {
		r.fireChain(ctx, child, parent)
	}
}

func (r *Runner) fireChain(ctx context.Context, child string, parent store.JobRun) {
	res, err := r.Run(ctx, child, chainFire(parent), false)
	switch {
	case err == nil:
		r.log.Info("job chained", "job", child, "run", res.Run, "after", parent.Job, "parent_run", parent.Run)
	case errors.Is(err, ErrTaken), errors.Is(err, ErrRunning):
	default:
		r.log.Warn("job chain not fired", "job", child, "after", parent.Job, "parent_run", parent.Run, "err", err)
	}
}

// recoverChains fires the runs chained after the newest ChainScan runs
// of each of job's parents that ended within ChainWindow of now and
// after job's row was last written, and whose chained run was never
// taken (a crash came between the parent's end and the child's start),
// oldest first.
func (r *Runner) recoverChains(ctx context.Context, job string, now time.Time) error {
	r.mu.Lock()
	sp, ok := r.jobs[job]
	since := r.since[job]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	s := *sp
	if from := now.Add(-ChainWindow); since.Before(from) {
		since = from
	}
	for _, t := range s.Triggers {
		if t.Chain == nil {
			continue
		}
		page, err := r.runs.JobRuns(ctx, t.Chain.After, "", ChainScan)
		if err != nil {
			return fmt.Errorf("job %s: runs of %s: %w", job, t.Chain.After, err)
		}
		slices.Reverse(page)
		for _, p := range page {
			if p.EndedAt.IsZero() || p.EndedAt.Before(since) || !chainMatches(t.Chain.On, p.Status) {
				continue
			}
			f := chainFire(p)
			_, err := r.runs.JobRun(ctx, job, store.RunID(f.At, f.tag))
			if err == nil {
				continue
			}
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("job %s: %w", job, err)
			}
			r.fireChain(ctx, job, p)
		}
	}
	return nil
}

// chainCycle returns the cycle the job name with spec s would close
// among the active jobs' chains (a, b, a: a follows b, which follows a),
// nil if there is none. The job's active version, if any, is replaced by
// s.
func (r *Runner) chainCycle(name string, s *Spec) []string {
	// The walk reads the active jobs under r.mu: it goes only where
	// name's parents lead, which for most jobs is nowhere.
	r.mu.Lock()
	defer r.mu.Unlock()
	after := func(n string) []string {
		if n == name {
			return parents(s)
		}
		if js, ok := r.jobs[n]; ok {
			return parents(js)
		}
		return nil
	}
	// Depth first from name along "follows" edges, back to name.
	var path []string
	seen := map[string]bool{}
	var walk func(n string) bool
	walk = func(n string) bool {
		path = append(path, n)
		for _, p := range after(n) {
			if p == name {
				path = append(path, p)
				return true
			}
			if !seen[p] {
				seen[p] = true
				if walk(p) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if walk(name) {
		return path
	}
	return nil
}

// cycleText is a cycle as a person reads it: "a → b → a".
func cycleText(path []string) string { return strings.Join(path, " → ") }

// parents returns the jobs s is chained after.
func parents(s *Spec) []string {
	var out []string
	for _, t := range s.Triggers {
		if t.Chain != nil {
			out = append(out, t.Chain.After)
		}
	}
	return out
}

// activatable reports what keeps the job name with spec s from being
// active beside the active jobs: a chain that closes a cycle (a job
// resumed after its parent changed), a watch of a directory it may not
// watch (or that is not there). A chain after a job that is not active
// is logged: it fires once that job is.
func (r *Runner) activatable(name string, s *Spec) error {
	if cycle := r.chainCycle(name, s); cycle != nil {
		return fmt.Errorf("%w: a chain cannot close a cycle: %s", ErrInvalid, cycleText(cycle))
	}
	for _, t := range s.Triggers {
		if t.Watch != nil {
			if _, err := r.watchRoot(t.Watch.Path); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalid, err)
			}
		}
		if t.Chain != nil {
			if _, ok := r.Job(t.Chain.After); !ok {
				r.log.Warn("job chained after a job that is not active: it fires once that job is", "job", name, "after", t.Chain.After)
			}
		}
	}
	return nil
}

// warnOrphans logs the active jobs chained after the job name, which is
// being removed or paused: they do not fire until it is back.
func (r *Runner) warnOrphans(name string) {
	r.mu.Lock()
	orphans := slices.Collect(maps.Keys(r.chained[name]))
	r.mu.Unlock()
	orphans = slices.DeleteFunc(orphans, func(n string) bool { return n == name })
	if len(orphans) > 0 {
		slices.Sort(orphans)
		r.log.Warn("job removed or paused: the jobs chained after it do not fire until it is back", "job", name, "chained", orphans)
	}
}

// actors is the job type's Actor: the agents a job makes act or writes
// to (extension.AgentOf) and the agent of every job it is chained after,
// whose output it reads — so an agent chains a job of its own only after
// its own jobs, unless it may change any row. A parent that is not active
// here has no agent to name and is refused the same way.
func (r *Runner) actors(spec json.RawMessage) []string {
	out := extension.AgentOf(spec)
	s, err := Decode(spec)
	if err != nil {
		return out
	}
	for _, t := range s.Triggers {
		if t.Chain == nil {
			continue
		}
		if p, ok := r.Job(t.Chain.After); ok {
			out = append(out, p.Agent)
		} else {
			out = append(out, "(the agent of job "+t.Chain.After+", not active)")
		}
	}
	return out
}
