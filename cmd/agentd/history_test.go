package main

import (
	"encoding/json"
	"strings"
	"testing"

	"agentd/internal/event"
)

// History tools and working memory through the binary: the model searches
// its own past sessions (and only its own), keeps a working note that the
// log shows, and a person searches every conversation from the command line.
func TestHistoryAndWorkingMemory(t *testing.T) {
	addr := fake(t, `
match ^find
call search_history {"query": "lighthouse"}
---
say found: {{tool_result}}

match ^note
call wm_set {"key": "todo", "value": ["repaint the lighthouse"]}
---
say noted

match *
say ok
`)
	dir := dataDir(t, map[string]string{
		"agents/a.yaml": openaiAgent(addr, ""),
		"agents/b.yaml": openaiAgent(addr, ""),
	})
	for _, c := range [][]string{
		{"send", "a/old", "The lighthouse keeper asked for order #5521"},
		{"send", "b/secret", "The lighthouse of agent b is private"},
		{"send", "a/s", "note this"},
	} {
		if r := run(t, dir, c...); r.code != 0 {
			t.Fatalf("%v: %+v", c, r)
		}
	}
	r := run(t, dir, "send", "a/s", "find it")
	if r.code != 0 || !strings.Contains(r.stdout, "«lighthouse»") || !strings.Contains(r.stdout, "#5521") {
		t.Fatalf("search_history: %+v", r)
	}
	if strings.Contains(r.stdout, "private") {
		t.Errorf("agent a found agent b's session: %s", r.stdout)
	}
	// The working memory is in the log.
	r = run(t, dir, "log", "a/s", "--json")
	evs, _ := jsonEvents(t, r.stdout)
	var wm *event.WorkingMemoryData
	for _, e := range evs {
		if e.Kind == event.WorkingMemory {
			wm = new(event.WorkingMemoryData)
			json.Unmarshal(e.Data, wm)
		}
	}
	if wm == nil || wm.Key != "todo" || string(wm.Value) != `["repaint the lighthouse"]` {
		t.Fatalf("working memory event %+v", wm)
	}
	if r := run(t, dir, "log", "a/s"); !strings.Contains(r.stdout, `todo = ["repaint the lighthouse"]`) {
		t.Errorf("agentd log:\n%s", r.stdout)
	}
	// A person searches everything.
	r = run(t, dir, "history", "search", "lighthouse")
	if r.code != 0 || !strings.Contains(r.stdout, "a/old") || !strings.Contains(r.stdout, "b/secret") {
		t.Fatalf("history search: %+v", r)
	}
	r = run(t, dir, "history", "search", "lighthouse", "--agent", "b", "--json")
	if r.code != 0 || strings.Contains(r.stdout, "a/old") || !strings.Contains(r.stdout, "b/secret") {
		t.Fatalf("history search --agent b: %+v", r)
	}
	if r := run(t, dir, "history", "search", `"`); r.code != 2 {
		t.Errorf("a query without words: exit %d %s", r.code, r.stderr)
	}
}
