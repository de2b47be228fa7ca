package sandbox_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

// modes are the modes a limit test runs in: none always, bwrap where it
// is installed.
func modes(t *testing.T, f func(t *testing.T, mode string)) {
	for _, mode := range []string{agent.SandboxNone, agent.SandboxBwrap} {
		t.Run(mode, func(t *testing.T) {
			if mode == agent.SandboxBwrap {
				needBwrap(t)
			}
			f(t, mode)
		})
	}
}

// cgroups reports whether this machine bounds memory and processes with a
// cgroup (Probe); without one they are rlimits, weaker as root.
func cgroups() bool { return probe().Cgroup != "none" }

func TestLimitProcesses(t *testing.T) {
	if !cgroups() {
		t.Skip("no cgroup agentd may make here: processes are RLIMIT_NPROC, which counts every process of the user (and does not bind root), so no bound of a command alone can be checked")
	}
	modes(t, func(t *testing.T, mode string) {
		l := agent.Limits{Processes: 24}
		many := "for i in $(seq %d); do sleep 30 & done; echo started"
		if r := run(t, &sandbox.Spec{Mode: mode, Limits: l, Argv: sh(fmt.Sprintf(many, 4))}); r.exit.Code != 0 || !strings.Contains(r.out, "started") {
			t.Fatalf("control: 4 processes under a limit of 24: %+v %q", r.exit, r.out)
		}
		r := run(t, &sandbox.Spec{Mode: mode, Limits: l, Argv: sh(fmt.Sprintf(many, 200))})
		if strings.Contains(r.out, "started") || r.exit.Reason != sandbox.ReasonProcesses {
			t.Errorf("200 processes under a limit of 24: %+v %q; want refused, reason processes", r.exit, r.out)
		}
		// A fork bomb ends, and all of it: its forks fail past the limit, it
		// is killed at its timeout or with its first process, and Run
		// (which removes the cgroup once it is empty) returns.
		r = run(t, &sandbox.Spec{Mode: mode, Limits: l, Timeout: 3 * time.Second, Argv: []string{"bash", "-c", "b() { b | b; }; b"}})
		if r.exit.Reason != sandbox.ReasonProcesses && r.exit.Reason != sandbox.ReasonTimeout && !strings.Contains(r.out, "Resource temporarily unavailable") {
			t.Errorf("fork bomb: %+v %q; want it bounded by the processes limit", r.exit, r.out)
		}
	})
}

func TestLimitMemory(t *testing.T) {
	modes(t, func(t *testing.T, mode string) {
		l := agent.Limits{Memory: 64 << 20}
		hog := `x=$(head -c %d /dev/zero | tr '\0' a); echo ${#x}`
		if r := run(t, &sandbox.Spec{Mode: mode, Limits: l, Argv: sh(fmt.Sprintf(hog, 1<<20))}); r.exit.Code != 0 || !strings.Contains(r.out, "1048576") {
			t.Fatalf("control: 1 MiB under a limit of 64 MiB: %+v %q", r.exit, r.out)
		}
		r := run(t, &sandbox.Spec{Mode: mode, Limits: l, Argv: sh(fmt.Sprintf(hog, 512<<20))})
		if r.exit.Code == 0 || strings.Contains(r.out, "536870912") {
			t.Fatalf("512 MiB under a limit of 64 MiB: %+v %q; want it stopped", r.exit, r.out)
		}
		if cgroups() && r.exit.Reason != sandbox.ReasonMemory {
			t.Errorf("512 MiB in a cgroup of 64 MiB: %+v; want reason memory", r.exit)
		}
	})
}

func TestLimitFileSize(t *testing.T) {
	modes(t, func(t *testing.T, mode string) {
		ws := t.TempDir()
		l := agent.Limits{FileSize: 1 << 20}
		dd := func(mib int) []string {
			return []string{"dd", "if=/dev/zero", "of=big", "bs=64K", fmt.Sprint("count=", mib*16)}
		}
		if r := run(t, &sandbox.Spec{Mode: mode, Workspace: ws, Limits: l, Argv: []string{"dd", "if=/dev/zero", "of=small", "bs=64K", "count=8"}}); r.exit.Code != 0 {
			t.Fatalf("control: 512 KiB under a limit of 1 MiB: %+v %q", r.exit, r.out)
		}
		r := run(t, &sandbox.Spec{Mode: mode, Workspace: ws, Limits: l, Argv: dd(1024)})
		if r.exit.Reason != sandbox.ReasonFileSize {
			t.Errorf("1 GiB under a file size limit of 1 MiB: %+v %q; want reason file_size", r.exit, r.out)
		}
		if fi, err := os.Stat(filepath.Join(ws, "big")); err != nil || fi.Size() > 1<<20 {
			t.Errorf("the file written: %v %v; want at most 1 MiB", fi, err)
		}
	})
}

func TestLimitDisk(t *testing.T) {
	modes(t, func(t *testing.T, mode string) {
		ws := t.TempDir()
		// Many files of 1 MiB, each under the file size limit, without end:
		// only the disk watch stops it.
		fill := `i=0; while :; do dd if=/dev/zero of=f$i bs=64K count=16 2>/dev/null || exit 9; i=$((i+1)); done`
		r := run(t, &sandbox.Spec{Mode: mode, Workspace: ws, Limits: agent.Limits{Disk: 32 << 20}, Argv: sh(fill)})
		if r.exit.Reason != sandbox.ReasonDisk {
			t.Errorf("filling the disk under a limit of 32 MiB: %+v %q; want reason disk", r.exit, r.out)
		}
		entries, _ := os.ReadDir(ws)
		if len(entries) == 0 {
			t.Errorf("control: the command wrote nothing before it was stopped")
		}
	})
}

// running reports whether a process whose command line holds mark runs
// (zombies have no command line).
func running(mark string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), mark) {
			return true
		}
	}
	return false
}

// gone waits until no process holds mark, at most a minute (a bound for a
// failing test, not a timing assertion).
func gone(t *testing.T, mark string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !running(mark) {
			return
		}
	}
	t.Errorf("a process running %q is still there", mark)
}

// initWaits waits, at most a minute, until bwrap's init for the command
// holding mark waits for its children (its wchan is do_wait).
func initWaits(mark string) {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if !strings.HasSuffix(strings.SplitN(string(b), "\x00", 2)[0], "bwrap") || !strings.Contains(string(b), mark) {
				continue
			}
			if w, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "wchan")); string(w) == "do_wait" {
				return
			}
		}
	}
}

// sleepMark is an argument of sleep no other process has.
func sleepMark(t *testing.T) string {
	return fmt.Sprintf("3000.%d", time.Now().UnixNano()%1e9)
}

func TestTimeoutKillsTree(t *testing.T) {
	modes(t, func(t *testing.T, mode string) {
		mark := sleepMark(t)
		// A grandchild, and one in a session of its own: the cgroup or
		// bwrap's namespace takes it. In mode none without a cgroup only
		// the process group is killed, which a new session leaves
		// (docs/tools.md says so), so that case is not run there.
		script := "(sleep %[1]s &); setsid sleep %[1]s & sleep %[1]s; wait"
		if mode == agent.SandboxNone && !cgroups() {
			script = "(sleep %[1]s &); sleep %[1]s; wait"
		}
		r := run(t, &sandbox.Spec{Mode: mode, Timeout: time.Second, Argv: sh(fmt.Sprintf(script, mark))})
		if r.exit.Reason != sandbox.ReasonTimeout || r.exit.Signal != "killed" {
			t.Errorf("exit = %+v; want killed at its timeout", r.exit)
		}
		gone(t, mark)
	})
}

func TestKill(t *testing.T) {
	modes(t, func(t *testing.T, mode string) {
		mark := sleepMark(t)
		s := sandbox.New(nil)
		p, err := s.Start(context.Background(), &sandbox.Spec{Mode: mode, Workspace: t.TempDir(),
			Limits: agent.Limits{}.WithDefaults(), Argv: sh(fmt.Sprintf("sleep %s & sleep %s", mark, mark))})
		if err != nil {
			t.Fatal(err)
		}
		for !running(mark) {
			time.Sleep(10 * time.Millisecond)
		}
		p.Kill()
		e, err := p.Wait()
		if err != nil || e.Reason != sandbox.ReasonKilled {
			t.Errorf("Wait after Kill = %+v, %v; want reason killed", e, err)
		}
		gone(t, mark)
	})
}

// TestDieWithParent kills the process that started a command (a copy of
// this test binary) and checks the command is gone with it: in bwrap its
// whole tree, in mode none the command itself (its own children may
// outlive a crash of agentd there: docs/tools.md says so).
func TestDieWithParent(t *testing.T) {
	if os.Getenv("AGENTD_SANDBOX_PARENT") != "" {
		return // the child's run of this test is the parent below
	}
	modes(t, func(t *testing.T, mode string) {
		mark := sleepMark(t)
		cmd := exec.Command(os.Args[0], "-test.run=^TestSandboxParent$")
		cmd.Env = append(os.Environ(), "AGENTD_SANDBOX_PARENT="+mode+" "+t.TempDir()+" "+mark)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if !strings.HasPrefix(line, "started") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the parent said %q", line)
		}
		for !running(mark) {
			time.Sleep(10 * time.Millisecond)
		}
		if mode == agent.SandboxBwrap {
			// bwrap's init binds itself to its parent's life just before
			// it waits for the command; until then its parent's death goes
			// unnoticed (bubblewrap's window, docs/tools.md).
			initWaits(mark)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		gone(t, mark)
	})
}

// TestSandboxParent is the parent process of TestDieWithParent: it starts
// a command, says so, and waits to be killed.
func TestSandboxParent(t *testing.T) {
	env := os.Getenv("AGENTD_SANDBOX_PARENT")
	if env == "" {
		t.Skip("the parent process of TestDieWithParent")
	}
	f := strings.Fields(env)
	argv := sh(fmt.Sprintf("sleep %s & sleep %s", f[2], f[2]))
	if f[0] == agent.SandboxNone {
		argv = []string{"sleep", f[2]}
	}
	_, err := sandbox.New(nil).Start(context.Background(), &sandbox.Spec{Mode: f[0], Workspace: f[1],
		Limits: agent.Limits{}.WithDefaults(), Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("started")
	time.Sleep(time.Hour)
}

func TestLimitCPU(t *testing.T) {
	modes(t, func(t *testing.T, mode string) {
		l := agent.Limits{CPU: agent.Duration(time.Second)}
		if r := run(t, &sandbox.Spec{Mode: mode, Limits: l, Argv: sh("i=0; while [ $i -lt 1000 ]; do i=$((i+1)); done; echo done")}); r.exit.Code != 0 || !strings.Contains(r.out, "done") {
			t.Fatalf("control: a short loop under a CPU limit of 1s: %+v %q", r.exit, r.out)
		}
		r := run(t, &sandbox.Spec{Mode: mode, Limits: l, Argv: sh("while :; do :; done")})
		if r.exit.Reason != sandbox.ReasonCPU {
			t.Errorf("an endless loop under a CPU limit of 1s: %+v %q; want reason cpu", r.exit, r.out)
		}
	})
}

func TestOpenFiles(t *testing.T) {
	modes(t, func(t *testing.T, mode string) {
		var l unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &l); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint(min(4096, l.Max)) // never above agentd's own hard limit
		if r := run(t, &sandbox.Spec{Mode: mode, Argv: sh("ulimit -n")}); strings.TrimSpace(r.out) != want {
			t.Errorf("ulimit -n = %q, want %s", r.out, want)
		}
	})
}
