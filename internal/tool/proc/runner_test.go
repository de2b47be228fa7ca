package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentd/internal/agent"
)

// execRunner runs commands over os/exec as the sandbox's mode none does:
// in Dir, with a minimal environment and Env, in their own process group
// killed whole on Kill, timeout or cancel. It tests the package without
// the sandbox.
type execRunner struct{}

func (execRunner) Describe(mode string, network bool) string {
	if mode == agent.SandboxNone {
		return "none"
	}
	if network {
		return "bwrap, network"
	}
	return "bwrap, no network"
}

type execProc struct {
	cmd     *exec.Cmd
	start   time.Time
	timeout time.Duration
	killed  chan struct{} // closed by Kill
	done    chan struct{} // closed when the command ended
	mu      sync.Mutex
	reason  string // why watch killed it
}

func (execRunner) Start(ctx context.Context, sp *Spec) (Process, error) {
	cmd := exec.Command(sp.Argv[0], sp.Argv[1:]...)
	cmd.Dir = sp.Dir
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + sp.Workspace, "LANG=C.UTF-8", "TERM=dumb", "TMPDIR=" + os.TempDir()}, sp.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sp.Stdin, sp.Stdout, sp.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &execProc{cmd: cmd, start: time.Now(), timeout: sp.Timeout, killed: make(chan struct{}), done: make(chan struct{})}
	go p.watch(ctx)
	return p, nil
}

// watch kills the group on Kill, timeout or ctx's end; it ends with the
// command.
func (p *execProc) watch(ctx context.Context) {
	var timeout <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		timeout = t.C
	}
	reason := "killed"
	select {
	case <-p.done:
		return
	case <-p.killed:
	case <-timeout:
		reason = "timeout"
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.reason = reason
	p.mu.Unlock()
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // gone already
}

func (p *execProc) Kill() {
	select {
	case <-p.killed:
	default:
		close(p.killed)
	}
}

func (p *execProc) Wait() (Exit, error) {
	err := p.cmd.Wait()
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // what the command left running dies with it
	close(p.done)
	e := Exit{Code: p.cmd.ProcessState.ExitCode(), Wall: time.Since(p.start), Mode: agent.SandboxNone}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		e.Signal = "killed"
		if ws.Signal() != syscall.SIGKILL {
			e.Signal = ws.Signal().String()
		}
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return e, err
	}
	if e.Signal != "" {
		p.mu.Lock()
		e.Reason = p.reason
		p.mu.Unlock()
	}
	return e, nil
}

// dirWorkspace is a workspace over a folder, for the tests: HostDir
// refuses what leaves it lexically or by a symlink.
type dirWorkspace string

func (d dirWorkspace) Dir() string { return string(d) }

func (d dirWorkspace) HostDir(rel string) (string, error) {
	if filepath.IsAbs(rel) {
		return "", errors.New("outside the workspace")
	}
	p, err := filepath.EvalSymlinks(filepath.Join(string(d), rel))
	if err != nil {
		return "", err
	}
	r, err := filepath.Rel(string(d), p)
	if err != nil || r == ".." || len(r) > 2 && r[:3] == "../" {
		return "", errors.New("outside the workspace")
	}
	if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
		return "", errors.New("not a directory")
	}
	return p, nil
}

func newTestWorkspace(t *testing.T) dirWorkspace {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dirWorkspace(d)
}
