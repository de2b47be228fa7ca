package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"agentd/internal/agent"
)

// Process is a started command.
//
// Its goroutines (the waiter, the deadline, the disk watch, the output
// copiers) end when the command ends; the stdin copier ends when Stdin's
// Read returns after that.
type Process struct {
	proc  *os.Process
	mode  string
	group *group // nil: no cgroup, limits are rlimits
	began time.Time
	copy  sync.WaitGroup // output copiers
	done  chan struct{}  // closed when the command and its output are done

	// mu guards reason and reaped, and is held while signalling so the
	// helper's pid (its process group's id) is not reaped, and perhaps
	// reused, between the check and the kill.
	mu     sync.Mutex
	reason string // why agentd ended it; the first one stays
	reaped bool   // the helper is reaped: its pid means nothing any more

	exit Exit
	err  error
}

// Start starts the command of sp. The command ends by itself, at
// sp.Timeout, when ctx ends, or by Kill; Wait says how.
func (s *Sandbox) Start(ctx context.Context, sp *Spec) (*Process, error) {
	dir, err := checkSpec(sp)
	if err != nil {
		return nil, err
	}
	mode, bwrap, err := s.resolve(sp.Mode)
	if err != nil {
		return nil, err
	}
	l := sp.Limits.WithDefaults()
	spec := *sp
	spec.Limits = l
	argv := spec.Argv
	var extra []*os.File // the helper's descriptors from helperFD+1 on, which bwrap inherits
	if mode == agent.SandboxBwrap {
		fds, files, done, err := bwrapFiles(&spec, helperFD+1)
		if err != nil {
			return nil, err
		}
		defer done()
		extra = files
		argv = append([]string{bwrap}, bwrapArgs(&spec, dir, s.isRoot, fds)...)
	}
	g, err := s.cg.create(l)
	if err != nil {
		s.o.Logger.Warn("sandbox: no cgroup, limits are rlimits", "err", err)
	}
	cfg := helperConfig{
		Argv:       argv,
		Env:        environ(&spec, dir),
		Rlimits:    rlimits(l, g != nil),
		NoNewPrivs: true,
		Parent:     os.Getpid(),
		Files:      len(extra),
	}
	if g != nil {
		cfg.Procs = g.procs()
	}
	p := &Process{mode: mode, group: g, done: make(chan struct{})}
	if err := p.start(s.o.Helper, dir, &spec, &cfg, extra); err != nil {
		if g != nil {
			g.remove()
		}
		return nil, err
	}
	go p.wait()
	go p.watch(ctx, spec.Timeout)
	go p.watchDisk(spec.Workspace, int64(l.Disk), s.o.DiskEvery)
	return p, nil
}

// checkSpec validates sp and returns the working directory.
func checkSpec(sp *Spec) (string, error) {
	if len(sp.Argv) == 0 || sp.Argv[0] == "" {
		return "", fmt.Errorf("%w: no command", ErrSpec)
	}
	if !filepath.IsAbs(sp.Workspace) {
		return "", fmt.Errorf("%w: workspace %q is not an absolute path", ErrSpec, sp.Workspace)
	}
	dir := sp.Dir
	if dir == "" {
		dir = sp.Workspace
	}
	rel, err := filepath.Rel(sp.Workspace, dir)
	if err != nil || !filepath.IsAbs(dir) || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%w: working directory %q is outside the workspace", ErrSpec, sp.Dir)
	}
	return dir, nil
}

// rlimits are the helper's limits; with a cgroup, memory and processes
// are the cgroup's.
func rlimits(l agent.Limits, cgroup bool) []rlimitV {
	cpu := uint64(time.Duration(l.CPU).Seconds())
	if cpu == 0 {
		cpu = 1
	}
	r := []rlimitV{
		// SIGXCPU at the limit, SIGKILL a second later for one that ignores it.
		{unix.RLIMIT_CPU, cpu, cpu + 1},
		{unix.RLIMIT_FSIZE, uint64(l.FileSize), uint64(l.FileSize)},
		{unix.RLIMIT_NOFILE, 4096, 4096},
	}
	if !cgroup {
		r = append(r,
			rlimitV{unix.RLIMIT_AS, uint64(l.Memory), uint64(l.Memory)},
			rlimitV{unix.RLIMIT_NPROC, uint64(l.Processes), uint64(l.Processes)})
	}
	return r
}

// start starts the helper with its config on fd 3, the command's
// standard files and extra from fd 4 on.
func (p *Process) start(helper []string, dir string, sp *Spec, cfg *helperConfig, extra []*os.File) error {
	cr, cw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("sandbox: %w", err)
	}
	defer cr.Close()
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
	}()
	stdin, err := p.input(sp.Stdin, &closeAfter)
	if err != nil {
		cw.Close()
		return err
	}
	stdout, err := p.output(sp.Stdout, &closeAfter)
	if err != nil {
		cw.Close()
		return err
	}
	stderr := stdout
	if sp.Stderr != sp.Stdout {
		if stderr, err = p.output(sp.Stderr, &closeAfter); err != nil {
			cw.Close()
			return err
		}
	}
	p.began = time.Now()
	p.proc, err = os.StartProcess(helper[0], helper, &os.ProcAttr{
		Dir:   dir,
		Env:   cfg.Env,
		Files: append([]*os.File{stdin, stdout, stderr, cr}, extra...),
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		cw.Close()
		return fmt.Errorf("sandbox: start helper: %w", err)
	}
	b, _ := json.Marshal(cfg)
	_, err = cw.Write(b)
	cw.Close()
	if err != nil {
		p.proc.Kill()
		return fmt.Errorf("sandbox: configure helper: %w", err)
	}
	return nil
}

// input returns the file the command reads as stdin.
func (p *Process) input(r io.Reader, closeAfter *[]*os.File) (*os.File, error) {
	if f, ok := r.(*os.File); ok {
		return f, nil
	}
	if r == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		*closeAfter = append(*closeAfter, f)
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	*closeAfter = append(*closeAfter, pr)
	go func() {
		io.Copy(pw, r)
		pw.Close()
	}()
	return pr, nil
}

// output returns the file the command writes to for w.
func (p *Process) output(w io.Writer, closeAfter *[]*os.File) (*os.File, error) {
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	if w == nil {
		w = io.Discard
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	*closeAfter = append(*closeAfter, pw)
	p.copy.Add(1)
	go func() {
		defer p.copy.Done()
		defer pr.Close()
		io.Copy(w, pr)
	}()
	return pw, nil
}

// Pid is the helper's process id: bwrap's, or the command's in mode none.
func (p *Process) Pid() int { return p.proc.Pid }

// Kill kills the whole command: its cgroup, its process group and the
// process agentd started.
func (p *Process) Kill() { p.kill(ReasonKilled) }

func (p *Process) kill(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return // it ended; what it left was killed then
	}
	if p.reason == "" {
		p.reason = reason
	}
	p.killAll()
}

// killAll kills the cgroup and the process group; p.mu is held.
func (p *Process) killAll() {
	if p.group != nil {
		p.group.kill()
	}
	syscall.Kill(-p.proc.Pid, syscall.SIGKILL)
	syscall.Kill(p.proc.Pid, syscall.SIGKILL)
}

// watch ends the command at its timeout or when ctx ends.
func (p *Process) watch(ctx context.Context, timeout time.Duration) {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-p.done:
	case <-expired:
		p.kill(ReasonTimeout)
	case <-ctx.Done():
		p.kill(ReasonKilled)
	}
}

// Wait waits for the command and its output, and says how it ended.
func (p *Process) Wait() (Exit, error) {
	<-p.done
	return p.exit, p.err
}

// wait reaps the command, kills what it left behind, lets its output
// drain and records the exit.
func (p *Process) wait() {
	// Wait for the end without reaping: while the helper is a zombie its
	// pid, which is its process group's id, cannot be reused.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.proc.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	wall := time.Since(p.began)
	// A command's processes do not outlive it: what it left running (in
	// mode none; bwrap's namespace already took them) would hold its
	// output open.
	p.mu.Lock()
	p.killAll()
	p.reaped = true
	p.mu.Unlock()
	state, err := p.proc.Wait()
	p.copy.Wait()
	if err != nil {
		p.err = fmt.Errorf("sandbox: wait: %w", err)
	} else {
		p.exit = p.decode(state)
		p.exit.Wall = wall
	}
	if p.group != nil {
		if err := p.group.remove(); err != nil {
			p.err = fmt.Errorf("sandbox: remove cgroup: %w", err)
		}
	}
	close(p.done)
}

// decode turns the helper's wait status into an Exit. bwrap reports a
// command killed by signal n as exit code 128+n, as shells do, so in mode
// bwrap such a code is read as that signal.
func (p *Process) decode(state *os.ProcessState) Exit {
	e := Exit{Code: state.ExitCode(), Mode: p.mode}
	ws, _ := state.Sys().(syscall.WaitStatus)
	var sig syscall.Signal
	switch {
	case ws.Signaled():
		sig = ws.Signal()
	case p.mode == agent.SandboxBwrap && e.Code > 128 && e.Code < 128+65:
		sig = syscall.Signal(e.Code - 128)
	}
	if sig != 0 {
		e.Code, e.Signal = -1, sig.String()
	}
	p.mu.Lock()
	e.Reason = p.reason
	p.mu.Unlock()
	if e.Reason != "" {
		return e
	}
	var memory, processes bool
	if p.group != nil {
		memory, processes = p.group.hit()
	}
	switch {
	case memory:
		e.Reason = ReasonMemory
	case sig == syscall.SIGXCPU:
		e.Reason = ReasonCPU
	case sig == syscall.SIGXFSZ:
		e.Reason = ReasonFileSize
	case processes && e.Code != 0:
		e.Reason = ReasonProcesses
	}
	return e
}
