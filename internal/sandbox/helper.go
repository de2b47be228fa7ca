package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HelperArg is the first argument that makes agentd run as the sandbox's
// helper (RunHelperIfAsked).
const HelperArg = "__sandbox"

// helperFD is the descriptor the helper reads its config from.
const helperFD = 3

// helperConfig is what the helper is told on fd 3, as JSON.
type helperConfig struct {
	Argv       []string  `json:"argv"`  // what to execve; Argv[0] looked up in PATH of Env when it has no slash
	Env        []string  `json:"env"`   // the whole environment
	Procs      []string  `json:"procs"` // cgroup.procs files to join
	Rlimits    []rlimitV `json:"rlimits"`
	NoNewPrivs bool      `json:"no_new_privs"`
	Parent     int       `json:"parent"` // agentd's pid: the helper refuses to run once it is gone
	Files      int       `json:"files"`  // descriptors from helperFD+1 on that the command (bwrap) is given
}

type rlimitV struct {
	Resource int    `json:"resource"`
	Cur      uint64 `json:"cur"`
	Max      uint64 `json:"max"`
}

// RunHelperIfAsked runs the sandbox's helper and exits when os.Args[1] is
// HelperArg; else it returns at once. main and a TestMain that starts
// commands call it first thing.
func RunHelperIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != HelperArg {
		return
	}
	err := runHelper()
	fmt.Fprintf(os.Stderr, "agentd sandbox: %v\n", err)
	os.Exit(127)
}

// runHelper joins the cgroups, sets the limits and becomes the command;
// it returns only on failure.
func runHelper() error {
	// The parent-death signal and no-new-privileges belong to a thread,
	// not the process, and exec keeps only the calling thread's: the
	// goroutine stays on one thread, which sets both and execs. (The
	// death signal set at fork is the main thread's; exec from another
	// thread would drop it, and the command would outlive agentd.)
	runtime.LockOSThread()
	f := os.NewFile(helperFD, "sandbox-config")
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	var c helperConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if len(c.Argv) == 0 {
		return fmt.Errorf("config: no command")
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, p := range c.Procs {
		if err := os.WriteFile(p, pid, 0); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	for _, r := range c.Rlimits {
		// Never above the limit agentd already has: raising a hard limit
		// takes privileges agentd's user may not have.
		var old unix.Rlimit
		if unix.Getrlimit(r.Resource, &old) == nil {
			r.Max = min(r.Max, old.Max)
			r.Cur = min(r.Cur, r.Max)
		}
		if err := unix.Setrlimit(r.Resource, &unix.Rlimit{Cur: r.Cur, Max: r.Max}); err != nil {
			return fmt.Errorf("rlimit %d: %w", r.Resource, err)
		}
	}
	if c.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("no new privileges: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent-death signal: %w", err)
	}
	// The parent may be gone already: then the death signal never comes,
	// so do not run.
	if os.Getppid() != c.Parent {
		return fmt.Errorf("agentd ended before the command started")
	}
	if err := closeOnExecFrom(helperFD + 1 + c.Files); err != nil {
		return fmt.Errorf("close descriptors: %w", err)
	}
	path, err := lookPath(c.Argv[0], c.Env)
	if err != nil {
		return err
	}
	return fmt.Errorf("exec %s: %w", c.Argv[0], unix.Exec(path, c.Argv, c.Env))
}

// lookPath finds name in env's PATH as execvp would (os/exec's LookPath
// reads the helper's own environment, not the command's).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %s: not found in PATH", name)
}

// closeRangeCloexec is close_range(2)'s CLOSE_RANGE_CLOEXEC.
const closeRangeCloexec = 1 << 2

// closeOnExecFrom marks every descriptor from first on close-on-exec:
// one agentd inherited without it (from what started agentd) would
// otherwise reach the command, and in bwrap a directory of the host's
// tree leads out of the sandbox.
func closeOnExecFrom(first int) error {
	if unix.CloseRange(uint(first), ^uint(0), closeRangeCloexec) == nil {
		return nil
	}
	// A kernel before 5.11: one by one.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < first {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return err
		}
	}
	return nil
}
