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
