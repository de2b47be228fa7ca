package main

// exec and process through the binary, in bubblewrap and without a
// sandbox: a command's output and exit line, the shell refusal, a cwd
// leaving the workspace, and background processes started, polled,
// killed, and ended with their session's reset.

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestMachineExec(t *testing.T) {
	addr := fake(t, callScript(t,
		scripted{"echo", "exec", map[string]any{"argv": []string{"echo", "hello", "$HOME;", "*"}}},
		scripted{"sh-c", "exec", map[string]any{"argv": []string{"sh", "-c", "echo failing; exit 3"}}},
		scripted{"shell", "exec", map[string]any{"argv": []string{"echo hi"}, "shell": true}},
		scripted{"cwd-out", "exec", map[string]any{"argv": []string{"pwd"}, "cwd": "../.."}},
		scripted{"pwd", "exec", map[string]any{"argv": []string{"pwd"}}},
	))
	sandboxModes(t, func(t *testing.T, mode string) {
		files := map[string]string{
			"agents/m.yaml": machineAgent(addr, []string{"exec"}, []string{"exec"}, "sandbox: "+mode+"\n"),
		}
		eachWay(t, files, func(t *testing.T, w *way) {
			where := "bwrap, no network"
			if mode == "none" {
				where = "none"
			}
			out := okResult(t, w.dir, "m/s1", "echo", "exec")
			first, rest, _ := strings.Cut(out, "\n")
			if !strings.HasPrefix(first, "exit 0 · ") || !strings.HasSuffix(first, " · "+where) || rest != "hello $HOME; *\n" {
				t.Errorf("exec of echo said %q; want an exit line ending %q, then the arguments as given", out, where)
			}
			out = errResult(t, w.dir, "m/s1", "sh-c", "exec")
			if !strings.Contains(out, "shell") || strings.Contains(out, "failing") {
				t.Errorf("sh -c without exec.shell said %q; want a refusal naming the shell, nothing run", out)
			}
			if out := errResult(t, w.dir, "m/s1", "shell", "exec"); !strings.Contains(out, "shell") {
				t.Errorf("shell: true without exec.shell said %q; want a refusal naming the shell", out)
			}
			if out := errResult(t, w.dir, "m/s1", "cwd-out", "exec"); !strings.Contains(out, "outside the workspace") {
				t.Errorf("a cwd out of the workspace said %q", out)
			}
			if out := okResult(t, w.dir, "m/s1", "pwd", "exec"); !strings.Contains(out, w.dir+"/workspace/m\n") {
				t.Errorf("pwd said %q; want the workspace's own path", out)
			}
		})
	})
}

func TestMachineExecExitAndShell(t *testing.T) {
	addr := fake(t, callScript(t,
		scripted{"exit3", "exec", map[string]any{"argv": []string{"sh", "-c", "echo failing; exit 3"}}},
		scripted{"shell", "exec", map[string]any{"argv": []string{"echo $((6*7))"}, "shell": true}},
	))
	sandboxModes(t, func(t *testing.T, mode string) {
		dir := dataDir(t, map[string]string{
			"agents/m.yaml": machineAgent(addr, []string{"exec"}, []string{"exec"}, "sandbox: "+mode+"\nexec:\n  shell: true\n"),
		})
		serve(t, dir)
		out := errResult(t, dir, "m/s1", "exit3", "exec")
		if !strings.HasPrefix(out, "exit 3 · ") || !strings.Contains(out, "\nfailing\n") {
			t.Errorf("a command exiting 3 said %q", out)
		}
		if out := okResult(t, dir, "m/s1", "shell", "exec"); !strings.HasSuffix(out, "\n42\n") {
			t.Errorf("a shell command said %q", out)
		}
	})
}

// process start, poll, list, kill; and a reset of the session ends its
// background processes.
func TestMachineProcess(t *testing.T) {
	mark := func(i int) string { return fmt.Sprintf("3000.%d%d", time.Now().UnixNano()%1e8, i) }
	m1, m2 := mark(1), mark(2)
	addr := fake(t, callScript(t,
		scripted{"seq", "process", map[string]any{"action": "start", "argv": []string{"seq", "3"}}},
		scripted{"poll1", "process", map[string]any{"action": "poll", "id": "p1", "wait": 10}},
		scripted{"sleep1", "process", map[string]any{"action": "start", "argv": []string{"sleep", m1}}},
		scripted{"list", "process", map[string]any{"action": "list"}},
		scripted{"kill2", "process", map[string]any{"action": "kill", "id": "p2"}},
		scripted{"sleep2", "process", map[string]any{"action": "start", "argv": []string{"sleep", m2}}},
	))
	sandboxModes(t, func(t *testing.T, mode string) {
		dir := dataDir(t, map[string]string{
			"agents/m.yaml": machineAgent(addr, []string{"process"}, []string{"process"}, "sandbox: "+mode+"\n"),
		})
		serve(t, dir)
		const s = "m/" + "s1"
		if out := okResult(t, dir, s, "seq", "process"); !strings.HasPrefix(out, "started p1: seq 3") {
			t.Errorf("start said %q", out)
		}
		if out := waitPoll(t, dir, s, "poll1"); !strings.Contains(out, "1\n2\n3\n") {
			t.Errorf("poll said %q; want seq's output", out)
		}
		okResult(t, dir, s, "sleep1", "process")
		waitRunning(t, m1)
		if out := okResult(t, dir, s, "list", "process"); !strings.Contains(out, "p2") || !strings.Contains(out, m1) {
			t.Errorf("list said %q; want p2 running sleep %s", out, m1)
		}
		okResult(t, dir, s, "kill2", "process")
		waitGone(t, m1)

		okResult(t, dir, s, "sleep2", "process")
		waitRunning(t, m2)
		okRun(t, dir, "reset", s)
		waitGone(t, m2)
		if out := okResult(t, dir, s, "list", "process"); strings.Contains(out, m2) {
			t.Errorf("after the reset, list said %q; want no process", out)
		}
	})
}

// waitPoll polls a process (trigger) until it has ended, at most a
// minute (a bound for a failing test, not a timing assertion).
func waitPoll(t *testing.T, dir, session, trigger string) string {
	t.Helper()
	var all string
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
		out := okResult(t, dir, session, trigger, "process")
		all += out
		if strings.Contains(out, "exit") {
			return all
		}
	}
	t.Fatalf("the process never ended: %q", all)
	return ""
}

// waitGone waits until no process holds mark, at most a minute.
func waitGone(t *testing.T, mark string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if len(processesWith(mark)) == 0 {
			return
		}
	}
	t.Errorf("a process running %q outlived its kill: pids %v", mark, processesWith(mark))
}

// waitRunning waits until a process holds mark, at most a minute: a
// process starts through the sandbox's helper, whose command line does
// not hold the command's until it becomes it.
func waitRunning(t *testing.T, mark string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if len(processesWith(mark)) > 0 {
			return
		}
	}
	t.Fatalf("no process runs %q", mark)
}
