package main

import (
	"strings"
	"testing"
)

// Through the daemon: an agent whose workspace is the data directory
// (workspace: .) does not read agentd's files with read_file (here
// agentd.yaml; the keys, the secrets and the store alike): the call is an
// error result naming the setting, and agentd doctor fails the
// workspace check with the fix.
func TestWorkspaceHoldingTheDataDirectoryIsRefused(t *testing.T) {
	addr := fake(t, "match ^read\ncall read_file {\"path\": \"agentd.yaml\"}\n---\nsay {{tool_result}}\n")
	dir := dataDir(t, map[string]string{
		"agentd.yaml":   "gateway:\n  listen: off\n",
		"agents/a.yaml": openaiAgent(addr, "workspace: .\ntools:\n  builtin: [read_file]\n"),
	})
	r := run(t, dir, "doctor")
	if r.code != 1 || !strings.Contains(flat(r.stdout), "FAIL workspace agent a") || !strings.Contains(r.stdout, "agents/a.yaml") {
		t.Errorf("doctor on a workspace holding the data directory: %+v", r)
	}
	serve(t, dir)
	evs, end := turnResult(t, background(t, dir, "send", "a", "read the config", "--json"))
	tr := toolResults(evs)
	if len(tr) != 1 || !tr[0].IsError || strings.Contains(tr[0].Output, "listen: off") || !strings.Contains(tr[0].Output, `workspace "."`) {
		t.Errorf("read_file in a workspace holding the data directory: %+v (reply %q)", tr, end.Reply)
	}
}
