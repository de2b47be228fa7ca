package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"agentd/internal/agent"
)

// MinBwrap is the oldest bubblewrap agentd runs commands with: the first
// with --disable-userns and --bind-fd.
const MinBwrap = "0.8.0"

// Report is what Probe found: whether commands can run in bubblewrap and
// how each limit holds.
type Report struct {
	Bwrap   string // the bubblewrap binary; "" when not found
	Version string // its --version line
	// Runs says bwrap starts a sandbox here (as root, or as a user with
	// user namespaces); Problem says why not.
	Runs    bool
	Problem string
	Cgroup  string            // "v2", "v1" or "none"
	Limits  map[string]string // limit → how it holds: "cgroup", "rlimit", "watch", "tmpfs", "none"
}

// Probe looks at this machine: bubblewrap, user namespaces, cgroups.
func (s *Sandbox) Probe() Report {
	r := Report{Cgroup: s.cg.version, Limits: map[string]string{
		"cpu":       "rlimit",
		"file_size": "rlimit",
		"disk":      "watch",
		"tmp":       "tmpfs",
		"memory":    "rlimit",
		"processes": "rlimit",
	}}
	if s.cg.version != cgroupNone {
		r.Limits["memory"], r.Limits["processes"] = "cgroup", "cgroup"
	} else if isRoot() {
		r.Limits["processes"] = "none" // RLIMIT_NPROC does not bind root
	}
	p, err := s.bwrapPath()
	if err != nil {
		r.Problem = "bubblewrap is not installed"
		r.Limits["tmp"] = "none"
		return r
	}
	r.Bwrap = p
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, p, "--version").Output(); err == nil {
		r.Version = strings.TrimSpace(string(out))
	}
	ws, err := os.MkdirTemp("", "agentd-probe-")
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	defer os.Remove(ws)
	sp := &Spec{Argv: []string{"true"}, Workspace: ws, Limits: agent.Limits{}.WithDefaults()}
	fds, files, done, err := bwrapFiles(sp, 3)
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	defer done()
	cmd := exec.CommandContext(ctx, p, bwrapArgs(sp, ws, isRoot(), fds)...)
	cmd.Env = environ(sp, ws)
	cmd.ExtraFiles = files
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.Problem = fmt.Sprintf("bwrap cannot make a sandbox here (%v: %s); as a user it needs user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)", err, strings.TrimSpace(string(out)))
		if strings.Contains(string(out), "Unknown option") {
			r.Problem = fmt.Sprintf("bwrap is older than agentd needs (%s); agentd needs bubblewrap %s or later", strings.TrimSpace(string(out)), MinBwrap)
		}
		return r
	}
	r.Runs = true
	return r
}

// String is the report in a few lines, for agentd doctor.
func (r Report) String() string {
	var b strings.Builder
	switch {
	case r.Runs:
		fmt.Fprintf(&b, "bubblewrap: %s (%s), sandboxes run\n", r.Bwrap, r.Version)
	case r.Bwrap != "":
		fmt.Fprintf(&b, "bubblewrap: %s (%s), but %s\n", r.Bwrap, r.Version, r.Problem)
	default:
		fmt.Fprintf(&b, "bubblewrap: not installed; %s\n", ErrUnavailable.Error())
	}
	fmt.Fprintf(&b, "cgroup: %s (uid %d)\n", r.Cgroup, os.Geteuid())
	for _, k := range []string{"cpu", "memory", "processes", "file_size", "disk", "tmp"} {
		fmt.Fprintf(&b, "limit %s: %s\n", k, r.Limits[k])
	}
	return b.String()
}
