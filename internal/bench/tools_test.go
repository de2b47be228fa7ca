package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// agentd bench tools at a tiny size: exec through the registry in each
// sandbox mode with the agentd binary as the sandbox's helper, grep and
// read_file over a generated workspace, exec turns through agentd serve
// on the fake model; the table written. It builds the agentd binary. No
// figure's size is checked, only that each was measured.
func TestToolsBench(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agentd")
	}
	exe := filepath.Join(t.TempDir(), "agentd")
	build := exec.Command("go", "build", "-o", exe, "agentd/cmd/agentd")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
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
