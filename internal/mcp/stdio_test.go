//go:build unix

package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/tool"
)

// alive reports whether a process with this id exists (a zombie counts).
func alive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}

func TestStdioServer(t *testing.T) {
	logs := &logBuffer{}
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, Logger: logs.logger()})
	if errs := m.Set(context.Background(), []Def{stdioDef(t, "proc", "stdio")}); errs != nil {
		t.Fatal(errs)
	}
	m.WaitReady(context.Background())
	st, _ := m.Status("proc")
	if st.State != StateConnected || st.PID == 0 || st.Transport != "stdio" || st.ServerName != "testserver" {
		t.Fatalf("status %+v", st)
	}
	res := run(t, reg, &tool.Call{Name: "proc__pid"})
	if res.Output != strconv.Itoa(st.PID) {
		t.Errorf("pid tool says %q, status says %d", res.Output, st.PID)
	}
	res = run(t, reg, &tool.Call{Name: "proc__meta", Args: json.RawMessage(`{"a":[1,2]}`), Agent: "alice", ID: "c1"})
	if !strings.Contains(res.Output, `"agentd/agent":"alice"`) || !strings.Contains(res.Output, `"args":{"a":[1,2]}`) {
		t.Errorf("meta over stdio: %s", res.Output)
	}

	// The server's stderr is logged with its name, by level.
	waitFor(t, "stderr in the log", func() bool {
		l := logs.String()
		return strings.Contains(l, `level=WARN msg="mcp: server stderr" server=proc line="warning: test server starting"`) &&
			strings.Contains(l, `level=DEBUG msg="mcp: server stderr" server=proc line="an ordinary line"`)
	})

	// list_changed over stdio.
	run(t, reg, &tool.Call{Name: "proc__add_extra"})
	waitFor(t, "proc__extra", func() bool { return reg.has("proc__extra") })
	run(t, reg, &tool.Call{Name: "proc__remove_extra"})
	waitFor(t, "proc__extra to go", func() bool { return !reg.has("proc__extra") })

	pid := st.PID
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("server process %d still exists after Close", pid)
	}
	if len(reg.Specs()) != 0 {
		t.Errorf("tools left after Close: %v", reg.names())
	}
}

func TestStdioCrashAndReconnect(t *testing.T) {
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg})
	if errs := m.Set(context.Background(), []Def{stdioDef(t, "proc", "stdio")}); errs != nil {
		t.Fatal(errs)
	}
	m.WaitReady(context.Background())
	first, _ := m.Status("proc")

	res := run(t, reg, &tool.Call{Name: "proc__crash"})
	if !res.IsError {
		t.Errorf("crash call: %+v", res)
	}
	waitFor(t, "the reconnection", func() bool {
		st, _ := m.Status("proc")
		return st.State == StateConnected && st.Restarts == 1 && reg.has("proc__echo")
	})
	st, _ := m.Status("proc")
	if st.PID == first.PID || alive(first.PID) {
		t.Errorf("pid %d -> %d (old alive: %v)", first.PID, st.PID, alive(first.PID))
	}
	if !strings.Contains(st.LastError, "exit status 3") || !strings.Contains(st.LastError, "fatal: crashing on purpose") {
		t.Errorf("LastError %q", st.LastError)
	}
	// Its tools left the registry before they came back.
	ops := reg.log()
	i := slices.Index(ops, "-proc__echo")
	if i < 0 || !slices.Contains(ops[i:], "+proc__echo") {
		t.Errorf("registry operations: %v", ops)
	}
	res = run(t, reg, &tool.Call{Name: "proc__echo", Args: json.RawMessage(`{"text":"again"}`)})
	if res.Output != "again" {
		t.Errorf("call after reconnect: %+v", res)
	}
}

func TestStdioEnvironment(t *testing.T) {
	t.Setenv("AGENTD_MCP_SECRET", "leaked")
	t.Setenv("AGENTD_MCP_PASSED", "passed")
	t.Setenv("HOME", "/home/test-home")
	d := stdioDef(t, "proc", "stdio")
	d.Config.PassEnv = []string{"AGENTD_MCP_PASSED", "AGENTD_MCP_UNSET"}
	d.Config.Env["EXTRA"] = "extra"
	d.Config.Dir = t.TempDir()
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg})
	if _, err := m.Add(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"AGENTD_MCP_SECRET": "<unset>",
		"AGENTD_MCP_PASSED": "passed",
		"AGENTD_MCP_UNSET":  "<unset>",
		"EXTRA":             "extra",
		"HOME":              "/home/test-home",
		"PWD":               "<unset>",
	} {
		res := run(t, reg, &tool.Call{Name: "proc__env", Args: json.RawMessage(fmt.Sprintf(`{"name":%q}`, name))})
		if res.Output != want {
			t.Errorf("%s = %q in the server, want %q", name, res.Output, want)
		}
	}
}

func TestStdioStartFailures(t *testing.T) {
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg})
	ctx := context.Background()

	_, err := m.Add(ctx, Def{Name: "missing", Config: agent.MCPServer{Command: "/nonexistent/agentd-mcp-server"}})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/agentd-mcp-server") {
		t.Errorf("missing command: %v", err)
	}
	_, err = m.Add(ctx, stdioDef(t, "failing", "fail"))
	if err == nil || !strings.Contains(err.Error(), "exit status 2") || !strings.Contains(err.Error(), "fatal: bad configuration file") {
		t.Errorf("failing server: %v", err)
	}
	if len(m.List()) != 0 || len(reg.Specs()) != 0 {
		t.Errorf("kept after failures: %+v %v", m.List(), reg.names())
	}
}

func TestStdioStubbornServerIsKilled(t *testing.T) {
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, StopGrace: 50e6})
	st, err := m.Add(context.Background(), stdioDef(t, "stubborn", "stubborn"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(context.Background(), "stubborn"); err != nil {
		t.Fatal(err)
	}
	if alive(st.PID) {
		t.Errorf("stubborn server %d survived Remove", st.PID)
	}
	if _, err := m.CallTool(context.Background(), "stubborn", "echo", nil, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("call after Remove: %v", err)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	net := newMemNet()
	net.add("mem", newTestServer(false))
	hs := newHTTPServer(t, newTestServer(false), true)
	reg := newRecorder()
	m := newTestManager(t, &Options{Tools: reg, dial: net.dial})
	ctx := context.Background()
	m.Set(ctx, []Def{memDef("mem")})
	m2 := newTestManager(t, &Options{Tools: reg})
	if _, err := m2.Add(ctx, stdioDef(t, "proc", "stdio")); err != nil {
		t.Fatal(err)
	}
	if _, err := m2.Add(ctx, Def{Name: "web", Config: agent.MCPServer{Transport: "sse", URL: hs.URL, AllowNetworks: local}}); err != nil {
		t.Fatal(err)
	}
	m.WaitReady(ctx)
	run(t, reg, &tool.Call{Name: "mem__echo", Args: json.RawMessage(`{"text":"x"}`)})
	run(t, reg, &tool.Call{Name: "proc__echo", Args: json.RawMessage(`{"text":"x"}`)})
	run(t, reg, &tool.Call{Name: "web__echo", Args: json.RawMessage(`{"text":"x"}`)})
	m.Close()
	m2.Close()
	hs.CloseClientConnections()
	hs.Close()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	if len(reg.Specs()) != 0 {
		t.Errorf("tools left: %v", reg.names())
	}
}
