package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentd/internal/gateway"
	"agentd/internal/gateway/console"
	"agentd/internal/gateway/stream"
	"agentd/internal/permit"
	"agentd/internal/store"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

// The console's Approvals screen in Chromium (test/console/approvals.spec.mjs)
// against three calls waiting with cards — a command with its directory
// and sandbox, a diff, a URL — and two grants: each card shows what the
// call will do (the diff's added and removed lines coloured), "Always allow
// this exact …" only where the card names an exact call, and each answer
// reaches the waiting call with its scope; Revoke removes a grant.
func TestApprovalsInChromium(t *testing.T) {
	chromium, node := browserDeps(t)
	k := testkit.New(t, &testkit.Options{Agents: testAgents(), Model: testkit.NewModel()})
	st := stream.New(stream.Join(k.Runtime, k.Store), nil)
	t.Cleanup(func() { st.Close() })
	b := permit.New()
	at := time.Now().UTC().Add(-time.Hour)
	grants := &fakeGrants{list: []store.Grant{
		{ID: "g1", Agent: "a", Session: "a/main", Tool: "exec", By: "alice", CreatedAt: at},
		{ID: "g2", Agent: "a", Tool: "web_fetch", Exact: "https://example.com/", By: "bob", CreatedAt: at},
	}}
	card := func(c tool.Card) json.RawMessage {
		raw, _ := json.Marshal(c)
		return raw
	}
	now := time.Now().UTC()
	wait := func(id, toolName string, c json.RawMessage) <-chan permit.Decision {
		return askReq(t, b, permit.Request{ID: id, Agent: "a", Session: "a/main", Turn: 1, CallID: "call-" + id, Tool: toolName,
			Args: json.RawMessage(`{}`), Reason: "tool " + toolName + " needs approval", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Card: c})
	}
	cmd := wait("ap-cmd", "exec", card(tool.Card{Kind: tool.CardCommand, Title: "Run go test ./... in src (bwrap, no network)",
		Command: []string{"go", "test", "./..."}, Dir: "src", Sandbox: "bwrap, no network", Input: `y\r` + "\ny\n", InputOmitted: 12,
		Exact: "go test ./...\x00in src"}))
	diff := wait("ap-diff", "edit_file", card(tool.Card{Kind: tool.CardDiff, Title: "Change main.go", Paths: []string{"main.go"},
		Diff: "--- a/main.go\n+++ b/main.go\n@@ -1,2 +1,2 @@\n package main\n-// old\n+// new\n"}))
	url := wait("ap-url", "web_fetch", card(tool.Card{Kind: tool.CardURL, Title: "Fetch https://example.com/docs",
		URL: "https://example.com/docs", Method: "GET", Exact: "https://example.com/docs"}))

	srv := gateway.New(&gateway.Options{Runtime: k.Runtime, Sessions: k.Store, Agents: testAgents(), Permits: b, Grants: grants,
		Ready: okReady{}, Console: console.Handler(&console.Options{}), Stream: st})
	tk, tok := authTokens(t)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: ts.Listener.Addr().String(), RemoteAdmin: true})
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})

	spec, _ := filepath.Abs(filepath.Join("..", "..", "test", "console", "approvals.spec.mjs"))
	env := []string{"URL=" + ts.URL, "TOKEN=" + tok, "CHROMIUM=" + chromium, "FAILURE_DIR=" + t.TempDir()}
	if d := os.Getenv("AGENTD_SCREENSHOTS"); d != "" && d != "1" {
		env = append(env, "SCREENSHOT_DIR="+d)
	}
	cctx, ccancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer ccancel()
	c := exec.CommandContext(cctx, node, spec)
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Log(line)
	}
	if err != nil || !strings.Contains(string(out), " passed, 0 failed") {
		t.Fatalf("approvals.spec.mjs: %v", err)
	}
	for _, w := range []struct {
		name string
		ch   <-chan permit.Decision
		want permit.Decision
	}{
		{"the command", cmd, permit.Decision{Granted: true, By: "console", Scope: permit.ScopeAlways}},
		{"the diff", diff, permit.Decision{Granted: true, By: "console", Scope: permit.ScopeSession}},
		{"the URL", url, permit.Decision{By: "console", Reason: "not that site"}},
	} {
		if got := recv(t, w.name, w.ch); got != w.want {
			t.Errorf("%s got %+v, want %+v", w.name, got, w.want)
		}
	}
}
