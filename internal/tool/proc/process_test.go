package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/tool"
)

// pollUntil polls id (waiting up to a second each time) until the output
// gathered contains want or the process has ended; it returns the
// output gathered and the last first line.
func (f *fixture) pollUntil(t *testing.T, session, id, want string) (string, string) {
	t.Helper()
	var got strings.Builder
	for range 600 {
		r, err := f.callIn(t, session, "process", `{"action": "poll", "id": "`+id+`", "wait": 1}`)
		if err != nil {
			t.Fatalf("poll %s: %v", id, err)
		}
		first, out := splitFirst(r.Output)
		got.WriteString(out)
		if want != "" && strings.Contains(got.String(), want) || want == "" && !strings.Contains(first, "running") {
			return got.String(), first
		}
	}
	t.Fatalf("poll %s: %q never came; got %q", id, want, got.String())
	return "", ""
}

func TestProcessStartPollWriteKillList(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, nil)
	r := f.ok(t, "process", `{"action": "start", "argv": ["cat"], "stdin": "first\n"}`)
	if !strings.HasPrefix(r.Output, "started p1: cat (none)\n") {
		t.Fatalf("start: %q", r.Output)
	}
	if out, _ := f.pollUntil(t, "s1", "p1", "first\n"); out != "first\n" {
		t.Errorf("first poll %q", out)
	}
	f.ok(t, "process", `{"action": "write", "id": "p1", "data": "second\n"}`)
	if out, _ := f.pollUntil(t, "s1", "p1", "second\n"); out != "second\n" {
		t.Errorf("second poll gives %q; want only what is new", out)
	}
	f.ok(t, "process", `{"action": "write", "id": "p1", "data": "last", "eof": true}`)
	out, first := f.pollUntil(t, "s1", "p1", "")
	if !strings.HasSuffix(out, "last") || !strings.HasPrefix(first, "p1 exit 0 · ") {
		t.Errorf("after eof: %q then %q", first, out)
	}
	if _, err := f.call(t, "process", `{"action": "write", "id": "p1", "data": "x"}`); err == nil {
		t.Error("write after eof: no error")
	}

	f.ok(t, "process", `{"action": "start", "argv": ["sleep", "60"]}`)
	r = f.ok(t, "process", `{"action": "list"}`)
	lines := strings.Split(strings.TrimSpace(r.Output), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "p1 · exit 0 · ") || !strings.HasSuffix(lines[0], " · in . · cat") ||
		!strings.HasPrefix(lines[1], "p2 · running · ") || !strings.HasSuffix(lines[1], " · sleep 60") {
		t.Errorf("list:\n%s", r.Output)
	}
	r = f.ok(t, "process", `{"action": "kill", "id": "p2"}`)
	if !strings.HasPrefix(r.Output, "killed p2: killed: killed · ") {
		t.Errorf("kill: %q", r.Output)
	}
	r, _ = f.call(t, "process", `{"action": "poll", "id": "p2"}`)
	if !r.IsError {
		t.Errorf("poll of a killed process is not an error: %q", r.Output)
	}
}

func TestProcessIDsAndLimitPerSession(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{MaxProcesses: 2}, nil)
	start := `{"action": "start", "argv": ["sleep", "60"]}`
	f.ok(t, "process", start)
	f.ok(t, "process", start)
	if _, err := f.call(t, "process", start); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "exec.max_processes") {
		t.Errorf("third start: %v, want ErrLimit naming exec.max_processes", err)
	}
	r, err := f.callIn(t, "s2", "process", start)
	if err != nil || !strings.HasPrefix(r.Output, "started p1:") {
		t.Errorf("another session's first: %q, %v", r.Output, err)
	}
	if _, err := f.callIn(t, "s2", "process", `{"action": "poll", "id": "p2"}`); !errors.Is(err, ErrNoProc) {
		t.Errorf("s2 polls s1's p2: %v, want ErrNoProc", err)
	}
	f.ok(t, "process", `{"action": "kill", "id": "p1"}`)
	if r := f.ok(t, "process", start); !strings.HasPrefix(r.Output, "started p3:") {
		t.Errorf("start after a kill: %q", r.Output)
	}
}

func TestProcessUnknownIDSaysProcessesEndWithAgentd(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, nil)
	for _, action := range []string{"poll", "write", "kill"} {
		_, err := f.call(t, "process", `{"action": "`+action+`", "id": "p7"}`)
		if !errors.Is(err, ErrNoProc) || !strings.Contains(err.Error(), "end with agentd") {
			t.Errorf("%s p7: %v", action, err)
		}
	}
	for _, args := range []string{`{"action": "poll"}`, `{"action": "dance"}`, `{}`, `{"action": "list", "wat": 1}`} {
		if _, err := f.call(t, "process", args); !errors.Is(err, ErrArgs) {
			t.Errorf("%s: %v, want ErrArgs", args, err)
		}
	}
}

func TestCloseSessionKillsItsProcesses(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, nil)
	f.ok(t, "process", `{"action": "start", "argv": ["sleep", "60"]}`)
	f.callIn(t, "s2", "process", `{"action": "start", "argv": ["sleep", "60"]}`)
	b, err := f.m.lookup("s1", "p1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.m.lookup("s2", "p1")
	if err != nil {
		t.Fatal(err)
	}
	f.m.CloseSession("s1")
	<-b.done
	if b.exit.Reason != "killed" {
		t.Errorf("exit %+v, want killed", b.exit)
	}
	if other.ended() {
		t.Error("another session's process ended too")
	}
	if r := f.ok(t, "process", `{"action": "list"}`); r.Output != "no background processes in this session" {
		t.Errorf("list after CloseSession: %q", r.Output)
	}
	f.m.Close()
	<-other.done
	if _, err := f.callIn(t, "s2", "process", `{"action": "start", "argv": ["true"]}`); !errors.Is(err, ErrClosed) {
		t.Errorf("start after Close: %v, want ErrClosed", err)
	}
}

// A process that never reads its input, and one whose output floods,
// never hold a call: writes past the buffer are refused, output past the
// ring is counted and left out.
func TestProcessNeverBlocksACall(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{MaxOutputBytes: 1000}, &Options{StdinBytes: 4096, OutputBytes: 64})
	f.ok(t, "process", `{"action": "start", "argv": ["sleep", "60"]}`)
	chunk := strings.Repeat("x", 4000)
	var err error
	for range 100 { // the pipe takes 64 KiB, then the buffer 4 KiB
		if _, err = f.call(t, "process", `{"action": "write", "id": "p1", "data": "`+chunk+`"}`); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrStdin) {
		t.Errorf("writes to a process that does not read: %v, want ErrStdin", err)
	}

	f.ok(t, "process", `{"action": "start", "argv": ["seq", "1", "10000"]}`)
	out, first := f.pollUntil(t, "s1", "p2", "")
	if !strings.HasPrefix(first, "p2 exit 0") {
		t.Fatalf("p2: %q", first)
	}
	if !strings.HasPrefix(out, "1\n2\n3\n") || !strings.Contains(out, " bytes of output left out (no longer kept) …\n") || !strings.HasSuffix(out, "9999\n10000\n") {
		t.Errorf("flooded output as polled: %q", out)
	}
}

// A poll returns at most the output cap and leaves the rest for the next.
func TestProcessPollIsCapped(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{MaxOutputBytes: 100}, nil)
	f.ok(t, "process", `{"action": "start", "argv": ["seq", "1", "1000"]}`)
	b, _ := f.m.lookup("s1", "p1")
	<-b.done
	var all bytes.Buffer
	for i := 0; ; i++ {
		r := f.ok(t, "process", `{"action": "poll", "id": "p1"}`)
		_, out := splitFirst(r.Output)
		data, _, more := strings.Cut(out, "\n… ")
		if len(data) > 100 {
			t.Fatalf("poll %d gave %d bytes, more than the cap", i, len(data))
		}
		all.WriteString(data)
		if !more {
			break
		}
	}
	var want bytes.Buffer
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if all.String() != want.String() {
		t.Errorf("polls gave %d bytes, want seq's %d", all.Len(), want.Len())
	}
}

func TestProcessInert(t *testing.T) {
	in := (&processTool{}).Inert
	for args, want := range map[string]bool{
		`{"action": "poll", "id": "p1"}`:               true,
		`{"action": "poll", "id": "p1", "wait": 5}`:    true,
		`{"action": "list"}`:                           true,
		`{"action": "start", "argv": ["rm", "-rf"]}`:   false,
		`{"action": "write", "id": "p1", "data": ""}`:  false,
		`{"action": "kill", "id": "p1"}`:               false,
		`{"action": "poll"}`:                           false,
		`{"action": "list", "argv": ["x"], "junk": 1}`: false,
		`not json`: false,
	} {
		if got := in(json.RawMessage(args)); got != want {
			t.Errorf("Inert(%s) = %v, want %v", args, got, want)
		}
	}
	var _ tool.Inert = &processTool{}
}

// A poll that waits returns when the process ends, and when its call is
// cancelled.
func TestProcessPollWaitEnds(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, &Options{MaxWait: time.Hour})
	f.ok(t, "process", `{"action": "start", "argv": ["sleep", "60"]}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := f.m.Tools()[1].Call(ctx, &tool.Call{Args: json.RawMessage(`{"action": "poll", "id": "p1", "wait": 3600}`), Agent: "a", Session: "s1"})
	if err != nil || !strings.HasPrefix(r.Output, "p1 running · ") {
		t.Errorf("cancelled poll: %q, %v", r.Output, err)
	}
	f.ok(t, "process", `{"action": "start", "argv": ["sleep", "0.1"]}`)
	r = f.ok(t, "process", `{"action": "poll", "id": "p2", "wait": 3600}`)
	if !strings.HasPrefix(r.Output, "p2 exit 0 · ") {
		t.Errorf("poll until the end: %q", r.Output)
	}
}

func TestProcessInputErrors(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, &Options{StdinBytes: 10})
	if _, err := f.call(t, "process", `{"action": "start", "argv": ["cat"], "stdin": "01234567890"}`); !errors.Is(err, ErrStdin) {
		t.Errorf("start with more stdin than the bound: %v, want ErrStdin", err)
	}
	f.ok(t, "process", `{"action": "start", "argv": ["sleep", "60"]}`)
	f.ok(t, "process", `{"action": "write", "id": "p1", "data": "", "eof": true}`)
	if _, err := f.call(t, "process", `{"action": "write", "id": "p1", "data": "x"}`); !errors.Is(err, ErrInputClosed) {
		t.Errorf("write after eof: %v, want ErrInputClosed", err)
	}
	f.ok(t, "process", `{"action": "start", "argv": ["true"]}`)
	f.pollUntil(t, "s1", "p2", "")
	if _, err := f.call(t, "process", `{"action": "write", "id": "p2", "data": "x"}`); !errors.Is(err, ErrFinished) {
		t.Errorf("write to an ended process: %v, want ErrFinished", err)
	}
	if r := f.ok(t, "process", `{"action": "kill", "id": "p2"}`); !strings.HasPrefix(r.Output, "p2 had ended: exit 0") {
		t.Errorf("kill of an ended process: %q", r.Output)
	}
}
