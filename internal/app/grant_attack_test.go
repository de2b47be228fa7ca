package app

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"agentd/internal/model/fakellm"
	"agentd/internal/permit"
	"agentd/internal/runtime"
)

// grantApp is agentd with one agent, w, whose model asks for a
// write_file on every message starting "write".
func grantApp(t *testing.T, dir string) *App {
	t.Helper()
	s, err := fakellm.ParseScript("grant", []byte("match ^write\ncall write_file {\"path\": \"a.txt\", \"content\": \"x\"}\n---\nsay done\n"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go fakellm.New(s, nil).Serve(ctx, ln)
	os.MkdirAll(filepath.Join(dir, "agents"), 0o700)
	def := "model:\n  provider: openai\n  name: fake\n  base_url: http://" + ln.Addr().String() + "/v1\ntools:\n  builtin: [write_file]\n  approval_timeout: 30s\n"
	os.WriteFile(filepath.Join(dir, "agents", "w.yaml"), []byte(def), 0o600)
	a, err := Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()); cancel() })
	return a
}

// send sends text to session addr; when answer is not nil, it answers
// the approval the turn waits for with it. It says whether a person was
// asked.
func send(t *testing.T, a *App, addr, text string, answer *permit.Decision) (asked bool) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, end, err := a.Runtime.Send(context.Background(), runtime.Input{Session: addr, Text: text, Reopen: true})
		if err == nil && end.Status != "done" {
			t.Errorf("turn ended %+v", end)
		}
		done <- err
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return asked
		case <-time.After(20 * time.Millisecond):
		}
		for _, req := range a.Permits.List() {
			asked = true
			d := permit.Decision{Granted: false, By: "bob", Reason: "no"}
			if answer != nil {
				d = *answer
			}
			if err := a.Permits.Resolve(req.ID, d); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestAttackSessionGrantOutlivesTheConversation: "allow for this session"
// is kept under the session's address, and nothing removes it: after the
// session is reset (a new conversation, the old one's context gone, what
// a person does to start over) and after the session is deleted and made
// again, the grant still allows the tool without asking. For a chat
// connector's session (one address per chat, for ever) "this session"
// means for ever. The same holds for an agent deleted and made again
// under its id: its grants, "always" ones too, come back with it.
func TestAttackSessionGrantOutlivesTheConversation(t *testing.T) {
	a := grantApp(t, t.TempDir())
	const addr = "w/chat"
	if !send(t, a, addr, "write one", &permit.Decision{Granted: true, By: "alice", Scope: permit.ScopeSession}) {
		t.Fatal("the first write_file was not asked about")
	}
	if send(t, a, addr, "write two", nil) == true {
		t.Fatal("control: the session grant should allow the second call in the same conversation")
	}
	if _, err := a.Runtime.Reset(context.Background(), addr, "start over"); err != nil {
		t.Fatal(err)
	}
	if !send(t, a, addr, "write after reset", nil) {
		t.Errorf("after the session was reset, write_file ran without asking: the grant for the old conversation allowed it")
	}
	if err := a.Runtime.CloseSession(context.Background(), addr); err != nil {
		t.Fatal(err)
	}
	if !send(t, a, addr, "write after close", nil) {
		t.Errorf("after the session was closed and reopened, write_file ran without asking")
	}
}

// TestAttackGrantOutlivesTheAgent: grants are kept by agent id and
// nothing removes them when the agent goes: an agent deleted and later
// made again under the same id (a new file, a new row, another person's
// agent) finds the old one's grants, "always" ones included, and runs
// what they allow without asking.
func TestAttackGrantOutlivesTheAgent(t *testing.T) {
	dir := t.TempDir()
	a := grantApp(t, dir)
	const addr = "w/chat"
	if !send(t, a, addr, "write one", &permit.Decision{Granted: true, By: "alice", Scope: permit.ScopeSession}) {
		t.Fatal("the first write_file was not asked about")
	}
	file := filepath.Join(dir, "agents", "w.yaml")
	def, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := a.Agents.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Agents.Get("w"); ok {
		t.Fatal("agent w is still defined after its file was removed")
	}
	// another agent, under the same id
	if err := os.WriteFile(file, append(def, []byte("system_prompt: A new agent.\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.Agents.Reload(); err != nil {
		t.Fatal(err)
	}
	// An agent file's row follows the file in the background (its
	// removal may be applied after the file is back, hiding the agent
	// until the row of the new file is active): wait for that row.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := a.Ext.Get(context.Background(), "agent", "w")
		_, ok := a.Agents.Get("w")
		if err == nil && ok && st.Active == st.Version && bytes.Contains(st.Spec, []byte("A new agent")) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the new agent w's row never became active: %+v, %v", st, err)
		}
	}
	if !send(t, a, addr, "write as the new agent", nil) {
		t.Errorf("the new agent w ran write_file without asking, on the deleted agent's grant")
	}
}
