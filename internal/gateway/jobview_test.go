package gateway_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"agentd/internal/extension"
	"agentd/internal/gateway"
	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// fixedTimes is a scheduler that says when each job fires next.
type fixedTimes map[string]time.Time

func (f fixedTimes) Next() map[string]time.Time { return f }

// jobViewEnv serves the job views over job rows saved through an
// extension manager, with times as the scheduler (nil: none, as on a node
// that does not lead).
func jobViewEnv(t *testing.T, times gateway.JobTimes, rows map[string]string) *env {
	t.Helper()
	return newEnv(t, setup{options: func(o *gateway.Options) {
		st := o.Sessions.(*sqlite.Store)
		r := job.New(o.Runtime, st, testAgents(), nil)
		t.Cleanup(r.Close)
		m := extension.New(st, &extension.Options{Dir: t.TempDir()})
		if err := m.Register(r.Type()); err != nil {
			t.Fatal(err)
		}
		if err := m.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		for name, spec := range rows {
			if _, err := m.Put(context.Background(), extension.Doc{Type: job.TypeName, Name: name, Spec: json.RawMessage(spec)},
				extension.Who{Provenance: store.ProvenanceUser}); err != nil {
				t.Fatal(err)
			}
		}
		o.Extensions, o.JobRuns, o.Jobs = m, st, r
		if times != nil {
			o.JobTimes = times
		}
	}})
}

func (e *env) jobInfo(method, path string) gateway.JobInfo {
	e.t.Helper()
	status, _, body := e.do(method, path, "")
	var info gateway.JobInfo
	if err := json.Unmarshal(body, &info); err != nil || status != 200 {
		e.t.Fatalf("%s %s: %d %s", method, path, status, body)
	}
	return info
}

// A node that does not schedule (no scheduler here) still shows when
// each job fires: its next fire, and on the job's own page its next
// five, computed from its triggers; a paused job shows none, and resumed
// it shows them again.
func TestJobNextFiresWithoutScheduler(t *testing.T) {
	e := jobViewEnv(t, nil, map[string]string{
		"tick":  `{"agent":"a","prompt":"tick","triggers":[{"every":"2s"}]}`,
		"brief": `{"agent":"a","prompt":"brief","triggers":[{"cron":"0 8 * * 1-5","tz":"Europe/Berlin"},{"chain":{"after":"tick"}}]}`,
		"after": `{"agent":"a","prompt":"after","triggers":[{"chain":{"after":"tick"}}]}`,
		"beat":  `{"agent":"a","prompt":"beat","triggers":[{"heartbeat":{"every":"30m","prompt":"anything?"}}]}`,
		"night": `{"agent":"a","prompt":"night","triggers":[{"heartbeat":{"every":"30m","prompt":"anything?","quiet_hours":"00:00-23:00"}}]}`,
	})
	before := time.Now()
	tick := e.jobInfo("GET", "/v1/jobs/tick")
	if len(tick.NextFires) != gateway.NextFires || !tick.Next.Equal(tick.NextFires[0]) {
		t.Fatalf("tick: next %v, next_fires %v", tick.Next, tick.NextFires)
	}
	if first := tick.NextFires[0]; !first.After(before.Add(-time.Second)) || first.After(time.Now().Add(2*time.Second)) {
		t.Errorf("tick's first fire %v is not the next after %v", first, before)
	}
	for i, f := range tick.NextFires {
		if f.Unix()%2 != 0 || f.Nanosecond() != 0 || i > 0 && f.Sub(tick.NextFires[i-1]) != 2*time.Second {
			t.Errorf("tick's fires %v: #%d is not on the 2s grid", tick.NextFires, i)
		}
	}

	berlin, _ := time.LoadLocation("Europe/Berlin")
	brief := e.jobInfo("GET", "/v1/jobs/brief")
	if len(brief.NextFires) != gateway.NextFires {
		t.Fatalf("brief: next_fires %v", brief.NextFires)
	}
	for _, f := range brief.NextFires {
		if w := f.In(berlin); w.Hour() != 8 || w.Minute() != 0 || w.Weekday() == time.Saturday || w.Weekday() == time.Sunday {
			t.Errorf("brief fires at %v (%v in Berlin), not 08:00 on a weekday", f, w)
		}
	}

	night := e.jobInfo("GET", "/v1/jobs/night").NextFires
	if len(night) != gateway.NextFires {
		t.Fatalf("night: next_fires %v", night)
	}
	for _, f := range night {
		if f.UTC().Hour() != 23 {
			t.Errorf("a heartbeat quiet from 00:00 to 23:00 UTC shows a fire at %v", f)
		}
	}
	for _, f := range e.jobInfo("GET", "/v1/jobs/beat").NextFires {
		if f.Unix()%1800 != 0 {
			t.Errorf("a heartbeat every 30m fires at %v", f)
		}
	}
	if after := e.jobInfo("GET", "/v1/jobs/after"); !after.Next.IsZero() || after.NextFires != nil {
		t.Errorf("a job without a time trigger: next %v, next_fires %v", after.Next, after.NextFires)
	}

	var list gateway.JobList
	status, _, body := e.do("GET", "/v1/jobs", "")
	if err := json.Unmarshal(body, &list); err != nil || status != 200 || len(list.Jobs) != 5 {
		t.Fatalf("GET /v1/jobs: %d %s", status, body)
	}
	for _, j := range list.Jobs {
		if (j.Name != "after") == j.Next.IsZero() || j.NextFires != nil {
			t.Errorf("listed %s: next %v, next_fires %v", j.Name, j.Next, j.NextFires)
		}
	}

	for _, info := range []gateway.JobInfo{e.jobInfo("POST", "/v1/jobs/tick/pause"), e.jobInfo("GET", "/v1/jobs/tick")} {
		if info.Enabled || !info.Next.IsZero() || info.NextFires != nil {
			t.Errorf("paused: %+v", info)
		}
	}
	if info := e.jobInfo("POST", "/v1/jobs/tick/resume"); !info.Enabled || len(info.NextFires) != gateway.NextFires {
		t.Errorf("resumed: %+v", info)
	}
}

// Where the scheduler answers, next is its answer (what its catch-up
// decided); next_fires are the triggers' times all the same.
func TestJobNextFromScheduler(t *testing.T) {
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	e := jobViewEnv(t, fixedTimes{"tick": at}, map[string]string{"tick": `{"agent":"a","prompt":"tick","triggers":[{"every":"2s"}]}`})
	if info := e.jobInfo("GET", "/v1/jobs/tick"); !info.Next.Equal(at) || len(info.NextFires) != gateway.NextFires {
		t.Errorf("next %v, next_fires %v", info.Next, info.NextFires)
	}
}
