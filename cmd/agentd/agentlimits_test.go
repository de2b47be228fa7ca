package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/gateway"
)

// A system agent without a tag, or with a bad agents block, is an invalid
// agent file whose problems name line and field, in process and through
// the daemon; a wrong agents limit in agentd.yaml stops agentd with file,
// line and field.
func TestAgentsBlockErrors(t *testing.T) {
	dir := dataDir(t, map[string]string{
		"agents/keeper.yaml": "type: system\nmodel:\n  provider: echo\nagents:\n  templates: [\"[\"]\n  max_children: -1\n",
		"agents/desk.yaml":   "type: swarm\nmodel:\n  provider: echo\nagents:\n  targets: [keeper]\n",
	})
	want := []gateway.Problem{
		{File: "agents/keeper.yaml", Line: 1, Field: "tags", Message: "a system agent needs at least one tag: it is addressed by it (#tag)"},
		{File: "agents/keeper.yaml", Line: 5, Field: "agents.templates[0]", Message: `must be an agent id or a glob such as support-*, got "["`},
		{File: "agents/keeper.yaml", Line: 6, Field: "agents.max_children", Message: "must not be negative, got -1"},
	}
	check := func(t *testing.T) {
		var list []gateway.AgentInfo
		decodeOut(t, okRun(t, dir, "agents", "--json"), &list)
		states := map[string]string{}
		for _, a := range list {
			states[a.ID] = a.State
			if a.ID == "keeper" {
				if diff := cmp.Diff(want, a.Problems); diff != "" {
					t.Errorf("keeper's problems (-want +got):\n%s", diff)
				}
			}
		}
		if states["keeper"] != gateway.AgentInvalid || states["desk"] != gateway.AgentReady {
			t.Errorf("agent states %v; want keeper invalid, desk (a swarm template) ready", states)
		}
	}
	t.Run("in process", check)
	d := serve(t, dir)
	t.Run("daemon", check)
	d.stop(t)

	bad := dataDir(t, map[string]string{"agentd.yaml": "agents:\n  max_hops: 10\n  ask_timeout: -1s\n"})
	r := run(t, bad, "agents")
	if msg := "agentd.yaml:3: agents.ask_timeout: must be positive, got -1s"; r.code == 0 || !strings.Contains(r.stderr, msg) {
		t.Errorf("agentd agents with a bad agents limit: exit %d, stderr %q; want %q", r.code, r.stderr, msg)
	}
}
