package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
)

// An agent's bootstrap calls run when agentd serve starts, once its
// servers are connected, and their results are logged in <agent>/bootstrap
// — the approval the call carried verified by the server.
func TestBootstrapCalls(t *testing.T) {
	addr := fake(t, "")
	agentFile := openaiAgent(addr, `mcp_servers:
  demo:
    command: `+agentdBin+`
    args: [mcp, demo]
bootstrap:
  - tool: demo__echo
    args: {text: registered}
  - tool: demo__whoami
`)
	dir := dataDir(t, map[string]string{"agents/a.yaml": agentFile})
	d := serve(t, dir)
	var evs []event.Event
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := run(t, dir, "log", "a/bootstrap", "--json")
		if r.code == 0 {
			evs, _ = jsonEvents(t, r.stdout)
			if len(evs) >= 2 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no bootstrap events: %+v\ndaemon:\n%s", r, d.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var got []event.LifecycleData
	for _, ev := range evs {
		var l event.LifecycleData
		if ev.Kind != event.Lifecycle || json.Unmarshal(ev.Data, &l) != nil || l.Phase != event.PhaseBootstrap {
			t.Fatalf("unexpected event %+v", ev)
		}
		got = append(got, l)
	}
	if got[0].Tool != "demo__echo" || got[0].IsError || got[0].Output != "registered" {
		t.Errorf("echo: %+v", got[0])
	}
	if got[1].Tool != "demo__whoami" || got[1].IsError || !strings.Contains(got[1].Output, "verified") {
		t.Errorf("whoami: %+v", got[1])
	}
	d.stop(t)
}

// A model loads a skill through the skill tool: it gets the instructions,
// the MCP server the skill bundles is connected, and its tools are then
// callable in the same turn.
func TestSkillLoadsBundledServer(t *testing.T) {
	addr := fake(t, `
match *
call skill {"name": "tea"}
---
call teashop__echo {"text": "from the skill's server"}
---
say {{tool_result}}
`)
	skillMD := "---\nname: tea\ndescription: Sell tea.\nmcp_servers:\n  teashop:\n    command: " + agentdBin + "\n    args: [mcp, demo]\n---\n# Tea\nUse teashop__echo to greet.\n"
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, ""), "skills/tea/SKILL.md": skillMD})
	r := run(t, dir, "send", "a", "hello", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	evs, end := jsonEvents(t, r.stdout)
	if end == nil || end.Reply != "from the skill's server" {
		t.Fatalf("end %+v\n%s", end, r.stdout)
	}
	var results []event.ToolResultData
	for _, ev := range evs {
		if ev.Kind == event.ToolResult {
			var d event.ToolResultData
			json.Unmarshal(ev.Data, &d)
			results = append(results, d)
		}
	}
	if len(results) != 2 || results[0].IsError || !strings.Contains(results[0].Output, "Use teashop__echo to greet.") || results[1].IsError {
		t.Fatalf("tool results %+v", results)
	}
	// The skill's server is not kept for the next start.
	if out := run(t, dir, "mcp", "list"); out.code != 0 || strings.Contains(out.stdout, "teashop") {
		t.Errorf("mcp list after the run (exit %d):\n%s%s", out.code, out.stdout, out.stderr)
	}
}
