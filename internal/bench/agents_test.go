package bench

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/model/fakellm"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// agentd bench agents at the quick counts, through agentd serve: the
// background agents started and all done, the chain's message through
// every agent, the fan-out's to every target, the table written. It
// builds the agentd binary. No figure's size is checked, only that each
// was measured.
func TestAgentsBench(t *testing.T) {
	exe := agentdBinary(t)
	c, err := newAgentsConfig(&AgentsOptions{Quick: true, Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runAgents(t.Context(), t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Background != 100 || res.Chain != 10 || res.Fanout != 10 {
		t.Errorf("counts: %+v", res)
	}
	for name, v := range map[string]float64{"accepted": res.AcceptS, "start p99": res.AcceptP99ms, "done": res.DoneS,
		"rss after": res.RSSAfterMB, "hop max": res.HopMaxms, "chain": res.ChainTotal,
		"fan-out accepted": res.FanoutAcceptedMS, "fan-out done": res.FanoutDoneMS} {
		if v <= 0 {
			t.Errorf("%s not measured: %+v", name, res)
		}
	}
	var b strings.Builder
	if err := res.WriteTable(&b); err != nil || !strings.Contains(b.String(), "chain: hop") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}

// The fake model's script, with its generated rules, at small counts:
// testdata/agents/script-3-2.fake (go test -run TestAgentsScript -update
// writes it). Every full-size script parses.
func TestAgentsScript(t *testing.T) {
	got := agentsScript(3, 2)
	golden := filepath.Join("testdata", "agents", "script-3-2.fake")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("script (-golden +got):\n%s", d)
	}
	for _, o := range []*AgentsOptions{{}, {Quick: true}} {
		c, err := newAgentsConfig(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fakellm.ParseScript("agents.fake", []byte(agentsScript(c.chain, c.fanout))); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
