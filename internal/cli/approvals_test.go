package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/gateway"
	"agentd/internal/permit"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// cardRequests are calls waiting with each kind of card, and one without.
func cardRequests() []permit.Request {
	now := time.Now().UTC()
	card := func(c tool.Card) json.RawMessage {
		b, _ := json.Marshal(c)
		return b
	}
	mk := func(i int, toolName string, c json.RawMessage) permit.Request {
		return permit.Request{ID: fmt.Sprintf("ap%d", i), Agent: "coder", Session: "coder/main", Turn: 1, CallID: "c1",
			Tool: toolName, Args: json.RawMessage(`{}`), Reason: "tool " + toolName + " needs approval",
			CreatedAt: now.Add(time.Duration(i) * time.Millisecond), ExpiresAt: now.Add(10 * time.Minute), Card: c}
	}
	return []permit.Request{
		mk(1, "exec", card(tool.Card{Kind: tool.CardCommand, Title: "Run go test ./... in src (bwrap, no network)",
			Command: []string{"go", "test", "./...", "-run", "Test It's"}, Dir: "src", Sandbox: "bwrap, no network",
			Exact: "go test ./... -run 'Test It'\\''s'\x00in src"})),
		mk(2, "edit_file", card(tool.Card{Kind: tool.CardDiff, Title: "Change main.go", Paths: []string{"main.go"},
			Diff: "--- a/main.go\n+++ b/main.go\n@@ -1,2 +1,2 @@\n package main\n-// old\x1b[2J\n+// new\n", DiffOmitted: 120})),
		mk(3, "web_fetch", card(tool.Card{Kind: tool.CardURL, Title: "Fetch https://example.com/docs", URL: "https://example.com/docs",
			Method: "GET", Exact: "https://example.com/docs"})),
		mk(4, "exec", card(tool.Card{Kind: tool.CardCommand, Title: "Run a shell line", Command: []string{"sh", "-c", "ls | wc -l"},
			Sandbox: "none", Shell: true, Exact: "sh -c 'ls | wc -l'\x00in  (shell)"})),
		mk(5, "exec", card(tool.Card{Kind: tool.CardCommand, Title: "Run python3 in the workspace (bwrap, no network), 40 bytes on stdin",
			Command: []string{"python3"}, Sandbox: "bwrap, no network", Input: "print(1)\nprint(2)\x1b[2J", InputOmitted: 20,
			Exact: "python3\x00in \x00sandbox bwrap, no network\x00stdin sha256:00"})),
		mk(6, "send_money", nil),
	}
}

// TestWriteCards: each card reads as what will happen — the command with
// its directory and sandbox, the diff, the URL — and how to answer it,
// --always offered only with an exact call; a call without a card adds
// nothing; text from the tool cannot drive the terminal.
func TestWriteCards(t *testing.T) {
	var b bytes.Buffer
	for _, r := range cardRequests() {
		writeCard(&b, &r)
	}
	goldenIn(t, "approvals", "cards.golden", b.Bytes())
}

// memGrants is a grant store in memory.
type memGrants struct {
	mu   sync.Mutex
	list []store.Grant
}

func (m *memGrants) Grants(_ context.Context, agent string) ([]store.Grant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Grant{}
	for _, g := range m.list {
		if agent == "" || g.Agent == agent {
			out = append(out, g)
		}
	}
	return out, nil
}

func (m *memGrants) DeleteGrant(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, g := range m.list {
		if g.ID == id {
			m.list = append(m.list[:i], m.list[i+1:]...)
			return nil
		}
	}
	return store.ErrNotFound
}

// TestApprovalScopeCommands runs agentd approve --session / --always and
// agentd grants against a gateway over HTTP: the scope reaches the
// waiting call, --always is refused for a call without an exact one (the
// call still waits), grants are listed and revoked.
func TestApprovalScopeCommands(t *testing.T) {
	b := permit.New()
	at := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	g := &memGrants{list: []store.Grant{
		{ID: "g1", Agent: "coder", Session: "coder/main", Tool: "exec", By: "cli", CreatedAt: at},
		{ID: "g2", Agent: "coder", Tool: "exec", Exact: "go test ./...\x00in src", By: "alice", CreatedAt: at},
	}}
	ts := httptest.NewServer(gateway.New(&gateway.Options{Permits: b, Grants: g}))
	defer ts.Close()
	run := func(mk func(*env) *cobra.Command, args ...string) (string, int) {
		var out bytes.Buffer
		cmd := mk(&env{ctx: t.Context(), stdout: &out, stderr: &out})
		cmd.SetArgs(append(args, "--remote", ts.URL, "--token", "token"))
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.ExecuteContext(t.Context())
		if err != nil {
			out.WriteString(err.Error())
			return out.String(), exitCode(err)
		}
		return out.String(), 0
	}
	approve, grants := (*env).approveCmd, (*env).grantsCmd
	wait := func(r permit.Request) <-chan permit.Decision {
		ch := make(chan permit.Decision, 1)
		go func() {
			d, _ := b.Wait(context.Background(), r)
			ch <- d
		}()
		for {
			if _, ok := b.Get(r.ID); ok {
				return ch
			}
			time.Sleep(time.Millisecond)
		}
	}
	reqs := cardRequests()

	decided := wait(reqs[0])
	if got, code := run(approve, "ap1", "--always"); code != 0 || !strings.Contains(got, "approved ap1 (exec in coder/main); this exact call runs without asking") {
		t.Errorf("approve --always: exit %d\n%s", code, got)
	}
	if d := recvDecision(t, decided); !d.Granted || d.Scope != permit.ScopeAlways || d.By != "cli" {
		t.Errorf("the call got %+v", d)
	}

	decided = wait(reqs[1])
	if got, code := run(approve, "ap2", "--always"); code == 0 || !strings.Contains(got, "no exact call") {
		t.Errorf("approve --always of a diff: exit %d\n%s", code, got)
	}
	if got, code := run(approve, "ap2", "--always", "--session"); code != ExitUsage {
		t.Errorf("approve --always --session: exit %d\n%s", code, got)
	}
	if got, code := run(approve, "ap2", "--session"); code != 0 || !strings.Contains(got, "in this session run without asking") {
		t.Errorf("approve --session: exit %d\n%s", code, got)
	}
	if d := recvDecision(t, decided); !d.Granted || d.Scope != permit.ScopeSession {
		t.Errorf("the call got %+v", d)
	}

	list, _ := run(grants)
	goldenIn(t, "approvals", "grants.golden", []byte(list))
	if got, _ := run(grants, "list", "--agent", "nobody"); strings.TrimSpace(got) != "no grants" {
		t.Errorf("grants of nobody: %q", got)
	}
	if got, code := run(grants, "revoke", "g1"); code != 0 || strings.TrimSpace(got) != "revoked grant g1: its calls ask again" {
		t.Errorf("revoke: exit %d %q", code, got)
	}
	if got, code := run(grants, "revoke", "g1"); code != ExitNotFound || !strings.Contains(got, "no grant g1") {
		t.Errorf("revoke again: exit %d %q", code, got)
	}
	if got, _ := run(grants, "--json"); !strings.Contains(got, `"id":"g2"`) || strings.Contains(got, `"id":"g1"`) {
		t.Errorf("grants --json after the revoke: %s", got)
	}
}

func recvDecision(t *testing.T, ch <-chan permit.Decision) permit.Decision {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(30 * time.Second):
		t.Fatal("the call got no decision")
	}
	return permit.Decision{}
}
