package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// agentd bench jobs at a tiny size, through agentd serve: the jobs are
// put, both idle figures read, every fire accepted and found in the run
// history, every webhook request answered 202, the table written. It
// builds the agentd binary. No figure's size is checked, only that each
// was measured.
func TestJobsBench(t *testing.T) {
	exe := agentdBinary(t)
	c, err := newJobsConfig(&JobsOptions{Quick: true, Executable: exe, Jobs: 20, Fires: 3, Hooks: 3, Idle: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// An at trigger some seconds ahead, rather than the next minute: room
	// for the daemon's restart and idle figures on a busy machine.
	c.minute, c.lead, c.spreadAfter, c.spreadFor = false, 15*time.Second, 4*time.Second, 2*time.Second
	res, err := runJobs(t.Context(), t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 20 || res.Fires != 3 || res.Hooks != 3 || res.FireTrigger != "at" {
		t.Errorf("counts: %+v", res)
	}
	for name, v := range map[string]float64{"create": res.CreatePerS, "start": res.StartMS, "idle rss 0": res.Idle0RSSMB,
		"idle rss": res.IdleRSSMB, "fire late p99": res.FireLateP99ms, "fire metric": res.FireMetric100Pct + res.FireLateMaxms,
		"spread late p99": res.SpreadLateP99ms, "spread metric": res.SpreadMetric100Pct + res.SpreadLateMaxms,
		"hook tcp": res.HookTCPP50ms, "hook unix": res.HookSockP50} {
		if v <= 0 {
			t.Errorf("%s not measured: %+v", name, res)
		}
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil || !strings.Contains(b.String(), "fire lateness") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}

// The background jobs fire nowhere near now, whatever the time of day.
func TestBackgroundJobsAreQuiet(t *testing.T) {
	c := jobsConfig{fires: 0}
	for _, now := range []time.Time{
		time.Date(2026, 11, 26, 0, 0, 30, 0, time.UTC),
		time.Date(2026, 11, 27, 23, 59, 0, 0, time.UTC), // a Friday night in Berlin
		time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC),   // Berlin's clocks go forward
	} {
		for i := range 300 {
			d := backgroundJob(i, now, c)
			var spec struct{ Triggers []json.RawMessage }
			if err := json.Unmarshal(d.Spec, &spec); err != nil || len(spec.Triggers) != 1 {
				t.Fatalf("%s: %s: %v", d.Name, d.Spec, err)
			}
			if i >= 2 && !quiet(string(spec.Triggers[0]), now) {
				t.Errorf("%s fires within %s of %s: %s", d.Name, quietFor, now, spec.Triggers[0])
			}
		}
	}
}
