package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

// TestAttackOutliveAgentd: bwrap's init (pid 1 of the sandbox) is what
// dies with agentd (--die-with-parent is its parent-death signal), and it
// runs as the command's own uid without capabilities, where nothing (no
// Yama, no seccomp filter) keeps the command from tracing it. The command
// attaches to pid 1 and calls prctl(PR_SET_PDEATHSIG, 0) in it, clears
// its own, and from then on agentd's death leaves it running in its
// sandbox: no timeout (agentd kept it), nobody to kill it. Where agentd
// makes cgroups, the next agentd to start on the machine kills it (Sweep);
// without cgroups (agentd as another user than root) nothing does.
// Here with gdb and python3; any program that can ptrace does the same.
// agentd's seccomp filter (bwrap --seccomp) refuses ptrace, so gdb cannot
// attach and init still dies with agentd, taking the command with it.
// TestPtraceRefused checks the refusal itself with python3 alone.
func TestAttackOutliveAgentd(t *testing.T) {
	if os.Getenv("AGENTD_ATTACK_PARENT") != "" {
		return
	}
	needBwrap(t)
	for _, p := range []string{"gdb", "python3"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed: the probe uses gdb to ptrace bwrap's init and python3 to clear its own death signal; TestPtraceRefused checks the refusal with python3 alone", p)
		}
	}
	mark := fmt.Sprintf("3000.%d", time.Now().UnixNano()%1e9)
	ws := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAttackSandboxParent$")
	cmd.Env = append(os.Environ(), "AGENTD_ATTACK_PARENT="+ws+" "+mark)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); !strings.HasPrefix(line, "started") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the parent said %q", line)
	}
	flag := filepath.Join(ws, "disarmed")
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(flag); err == nil {
			break
		}
	}
	b, _ := os.ReadFile(flag)
	t.Logf("the command's probe: %q", b)
	for end := time.Now().Add(time.Minute); time.Now().Before(end) && !running("sleep\x00"+mark); time.Sleep(20 * time.Millisecond) {
	} // python3 has cleared its own death signal and become sleep
	monitor := childOf(cmd.Process.Pid, mark) // the bwrap the helper became
	if monitor == 0 {
		t.Fatal("no bwrap under the parent")
	}
	t.Cleanup(func() { killMarked(mark) })
	cmd.Process.Signal(syscall.SIGKILL) // agentd dies
	// Its parent (here this test) has not reaped it yet, so no agentd's
	// start sweeps the command's cgroup in the meantime (agentd sweeps
	// the cgroups of an agentd whose pid is gone): what is left running
	// is what the sandbox itself let live.
	for end := time.Now().Add(time.Minute); time.Now().Before(end) && alive(monitor); time.Sleep(20 * time.Millisecond) {
	}
	if alive(monitor) {
		t.Fatal("bwrap did not die with its parent")
	}
	// bwrap's init inside dies with bwrap (its own death signal), and the
	// kernel then kills the rest of the namespace: not at once on a busy
	// machine, so wait for it (a disarmed init would leave the command
	// running for good).
	for end := time.Now().Add(time.Minute); time.Now().Before(end) && running(mark); time.Sleep(20 * time.Millisecond) {
	}
	if running(mark) {
		t.Errorf("agentd was killed and the bwrap it started is gone, but the command it ran still runs (it disarmed bwrap's init: %q): %s", b, psMarked(mark))
	}
	cmd.Wait()
}

// childOf is the pid of a child of parent whose command line holds mark.
func childOf(parent int, mark string) int {
	files, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range files {
		st, _ := os.ReadFile(f)
		fields := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		cl, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
		if strings.Contains(string(cl), mark) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			return pid
		}
	}
	return 0
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// killMarked kills the processes holding mark (the command and bwrap's
// init that this test started).
func killMarked(mark string) {
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), mark) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// TestAttackSandboxParent is agentd for TestAttackOutliveAgentd: it starts
// the command, says so, and waits to be killed.
func TestAttackSandboxParent(t *testing.T) {
	env := os.Getenv("AGENTD_ATTACK_PARENT")
	if env == "" {
		t.Skip("the parent process of TestAttackOutliveAgentd")
	}
	f := strings.Fields(env)
	// disarm bwrap's init, then the command itself (its own death signal
	// is its own to clear), and sleep
	script := fmt.Sprintf(`gdb -batch -p 1 -ex 'call (int)prctl(1, 0, 0, 0, 0)' -ex detach 2>&1 | grep '^\$1' > disarmed.tmp; mv disarmed.tmp disarmed
exec python3 -c 'import ctypes, os; ctypes.CDLL(None).prctl(1, 0, 0, 0, 0); os.execvp("sleep", ["sleep", "%s"])'`, f[1])
	_, err := sandbox.New(nil).Start(context.Background(), &sandbox.Spec{Mode: agent.SandboxBwrap, Workspace: f[0], Dir: f[0],
		Limits: agent.Limits{}.WithDefaults(), Argv: sh(script)})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("started")
	time.Sleep(time.Hour)
}

func psMarked(mark string) string {
	out, _ := exec.Command("sh", "-c", "for p in $(pgrep -f "+mark+"); do echo $p $(cat /proc/$p/status | grep -E 'PPid|SigCgt|State' | tr '\\n' ' ') $(cat /proc/$p/cgroup | grep pids); done").CombinedOutput()
	return string(out)
}

// TestPtraceRefused: a command cannot trace another process of its
// sandbox (here bwrap's init, pid 1, which holds its tie to agentd's
// life) nor read or write another's memory: the seccomp filter answers
// EPERM.
func TestPtraceRefused(t *testing.T) {
	needBwrap(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the probe calls ptrace through its ctypes")
	}
	const probe = `import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(16, 1, None, None) == 0:
    print("ATTACHED")
    os.waitpid(1, 0x40000000)
    libc.ptrace(17, 1, None, None)
else:
    print("ptrace: " + os.strerror(ctypes.get_errno()))
buf = ctypes.create_string_buffer(8)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local, remote = iovec(ctypes.addressof(buf), 8), iovec(0x10000, 8)
libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
n = libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print("process_vm_readv:", os.strerror(ctypes.get_errno()) if n < 0 else n)
`
	r := run(t, &sandbox.Spec{Argv: []string{"python3", "-c", probe}})
	want := "ptrace: Operation not permitted\nprocess_vm_readv: Operation not permitted\n"
	if r.out != want {
		t.Errorf("in bwrap, a command traced or read pid 1: %+v %q; want %q", r.exit, r.out, want)
	}
}
