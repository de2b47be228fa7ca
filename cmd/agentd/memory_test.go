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
	r = run(t, dir, "memory", "search", "a", "lighthouse", "march")
	if r.code != 0 || !strings.Contains(r.stdout, "insight") || !strings.Contains(r.stdout, "«lighthouse»") {
		t.Fatalf("memory search: %+v", r)
	}
	r = run(t, dir, "memory", "show", "a", "ada lovelace")
	if r.code != 0 || !strings.Contains(r.stdout, "Ada Lovelace (person)") || !strings.Contains(r.stdout, "owns order #5521") {
		t.Fatalf("memory show: %+v", r)
	}
	if r := run(t, dir, "memory", "list"); r.code != 0 || !strings.Contains(r.stdout, "likes green tea") {
		t.Fatalf("memory list: %+v", r)
	}
	if r := run(t, dir, "memory", "forget", "a", "--entity", "Ada Lovelace"); r.code != 0 || !strings.Contains(r.stdout, "forgot") {
		t.Fatalf("memory forget: %+v", r)
	}
	if r := run(t, dir, "memory", "show", "Ada Lovelace"); r.code != 3 {
		t.Errorf("show after forget: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, "memory", "forget"); r.code != 2 {
		t.Errorf("forget with nothing named: exit %d", r.code)
	}
}

// The agent is memory's first argument, as it is every other command's;
// --agent still works for a release, with a notice. The same against the
// daemon.
func TestMemoryAgentArgument(t *testing.T) {
	addr := fake(t, `
match ^remember
call remember {"entities": [{"name": "Ada Lovelace", "type": "person", "observations": ["likes green tea"]}]}
---
say stored
`)
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, ""), "agents/b.yaml": openaiAgent(addr, "")})
	if r := run(t, dir, "send", "a/one", "remember Ada"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	check := func(t *testing.T) {
		for _, args := range [][]string{
			{"memory", "list", "a"},
			{"memory", "search", "a", "tea"},
			{"memory", "show", "a", "Ada Lovelace"},
		} {
			if r := run(t, dir, args...); r.code != 0 || !strings.Contains(r.stdout, "tea") || r.stderr != "" {
				t.Errorf("agentd %s: %+v", strings.Join(args, " "), r)
			}
		}
		if r := run(t, dir, "memory", "list", "b"); r.code != 0 || !strings.Contains(r.stdout, "no memories") {
			t.Errorf("memory list b: %+v", r)
		}
		// Two agents: the agent cannot be left out.
		if r := run(t, dir, "memory", "list"); r.code != 2 || !strings.Contains(r.stderr, "one of: a, b") {
			t.Errorf("memory list without the agent: %+v", r)
		}
		if r := run(t, dir, "memory", "search", "tea"); r.code != 2 || !strings.Contains(r.stderr, "usage: agentd memory search <agent> <query>...") {
			t.Errorf("memory search without the agent: %+v", r)
		}
		if r := run(t, dir, "memory", "search", "green", "tea"); r.code != 3 || !strings.Contains(r.stderr, "the agent comes first") {
			t.Errorf("memory search with a query for the agent: %+v", r)
		}
		// The old spelling, with a notice.
		for _, args := range [][]string{
			{"memory", "list", "--agent", "a"},
			{"memory", "search", "--agent", "a", "tea"},
			{"memory", "show", "--agent", "a", "Ada Lovelace"},
		} {
			r := run(t, dir, args...)
			if r.code != 0 || !strings.Contains(r.stdout, "tea") || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "--agent is deprecated") {
				t.Errorf("agentd %s: %+v", strings.Join(args, " "), r)
			}
		}
	}
	t.Run("in process", check)
	serve(t, dir)
	t.Run("daemon", check)
}
