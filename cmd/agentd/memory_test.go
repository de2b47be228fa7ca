package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// An unreadable memory.db does not stop agentd: it starts without
// long-term memory, warns once, says so in /readyz (still ready) and in
// /metrics, and keeps recent turns and the history tools working, while
// the memory tools answer a clear error. Through the daemon and in process.
func TestMemoryDatabaseUnreadable(t *testing.T) {
	if usePostgres() {
		t.Skip("long-term memory is in PostgreSQL here: there is no memory.db to spoil")
	}
	t.Parallel()
	addr := fake(t, `
match ^remember
call remember {"insight": "the lighthouse ships in March"}
---
say {{tool_result}}

match ^search
call search_history {"query": "lighthouse"}
---
say {{tool_result}}

match *
say {{n_messages}} messages
`)
	for _, viaDaemon := range []bool{true, false} {
		dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
		// A directory where the database should be: it cannot be opened
		// (as root, file modes do not stop a read).
		if err := os.Mkdir(filepath.Join(dir, "memory.db"), 0o700); err != nil {
			t.Fatal(err)
		}
		var d *daemon
		if viaDaemon {
			d = serve(t, dir)
		}
		r := run(t, dir, "send", "a/s", "hello lighthouse")
		if r.code != 0 || !strings.Contains(r.stdout, "1 messages") {
			t.Fatalf("viaDaemon=%v: send: %+v", viaDaemon, r)
		}
		if !viaDaemon && strings.Count(r.stderr, "long-term memory is off") != 1 {
			t.Errorf("in process: want one warning, got:\n%s", r.stderr)
		}
		if r := run(t, dir, "send", "a/s", "again"); !strings.Contains(r.stdout, "3 messages") {
			t.Errorf("viaDaemon=%v: recent turns lost: %+v", viaDaemon, r)
		}
		r = run(t, dir, "send", "a/s", "remember this")
		if r.code != 0 || !strings.Contains(r.stdout, "long-term memory is unavailable on this agentd") {
			t.Errorf("viaDaemon=%v: memory tool: %+v", viaDaemon, r)
		}
		if r := run(t, dir, "send", "a/s", "search it"); !strings.Contains(r.stdout, "«lighthouse»") {
			t.Errorf("viaDaemon=%v: history tool: %+v", viaDaemon, r)
		}
		if !viaDaemon {
			continue
		}
		if n := strings.Count(d.out.String(), "long-term memory is off"); n != 1 {
			t.Errorf("the daemon warned %d times:\n%s", n, d.out.String())
		}
		resp, err := unixHTTP(dir).Get("http://agentd/readyz")
		if err != nil {
			t.Fatal(err)
		}
		var ready struct {
			Ready    bool `json:"ready"`
			Degraded []struct {
				Part, Reason string
			} `json:"degraded"`
		}
		json.NewDecoder(resp.Body).Decode(&ready)
		resp.Body.Close()
		if resp.StatusCode != 200 || !ready.Ready || len(ready.Degraded) != 1 || ready.Degraded[0].Part != "memory" ||
			ready.Degraded[0].Reason == "" || strings.Contains(ready.Degraded[0].Reason, dir) {
			t.Errorf("readyz: %d %+v", resp.StatusCode, ready)
		}
		resp, err = unixHTTP(dir).Get("http://agentd/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		mustContain(t, string(b), `agentd_degraded{part="memory"} 1`)
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

// Long-term memory opens its database when first used: agentd serve, idle
// or answering turns that recall (every agent recalls by default), holds
// no memory.db and makes none until something is remembered, and neither
// does a command run in process. Then it is made, and found again. On
// PostgreSQL memory is in the store's database: no memory.db is ever made.
func TestMemoryOpenedOnFirstUse(t *testing.T) {
	t.Parallel()
	addr := fake(t, `
match ^remember
call remember {"insight": "the lighthouse ships in March"}
---
say stored

match ^when
call recall {"query": "lighthouse"}
---
say {{tool_result}}

match *
say ok
`)
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	db := filepath.Join(dir, "memory.db")
	made := func() bool {
		_, err := os.Stat(db)
		return err == nil
	}
	if r := run(t, dir, "send", "a/s", "hello"); r.code != 0 || made() {
		t.Fatalf("in process, a turn that recalls: %+v; memory.db made: %v", r, made())
	}
	d := serve(t, dir)
	if r := run(t, dir, "send", "a/s", "hello again"); r.code != 0 || made() {
		t.Fatalf("through the daemon, a turn that recalls: %+v; memory.db made: %v", r, made())
	}
	if r := run(t, dir, "memory", "list", "a"); r.code != 0 || made() {
		t.Fatalf("agentd memory list: %+v; memory.db made: %v", r, made())
	}
	if open := openFiles(t, d.cmd.Process.Pid); slices.ContainsFunc(open, func(f string) bool { return strings.Contains(f, "memory.db") }) {
		t.Errorf("the daemon holds %q", open)
	}
	if r := run(t, dir, "send", "a/s", "remember the date"); r.code != 0 || made() == usePostgres() {
		t.Fatalf("a turn that remembers: %+v; memory.db made: %v", r, made())
	}
	if r := run(t, dir, "send", "a/t", "when does it ship?"); !strings.Contains(r.stdout, "March") {
		t.Errorf("recall after remembering: %+v", r)
	}
	d.stop(t)
	if r := run(t, dir, "send", "a/u", "when does it ship?"); !strings.Contains(r.stdout, "March") {
		t.Errorf("in process, recall of what the daemon remembered: %+v", r)
	}
}

// openFiles lists the files a process holds open.
func openFiles(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if f, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, f)
		}
	}
	return out
}
