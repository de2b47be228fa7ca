package job

import (
	"context"
	"testing"
	"time"

	"agentd/internal/schedule"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// noRuns is a run history without runs, and a Firer that fires nothing.
type noRuns struct{}

func (noRuns) LastRun(context.Context, string, ...string) (store.JobRun, error) {
	return store.JobRun{}, store.ErrNotFound
}
func (noRuns) Fire(context.Context, string, string, time.Time) error { return nil }
func (noRuns) Recover(context.Context, ...string) (int, error)       { return 0, nil }

// The cron triggers of one time zone share one *time.Location: loaded
// for each, 10,000 jobs held 5 MB of copies.
func TestSchedulerSharesZones(t *testing.T) {
	r := New(nil, nil, testkit.Agents{"assistant": testkit.Agent("assistant")}, nil)
	defer r.Close()
	s := NewScheduler(r, noRuns{}, &SchedulerOptions{Fire: noRuns{}})
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, name := range []string{"a", "b", "c"} {
		tz := "Europe/Berlin"
		if name == "c" {
			tz = "America/New_York"
		}
		spec := &Spec{Agent: "assistant", Prompt: "p", Triggers: []Trigger{{Cron: "0 8 * * *", TZ: tz}}}
		s.add(t.Context(), name, spec, now)
	}
	loc := func(name string) *time.Location { return s.byJob[name][0].sched.(*schedule.Zoned).Loc }
	if loc("a") != loc("b") {
		t.Error("two jobs in Europe/Berlin have a location each")
	}
	if loc("a") == loc("c") || loc("c").String() != "America/New_York" {
		t.Errorf("c's location is %s", loc("c"))
	}
}
