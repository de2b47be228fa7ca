package main

import (
	"os"
	"path/filepath"
	"testing"

	"agentd/internal/event"
)

// Through the daemon: "allow for this session" lets the next call in the
// session run without asking, and ends with the conversation: after
// agentd reset the same call waits for a person again.
func TestSessionGrantEndsWithReset(t *testing.T) {
	addr := fake(t, "match ^count\ncall demo__counter {}\n---\nsay the counter said: {{tool_result}}\n")
	dir := dataDir(t, nil)
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	def := demoAgent(addr, dir, "tools:\n  ask: [\"demo__counter\"]\n")
	if err := os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	serve(t, dir)
	waitDemo(t, dir)

	sent := background(t, dir, "send", "a", "count please", "--session", "s1", "--json")
	okRun(t, dir, "approve", waitApproval(t, dir, "a/s1").ID, "--session")
	if _, end := turnResult(t, sent); end.Status != event.StatusDone {
		t.Fatalf("first turn %+v", end)
	}
	// the grant lets the next call run: the send ends without an answer
	sent = background(t, dir, "send", "a", "count again", "--session", "s1", "--json")
	if _, end := turnResult(t, sent); end.Status != event.StatusDone || end.Reply != "the counter said: 2" {
		t.Fatalf("second turn, under the session grant: %+v", end)
	}
	okRun(t, dir, "reset", "a/s1")
	sent = background(t, dir, "send", "a", "count after the reset", "--session", "s1", "--json")
	req := waitApproval(t, dir, "a/s1") // fails when the call runs without asking
	okRun(t, dir, "deny", req.ID, "--reason", "enough")
	turnResult(t, sent)
}
