package main

import (
	"strings"
	"testing"

	"agentd/internal/gateway"
)

// agentd agents' filters and subcommands through the binary, in process
// and through the daemon: a type selects the definitions of that type, a
// bad filter is a usage error that names it, show of a definition says
// it is one, and stop of an agent that is none fails saying why. The
// definitions' table is what it always was.
func TestAgentsCommandFilters(t *testing.T) {
	dir := dataDir(t, map[string]string{
		"agents/helper.yaml":  "name: Helper\ntype: user\nmodel:\n  provider: echo\n",
		"agents/nightly.yaml": "name: Nightly\ntype: cron\nmodel:\n  provider: echo\n",
	})
	check := func(t *testing.T) {
		var list []gateway.AgentInfo
		decodeOut(t, okRun(t, dir, "agents", "--json", "--type", "cron"), &list)
		if len(list) != 1 || list[0].ID != "nightly" || list[0].Dynamic {
			t.Errorf("agents --type cron: %+v", list)
		}
		out := okRun(t, dir, "agents", "--type", "user")
		if row := tableRow(t, out, "helper"); row[len(row)-1] != gateway.AgentReady || strings.Contains(out, "nightly") {
			t.Errorf("agents --type user:\n%s", out)
		}
		if !strings.HasPrefix(out, "ID") || !strings.Contains(strings.Fields(strings.SplitN(out, "\n", 2)[0])[3], "MODEL") {
			t.Errorf("the definitions' table changed its columns:\n%s", out)
		}
		r := run(t, dir, "agents", "--state", "sleeping")
		if r.code != 2 || !strings.Contains(r.stderr, `state "sleeping"`) {
			t.Errorf("agents --state sleeping: exit %d, stderr %q; want 2 naming the state", r.code, r.stderr)
		}
		r = run(t, dir, "agents", "show", "helper")
		if r.code == 0 || !strings.Contains(r.stderr, "helper is an agent definition, not a dynamic agent") {
			t.Errorf("agents show helper: exit %d, stderr %q", r.code, r.stderr)
		}
		r = run(t, dir, "agents", "stop", "zz0000000000000000000000")
		if r.code == 0 || r.stderr == "" {
			t.Errorf("agents stop of no agent: exit %d, stderr %q", r.code, r.stderr)
		}
	}
	t.Run("in process", check)
	d := serve(t, dir)
	t.Run("daemon", check)
	d.stop(t)
}
