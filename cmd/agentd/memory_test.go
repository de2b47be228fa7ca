package main

import (
	"strings"
	"testing"
)

// Long-term memory through the binary: the model remembers, a later
// session recalls it with the tool, a person searches, shows and forgets.
func TestLongTermMemory(t *testing.T) {
	addr := fake(t, `
match ^remember
call remember {"entities": [{"name": "Ada Lovelace", "type": "person", "observations": ["likes green tea", "owns order #5521"]}], "insight": "the lighthouse project ships in March"}
---
say stored

match ^what
call recall {"query": "Ada tea"}
---
say {{tool_result}}

match *
say ok
`)
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	if r := run(t, dir, "send", "a/one", "remember Ada"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	r := run(t, dir, "send", "a/two", "what does Ada like?")
	if r.code != 0 || !strings.Contains(r.stdout, "likes green «tea»") || !strings.Contains(r.stdout, "session a/one") {
		t.Fatalf("recall: %+v", r)
	}
	r = run(t, dir, "memory", "search", "lighthouse", "march")
	if r.code != 0 || !strings.Contains(r.stdout, "insight") || !strings.Contains(r.stdout, "«lighthouse»") {
		t.Fatalf("memory search: %+v", r)
	}
	r = run(t, dir, "memory", "show", "ada lovelace")
	if r.code != 0 || !strings.Contains(r.stdout, "Ada Lovelace (person)") || !strings.Contains(r.stdout, "owns order #5521") {
		t.Fatalf("memory show: %+v", r)
	}
	if r := run(t, dir, "memory", "list"); r.code != 0 || !strings.Contains(r.stdout, "likes green tea") {
		t.Fatalf("memory list: %+v", r)
	}
	if r := run(t, dir, "memory", "forget", "--entity", "Ada Lovelace"); r.code != 0 || !strings.Contains(r.stdout, "forgot") {
		t.Fatalf("memory forget: %+v", r)
	}
	if r := run(t, dir, "memory", "show", "Ada Lovelace"); r.code != 3 {
		t.Errorf("show after forget: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, "memory", "forget"); r.code != 2 {
		t.Errorf("forget with nothing named: exit %d", r.code)
	}
}
