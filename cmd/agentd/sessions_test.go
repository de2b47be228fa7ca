package main

import (
	"strings"
	"testing"
)

// reset, compact, close, reopen and log of a session that does not exist
// say so (exit 3) and create nothing; a closed session is reopened by agentd reopen or by
// send --reopen, and its context goes on. Through the daemon and in process.
func TestSessionCommandsNotFoundAndReopen(t *testing.T) {
	t.Parallel()
	addr := fake(t, "say {{n_messages}} messages, last: {{last_user}}\n")
	for _, daemon := range []bool{true, false} {
		dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
		if daemon {
			serve(t, dir)
		}
		for _, op := range []string{"reset", "compact", "close", "reopen", "log"} {
			if r := run(t, dir, op, "a/none"); r.code != 3 || !strings.Contains(r.stderr, "session not found: a/none") {
				t.Errorf("daemon=%v: agentd %s a/none: %+v, want exit 3", daemon, op, r)
			}
			if r := run(t, dir, "sessions"); strings.Contains(r.stdout, "a/none") {
				t.Fatalf("daemon=%v: agentd %s made a session:\n%s", daemon, op, r.stdout)
			}
		}
		mustContain(t, run(t, dir, "send", "a", "--session", "s", "one").stdout, "1 messages, last: one")
		for _, reopen := range []func(){
			func() { mustContain(t, run(t, dir, "reopen", "a/s").stdout, "a/s: reopened") },
			func() {}, // send --reopen reopens it
		} {
			if r := run(t, dir, "close", "a/s"); r.code != 0 {
				t.Fatalf("daemon=%v: close: %+v", daemon, r)
			}
			r := run(t, dir, "send", "a", "--session", "s", "refused")
			if r.code != 1 || !strings.Contains(r.stderr, "session closed") || !strings.Contains(r.stderr, "agentd reopen") {
				t.Fatalf("daemon=%v: send to a closed session: %+v", daemon, r)
			}
			reopen()
			r = run(t, dir, "send", "a", "--session", "s", "--reopen", "again")
			if r.code != 0 || !strings.Contains(r.stdout, "last: again") {
				t.Fatalf("daemon=%v: send --reopen: %+v", daemon, r)
			}
		}
		// The context went on across closing and reopening.
		mustContain(t, run(t, dir, "send", "a", "--session", "s", "last").stdout, "7 messages, last: last")
		mustContain(t, run(t, dir, "reopen", "a/s").stdout, "not closed")
	}
}

// In a chat whose session has no message yet, /compact and /reset say
// there is nothing to do, create nothing, and the chat goes on. Through
// the daemon and in process.
func TestChatCommandsBeforeTheFirstMessage(t *testing.T) {
	t.Parallel()
	addr := fake(t, "say {{n_messages}} messages, last: {{last_user}}\n")
	for _, daemon := range []bool{true, false} {
		dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
		if daemon {
			serve(t, dir)
		}
		r := runInput(t, dir, nil, "/compact\n/reset\n/quit\n", "chat", "a", "--session", "new")
		if r.code != 0 || strings.Count(r.stdout, "(the session has no messages yet)") != 2 {
			t.Errorf("daemon=%v: /compact and /reset before the first message: %+v", daemon, r)
		}
		if r := run(t, dir, "sessions"); strings.Contains(r.stdout, "a/new") {
			t.Errorf("daemon=%v: a session was made:\n%s", daemon, r.stdout)
		}
		r = runInput(t, dir, nil, "/reset\nhello\n/quit\n", "chat", "a", "--session", "new")
		mustContain(t, r.stdout, "1 messages, last: hello")
	}
}
