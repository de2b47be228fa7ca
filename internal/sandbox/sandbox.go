// Package sandbox runs one command of an agent confined: in bubblewrap
// (a read-only allowlist of the host, the workspace read-write, a private
// /tmp, /proc's kernel-facing parts read-only, no user namespace of its
// own, a seccomp filter, no network unless asked), with its resources
// bounded by a cgroup where agentd may make one and by rlimits otherwise,
// and with a watch on the disk it fills. Every command starts through a
// helper, agentd itself re-run as "agentd __sandbox", which puts itself in
// the command's cgroup and sets the limits before it becomes the command
// (or bwrap), so every process of the command is bounded from its first
// instruction.
//
// A crash of agentd leaves no command running: the helper carries
// PR_SET_PDEATHSIG and bwrap --die-with-parent, so the whole tree is killed
// with agentd. What escapes that (bwrap's init binds itself to its parent a
// moment after it starts the command; mode none's background children) is
// left in its cgroup, which the next New kills and removes.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"agentd/internal/agent"
)

// ErrUnavailable is returned by Start when the agent's mode needs
// bubblewrap and agentd cannot find or run it.
var ErrUnavailable = errors.New("sandbox: bubblewrap (bwrap) is not available; install it " +
	"(Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap; " +
	"Alpine: apk add bubblewrap) or set the agent's sandbox: none to run commands without it")

// ErrSpec is returned by Start for a Spec it cannot run (no argv, no
// workspace, a working directory outside the workspace, an unknown mode).
var ErrSpec = errors.New("sandbox: bad command")

// Exit reasons (Exit.Reason): why a command ended other than by itself.
const (
	ReasonTimeout   = "timeout"
	ReasonCPU       = "cpu"
	ReasonMemory    = "memory"
	ReasonProcesses = "processes"
	ReasonFileSize  = "file_size"
	ReasonDisk      = "disk"
	ReasonKilled    = "killed"
)

// Spec is one command to run.
type Spec struct {
	Argv      []string
	Dir       string // host path of the working directory (inside Workspace)
	Workspace string // host path bound read-write
	// WorkspaceFD, when set, is an open directory of Workspace (O_PATH
	// or O_RDONLY|O_DIRECTORY; the caller's, left open): bwrap binds the
	// directory it holds at Workspace, so the path swapped for a symlink
	// or another folder after it was opened changes nothing. Unset, bwrap
	// binds the path.
	WorkspaceFD *os.File
	Env         []string // KEY=value, besides the minimal set the sandbox sets
	Mode        string   // agent.SandboxBwrap | SandboxAuto | SandboxNone
	Network     bool
	Limits      agent.Limits // WithDefaults applied by the caller
	Timeout     time.Duration
	Stdin       io.Reader // nil: /dev/null
	Stdout      io.Writer
	Stderr      io.Writer
}

// Exit is how a command ended.
type Exit struct {
	Code   int    // -1 when killed by a signal
	Signal string // "killed", "" ...
	Reason string // "" | "timeout" | "cpu" | "memory" | "processes" | "file_size" | "disk" | "killed"
	Wall   time.Duration
	Mode   string // the mode that ran: bwrap or none
}

// Options configure a Sandbox.
type Options struct {
	// Bwrap is the bubblewrap binary (default: "bwrap" looked up in PATH
	// when the first command needs it).
	Bwrap string
	// Helper is the command that runs the helper (default
	// [/proc/self/exe, __sandbox]); its program must call
	// RunHelperIfAsked first thing.
	Helper []string
	// CgroupRoot is where the cgroup file systems are mounted (default
	// /sys/fs/cgroup).
	CgroupRoot string
	// DiskEvery is how often the disk watch looks at the workspace's
	// file system (default 100ms).
	DiskEvery time.Duration
	// Logger receives what the sandbox could not do (default: discard).
	Logger *slog.Logger
}

// Sandbox starts commands. It is safe for concurrent use.
type Sandbox struct {
	o      Options
	cg     cgroups
	isRoot bool
}

// New returns a Sandbox.
func New(o *Options) *Sandbox {
	s := &Sandbox{}
	if o != nil {
		s.o = *o
	}
	if len(s.o.Helper) == 0 {
		s.o.Helper = []string{"/proc/self/exe", HelperArg}
	}
	if s.o.CgroupRoot == "" {
		s.o.CgroupRoot = "/sys/fs/cgroup"
	}
	if s.o.DiskEvery <= 0 {
		s.o.DiskEvery = 100 * time.Millisecond
	}
	if s.o.Logger == nil {
		s.o.Logger = slog.New(slog.DiscardHandler)
	}
	s.cg = detectCgroups(s.o.CgroupRoot)
	s.isRoot = isRoot()
	return s
}

// Sweep kills and removes the cgroups an agentd that is gone left behind
// (a command that outlived a crash of agentd in the moment before
// bubblewrap tied it to its parent). agentd serve calls it once at start;
// agentd doctor, which changes nothing, does not.
func (s *Sandbox) Sweep() { s.cg.sweep(s.o.Logger.Warn) }

// bwrapPath returns the bubblewrap binary or ErrUnavailable.
func (s *Sandbox) bwrapPath() (string, error) {
	name := s.o.Bwrap
	if name == "" {
		name = "bwrap"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", ErrUnavailable, err)
	}
	return p, nil
}

// resolve turns a Spec's mode into the mode that runs and, for bwrap, the
// binary.
func (s *Sandbox) resolve(mode string) (run, bwrap string, err error) {
	switch mode {
	case agent.SandboxNone:
		return agent.SandboxNone, "", nil
	case agent.SandboxBwrap, "":
		p, err := s.bwrapPath()
		if err != nil {
			return "", "", err
		}
		return agent.SandboxBwrap, p, nil
	case agent.SandboxAuto:
		if p, err := s.bwrapPath(); err == nil {
			return agent.SandboxBwrap, p, nil
		}
		return agent.SandboxNone, "", nil
	}
	return "", "", fmt.Errorf("%w: unknown sandbox mode %q (want one of %v)", ErrSpec, mode, agent.SandboxModes)
}

// Describe names how a command of mode and network runs, for approval
// cards: "bwrap, no network", "bwrap, network" or "none".
func (s *Sandbox) Describe(mode string, network bool) string {
	run, _, err := s.resolve(mode)
	if err != nil {
		return "bwrap (unavailable)"
	}
	if run == agent.SandboxNone {
		return "none"
	}
	if network {
		return "bwrap, network"
	}
	return "bwrap, no network"
}

// Run starts the command of sp and waits for it.
func (s *Sandbox) Run(ctx context.Context, sp *Spec) (Exit, error) {
	p, err := s.Start(ctx, sp)
	if err != nil {
		return Exit{}, err
	}
	return p.Wait()
}
