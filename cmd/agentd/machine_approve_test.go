package main

// Approvals of the tools that act on a machine, through the daemon: a
// write or a command not in tools.allow waits; `agentd approvals` shows
// the diff, or the command with its folder and sandbox; `approve
// --session` and `--always` keep grants that `agentd grants` lists (and
// the API too) and `agentd grants revoke` ends.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/tool"
)

func TestMachineApprovals(t *testing.T) {
	addr := fake(t, callScript(t,
		scripted{"write1", "write_file", map[string]string{"path": "notes.txt", "content": "v1\n"}},
		scripted{"write2", "write_file", map[string]string{"path": "notes.txt", "content": "v2\n"}},
		scripted{"hi", "exec", map[string]any{"argv": []string{"echo", "hi"}}},
		scripted{"bye", "exec", map[string]any{"argv": []string{"echo", "bye"}}},
	))
	// No tools.allow: every call of a tool marked ask-first asks.
	dir := dataDir(t, map[string]string{
		"agents/a.yaml": machineAgent(addr, []string{"write_file", "exec"}, nil, "sandbox: none\n"),
	})
	serve(t, dir)
	notes := filepath.Join(dir, "workspace", "a", "notes.txt")

	// A write waits; its card is the diff.
	sent := background(t, dir, "send", "a", "write1", "--session", "s1", "--json")
	req := waitApproval(t, dir, "a/s1")
	var card tool.Card
	if err := json.Unmarshal(req.Card, &card); err != nil || card.Kind != "diff" || !strings.Contains(card.Diff, "+v1") || card.Exact != "" {
		t.Errorf("write_file's card: %+v, %v; want the diff adding v1 and no exact call", card, err)
	}
	if _, err := os.Stat(notes); err == nil {
		t.Errorf("notes.txt was written before the call was approved")
	}
	shown := okRun(t, dir, "approvals")
	for _, want := range []string{req.ID + "  write_file", "files:   notes.txt", "+v1", "agentd approve " + req.ID + " [--session]"} {
		mustContain(t, shown, want)
	}
	okRun(t, dir, "approve", req.ID, "--session")
	if _, end := turnResult(t, sent); end.Status != event.StatusDone {
		t.Errorf("the approved write's turn: %+v", end)
	}
	checkFile(t, notes, "v1\n")

	// The session's grant lets its next write run without asking, and the
	// log says why it ran; another session still asks.
	evs, _ := sendTurn(t, dir, "a", "write2", "--session", "s1")
	if r := toolResultsOf(evs, "write_file"); len(r) != 1 || r[0].IsError {
		t.Errorf("the second write in s1: %+v", r)
	}
	checkFile(t, notes, "v2\n")
	if res := resolutions(sessionLog(t, dir, "a/s1")); len(res) != 2 || res[1].By != "grant" || !res[1].Granted || res[1].Grant == "" {
		t.Errorf("s1's resolutions %+v; want the second by its grant", res)
	}
	sent = background(t, dir, "send", "a", "write1", "--session", "s2", "--json")
	okRun(t, dir, "deny", waitApproval(t, dir, "a/s2").ID, "--reason", "not here")
	turnResult(t, sent)
	checkFile(t, notes, "v2\n")

	// A command waits; its card is the command, its folder, its sandbox.
	sent = background(t, dir, "send", "a", "hi", "--session", "s3", "--json")
	req = waitApproval(t, dir, "a/s3")
	shown = okRun(t, dir, "approvals")
	for _, want := range []string{req.ID + "  exec", "command: echo hi", "in:      . (the workspace)", "sandbox: none", "[--session | --always]"} {
		mustContain(t, shown, want)
	}
	okRun(t, dir, "approve", req.ID, "--always")
	if evs, _ := turnResult(t, sent); !strings.HasSuffix(onlyResult(t, evs, "exec"), "\nhi\n") {
		t.Errorf("the approved command: %+v", toolResultsOf(evs, "exec"))
	}
	// --always is for that exact command, in every session of the agent.
	if out := onlyResult(t, mustSend(t, dir, "hi", "s4"), "exec"); !strings.HasSuffix(out, "\nhi\n") {
		t.Errorf("the same command in another session: %q", out)
	}
	sent = background(t, dir, "send", "a", "bye", "--session", "s4", "--json")
	okRun(t, dir, "deny", waitApproval(t, dir, "a/s4").ID)
	turnResult(t, sent)

	// Both grants are listed, by the CLI and the API; a revoke makes the
	// command ask again.
	var grants []gateway.GrantInfo
	decodeOut(t, okRun(t, dir, "grants", "--json"), &grants)
	byTool := map[string]gateway.GrantInfo{}
	for _, g := range grants {
		byTool[g.Tool] = g
	}
	if g := byTool["write_file"]; len(grants) != 2 || g.Session != "a/s1" || g.Exact != "" {
		t.Fatalf("grants %+v; want write_file in a/s1 and exec always", grants)
	}
	if g := byTool["exec"]; g.Session != "" || !strings.HasPrefix(g.Exact, "echo hi") {
		t.Fatalf("exec's grant %+v; want every session, the exact command", g)
	}
	listed := okRun(t, dir, "grants")
	mustContain(t, listed, "a/s1")
	mustContain(t, listed, "echo hi")
	if code, body := daemonDo(t, dir, http.MethodGet, "/v1/grants?agent=a", ""); code != http.StatusOK || !strings.Contains(body, byTool["exec"].ID) || !strings.Contains(body, byTool["write_file"].ID) {
		t.Errorf("GET /v1/grants: %d %s", code, body)
	}
	okRun(t, dir, "grants", "revoke", byTool["exec"].ID)
	sent = background(t, dir, "send", "a", "hi", "--session", "s5", "--json")
	okRun(t, dir, "approve", waitApproval(t, dir, "a/s5").ID)
	turnResult(t, sent)
	decodeOut(t, okRun(t, dir, "grants", "--json"), &grants)
	if len(grants) != 1 || grants[0].Tool != "write_file" {
		t.Errorf("grants after the revoke: %+v", grants)
	}
}

// checkFile fails the test unless the file at p holds want.
func checkFile(t *testing.T, p, want string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != want {
		t.Errorf("%s: %q, %v; want %q", p, b, err, want)
	}
}

// resolutions are the approval answers of a log, in order.
func resolutions(evs []event.Event) []event.ApprovalResolvedData {
	var out []event.ApprovalResolvedData
	for _, e := range evs {
		var d event.ApprovalResolvedData
		if e.Kind == event.ApprovalResolved && e.Decode(&d) == nil {
			out = append(out, d)
		}
	}
	return out
}

// onlyResult is the output of the one successful call of tool in evs.
func onlyResult(t *testing.T, evs []event.Event, tool string) string {
	t.Helper()
	r := toolResultsOf(evs, tool)
	if len(r) != 1 || r[0].IsError {
		t.Fatalf("results of %s: %+v; want one that succeeded", tool, r)
	}
	return r[0].Output
}

// mustSend sends text to agent a's session key and returns the turn's
// events; it must end without waiting for anyone.
func mustSend(t *testing.T, dir, text, key string) []event.Event {
	t.Helper()
	evs, end := sendTurn(t, dir, "a", text, "--session", key)
	if end.Status != event.StatusDone {
		t.Fatalf("%s in %s ended %+v", text, key, end)
	}
	return evs
}
