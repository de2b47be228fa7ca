package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// agentd bench tools at a tiny size: exec through the registry in each
// sandbox mode with the agentd binary as the sandbox's helper, grep and
// read_file over a generated workspace, exec turns through agentd serve
// on the fake model; the table written. It builds the agentd binary. No
// figure's size is checked, only that each was measured.
func TestToolsBench(t *testing.T) {
	exe := agentdBinary(t)
	c, err := newToolsConfig(&ToolsOptions{Quick: true, Executable: exe, Execs: 3, Files: 2000, Greps: 2, Reads: 3, Turns: 3})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runTools(t.Context(), t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bwrap == "" && os.Getenv("AGENTD_REQUIRE_BWRAP") == "1" {
		t.Fatalf("bubblewrap cannot run here, and AGENTD_REQUIRE_BWRAP=1: %s", res.NoBwrap)
	}
	figs := map[string]float64{"exec floor": res.ExecFloorP50ms, "exec none": res.ExecNoneP50ms, "grep": res.GrepP50ms,
		"read_file": res.ReadRangeP50ms, "exec turn": res.TurnExecP50ms, "plain turn": res.TurnPlainP50ms,
		"exec call in serve": res.TurnCallP50ms, "turn over exec": res.TurnOverExecP50ms}
	if res.Bwrap != "" {
		figs["exec bwrap"] = res.ExecBwrapP50ms
	}
	for name, v := range figs {
		if v <= 0 {
			t.Errorf("%s not measured: %+v", name, res)
		}
	}
	if res.GrepMatches != 2 || res.ReadFileMB != 10 {
		t.Errorf("counts: %+v", res)
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil || !strings.Contains(b.String(), "sandbox_cost p50 / p99") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}

// The counts of agentd bench tools: full, --quick, as given; a serve
// sandbox other than bwrap or none is refused.
func TestToolsConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    ToolsOptions
		want toolsConfig
	}{
		{"full", ToolsOptions{}, toolsConfig{execs: 200, files: 100_000, greps: 5, reads: 200, turns: 200}},
		{"quick", ToolsOptions{Quick: true}, toolsConfig{execs: 20, files: 10_000, greps: 3, reads: 20, turns: 20, quick: true}},
		{"given", ToolsOptions{Quick: true, Execs: 7, Files: 3000, Greps: 1, Reads: 2, Turns: 4, ServeSandbox: "none"},
			toolsConfig{execs: 7, files: 3000, greps: 1, reads: 2, turns: 4, serveMode: "none", quick: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Executable, tc.want.exe = "/bin/agentd", "/bin/agentd"
			got, err := newToolsConfig(&tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(toolsConfig{})); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := newToolsConfig(&ToolsOptions{ServeSandbox: "auto"}); err == nil || !strings.Contains(err.Error(), `"auto"`) {
		t.Errorf("serve sandbox auto: %v", err)
	}
}
