package main

import (
	"encoding/json"
	"strings"
	"testing"

	"agentd/internal/tool"
)

// execCardScript calls exec with one stdin, with another, and with a
// shell wrapped by env.
const execCardScript = `match ^one
call exec {"argv": ["cat"], "stdin": "print(1)\n"}
---
say ran {{tool_result}}

match ^two
call exec {"argv": ["cat"], "stdin": "print(2)\r\u001b[2K\n"}
---
say ran {{tool_result}}

match ^shell
call exec {"argv": ["env", "sh", "-c", "echo hi"]}
---
say ran {{tool_result}}
`

// Through the daemon: an exec card shows the command's stdin (escaped) in
// agentd approvals, and "always" covers that stdin only: the same command
// with other input asks again, with the same input it runs. A shell
// wrapped by env is refused without exec.shell, before anyone is asked.
func TestExecCardShowsStdinThroughTheDaemon(t *testing.T) {
	t.Parallel()
	addr := fake(t, execCardScript)
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "sandbox: none\ntools:\n  builtin: [exec]\n  ask: [exec]\n")})
	d := serve(t, dir)
	defer d.stop(t)

	card := func(raw json.RawMessage) tool.Card {
		t.Helper()
		var c tool.Card
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("card %s: %v", raw, err)
		}
		return c
	}

	sent := background(t, dir, "send", "a", "one", "--session", "s1", "--json")
	req := waitApproval(t, dir, "a/s1")
	if c := card(req.Card); c.Input != "print(1)\n" || !strings.Contains(c.Exact, "\x00stdin sha256:") || !strings.Contains(c.Exact, "\x00sandbox none") {
		t.Errorf("card %+v: want the stdin on it and its hash and the sandbox in Exact", c)
	}
	if out := okRun(t, dir, "approvals"); !strings.Contains(out, "  input:\n    print(1)\n") {
		t.Errorf("agentd approvals does not show the stdin:\n%s", out)
	}
	okRun(t, dir, "approve", req.ID, "--always")
	if _, end := turnResult(t, sent); !ranOne(end.Reply) {
		t.Errorf("reply %q", end.Reply)
	}

	sent = background(t, dir, "send", "a", "two", "--session", "s2", "--json")
	req = waitApproval(t, dir, "a/s2") // other input: the grant does not cover it
	if c := card(req.Card); c.Input != `print(2)\r\x1b[2K`+"\n" {
		t.Errorf("card input %q, want its control characters escaped", c.Input)
	}
	okRun(t, dir, "deny", req.ID, "--reason", "no")
	turnResult(t, sent)

	sent = background(t, dir, "send", "a", "one", "--session", "s3", "--json")
	if _, end := turnResult(t, sent); !ranOne(end.Reply) { // the same input: the grant covers it
		t.Errorf("reply %q", end.Reply)
	}

	sent = background(t, dir, "send", "a", "shell", "--session", "s4", "--json")
	evs, _ := turnResult(t, sent)
	if tr := toolResults(evs); len(tr) != 1 || !tr[0].IsError || !strings.Contains(tr[0].Output, "names a shell") {
		t.Errorf("env sh -c without exec.shell: %+v", tr)
	}
}

func ranOne(reply string) bool {
	return strings.HasPrefix(reply, "ran exit 0 · ") && strings.HasSuffix(reply, "\nprint(1)\n")
}
