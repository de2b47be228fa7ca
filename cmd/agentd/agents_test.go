package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/gateway"
)

// A broken agent file is not invisible: agentd agents (and GET /v1/agents
// under it) lists the agent as invalid with its problems, and a message to
// it says the file is invalid, with why, rather than that there is no such
// agent; in process and through the daemon alike. Each problem is printed
// once, by every command and by serve's banner.
func TestInvalidAgentFile(t *testing.T) {
	dir := dataDir(t, map[string]string{
		"agents/good.yaml":   "name: Good\nmodel:\n  provider: echo\n",
		"agents/broken.yaml": "name: Broken\nmodel:\n  provider: echo\n  params:\n    temperature: hot\nbudgets:\n  max_steps: -3\n",
	})
	problems := []string{
		`agents/broken.yaml:5: model.params.temperature: must be a number, got "hot"`,
		`agents/broken.yaml:7: budgets.max_steps: must not be negative, got -3`,
	}
	once := func(t *testing.T, what, out string) {
		t.Helper()
		for _, p := range problems {
			if n := strings.Count(out, p); n != 1 {
				t.Errorf("%s printed %q %d times, want once:\n%s", what, p, n, out)
			}
		}
	}
	check := func(t *testing.T) {
		r := run(t, dir, "agents")
		if r.code != 0 {
			t.Fatalf("agentd agents: %+v", r)
		}
		if row := tableRow(t, r.stdout, "broken"); row[len(row)-1] != gateway.AgentInvalid {
			t.Errorf("broken's row = %q, want state %s", row, gateway.AgentInvalid)
		}
		if row := tableRow(t, r.stdout, "good"); row[len(row)-1] != gateway.AgentReady {
			t.Errorf("good's row = %q, want state %s", row, gateway.AgentReady)
		}
		once(t, "agentd agents", r.stdout+r.stderr)

		var list []gateway.AgentInfo
		decodeOut(t, okRun(t, dir, "agents", "--json"), &list)
		want := []gateway.AgentInfo{{ID: "broken", File: "agents/broken.yaml", State: gateway.AgentInvalid, Problems: []gateway.Problem{
			{File: "agents/broken.yaml", Line: 5, Field: "model.params.temperature", Message: `must be a number, got "hot"`},
			{File: "agents/broken.yaml", Line: 7, Field: "budgets.max_steps", Message: "must not be negative, got -3"},
		}}}
		if diff := cmp.Diff(want, list[:1]); diff != "" {
			t.Errorf("GET /v1/agents, the broken agent (-want +got):\n%s", diff)
		}

		r = run(t, dir, "send", "broken", "hi")
		if r.code != 1 || !strings.Contains(r.stderr, `agent "broken": agent file invalid: `) || strings.Contains(r.stderr, "unknown agent") {
			t.Errorf("agentd send broken: exit %d, stderr %q; want exit 1 and that its file is invalid", r.code, r.stderr)
		}
		once(t, "agentd send broken", r.stdout+r.stderr)
	}
	t.Run("in process", check)
	d := serve(t, dir)
	t.Run("daemon", check)
	d.stop(t)
	once(t, "agentd serve", d.out.String())
}
