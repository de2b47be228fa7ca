package agentsys

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestReportText(t *testing.T) {
	base := store.Instance{ID: "ck3xa9b2c4d5e6f7g8h9i0j1", Type: store.InstanceSubagent, Agent: "ck3xa9b2c4d5e6f7g8h9i0j1",
		Template: "researcher", Name: "researcher", Report: store.ReportLoud, ReportTo: "assistant/main"}
	with := func(f func(*store.Instance)) store.Instance { in := base; f(&in); return in }
	for _, c := range []struct {
		name  string
		in    store.Instance
		cost  Cost
		limit int
	}{
		{"done", with(func(in *store.Instance) { in.State, in.Result = store.AgentDone, "The answer is 42." }),
			Cost{USD: 0.0123, Calls: 3, InputTokens: 1204, OutputTokens: 311, Descendants: 2}, 16384},
		{"done-one-call", with(func(in *store.Instance) {
			in.Type, in.Name, in.State, in.Result = store.InstanceBackground, "", store.AgentDone, "ok"
		}), Cost{USD: 0.00004, Calls: 1, InputTokens: 10, OutputTokens: 2}, 16384},
		{"done-cut", with(func(in *store.Instance) { in.State, in.Result = store.AgentDone, strings.Repeat("é", 20) }),
			Cost{USD: 1, Calls: 2}, 15},
		{"failed", with(func(in *store.Instance) {
			in.State, in.Result = store.AgentFailed, "budget: max_usd_per_turn of turn assistant/main:7\nmore"
		}), Cost{USD: 0.5, Calls: 4, InputTokens: 100, OutputTokens: 50, Descendants: 1}, 16384},
		{"stopped", with(func(in *store.Instance) { in.State, in.Result = store.AgentStopped, "by ann: enough" }),
			Cost{}, 16384},
	} {
		t.Run(c.name, func(t *testing.T) {
			golden(t, filepath.Join("report", c.name+".golden"), reportText(c.in, c.cost, c.limit))
		})
	}
}

func TestReportInput(t *testing.T) {
	in := store.Instance{ID: "ck3xa9b2c4d5e6f7g8h9i0j1", Type: store.InstanceSubagent, Report: store.ReportSilent,
		ReportTo: "assistant/main", State: store.AgentDone, Hops: 2}
	got := reportInput(in, Cost{}, 100)
	if got.Session != "assistant/main" || !got.System || !got.Silent || got.Origin != in.ID ||
		got.IdempotencyKey != "agent-report:"+in.ID || got.Source != "agent-report" {
		t.Errorf("report input %+v", got)
	}
}
