package sandbox_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

// nobody is the user the unprivileged test runs the sandbox as.
const nobody = 65534

// TestAsUser runs the sandbox from a copy of this test binary running as
// nobody (uid 65534): bwrap then needs user namespaces, and the limits
// are rlimits (nobody may not make cgroups).
func TestAsUser(t *testing.T) {
	if os.Getenv("AGENTD_SANDBOX_USER") != "" {
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process as another user")
	}
	needBwrap(t)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "sandbox.test")
	copyFile(t, os.Args[0], bin)
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(bin, "-test.run=^TestSandboxAsUser$", "-test.v")
	cmd.Env = append(os.Environ(), "AGENTD_SANDBOX_USER="+ws)
	cmd.Dir = ws
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	err := cmd.Run()
	t.Logf("as uid %d:\n%s", nobody, out.String())
	switch {
	case strings.Contains(out.String(), "--- SKIP"):
		t.Skip("bwrap cannot run as an unprivileged user here (see the log)")
	case err != nil:
		t.Fatalf("as uid %d: %v", nobody, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxAsUser is TestAsUser's child, running as nobody.
func TestSandboxAsUser(t *testing.T) {
	ws := os.Getenv("AGENTD_SANDBOX_USER")
	if ws == "" {
		t.Skip("the child of TestAsUser")
	}
	if r := sandbox.New(nil).Probe(); !r.Runs {
		t.Skipf("bwrap does not run as uid %d: %s", os.Getuid(), r.Problem)
	}
	spec := func(argv ...string) *sandbox.Spec {
		return &sandbox.Spec{Workspace: ws, Mode: agent.SandboxBwrap, Argv: argv}
	}
	if r := run(t, spec("sh", "-c", "echo ok > mine && cat mine && id -u")); r.exit.Code != 0 || !strings.Contains(r.out, "ok") {
		t.Fatalf("control: a command as uid %d in its workspace: %+v %q", os.Getuid(), r.exit, r.out)
	}
	if r := run(t, spec("cat", "/etc/shadow")); r.exit.Code == 0 {
		t.Errorf("cat /etc/shadow as a user in bwrap: %+v %q", r.exit, r.out)
	}
	if r := run(t, spec("sh", "-c", "echo pwned > /agentd-attack; echo pwned > /usr/agentd-attack")); true {
		for _, f := range []string{"/agentd-attack", "/usr/agentd-attack"} {
			if _, err := os.Stat(f); err == nil {
				t.Errorf("as a user in bwrap a command wrote %s (%q)", f, r.out)
			}
		}
	}
	if r := run(t, spec("grep", "NoNewPrivs", "/proc/self/status")); !strings.Contains(r.out, "NoNewPrivs:\t1") {
		t.Errorf("as a user: %q; want NoNewPrivs 1", r.out)
	}
	// Without a cgroup memory is RLIMIT_AS of each process.
	hog := `x=$(head -c %d /dev/zero | tr '\0' a); echo ${#x}`
	sp := spec("sh", "-c", fmt.Sprintf(hog, 1<<20))
	sp.Limits = agent.Limits{Memory: 64 << 20}
	if r := run(t, sp); r.exit.Code != 0 || !strings.Contains(r.out, "1048576") {
		t.Errorf("control: as a user, 1 MiB under a memory limit of 64 MiB: %+v %q", r.exit, r.out)
	}
	sp = spec("sh", "-c", fmt.Sprintf(hog, 512<<20))
	sp.Limits = agent.Limits{Memory: 64 << 20}
	if r := run(t, sp); r.exit.Code == 0 || strings.Contains(r.out, "536870912") {
		t.Errorf("as a user, 512 MiB under a memory limit of 64 MiB: %+v %q; want it stopped", r.exit, r.out)
	}
	// Without a cgroup the file size limit is an rlimit: it holds as well.
	l := agent.Limits{FileSize: 1 << 20}
	sp = spec("dd", "if=/dev/zero", "of=big", "bs=64K", "count=64")
	sp.Limits = l
	if r := run(t, sp); r.exit.Reason != sandbox.ReasonFileSize {
		t.Errorf("as a user, 4 MiB under a file size limit of 1 MiB: %+v %q", r.exit, r.out)
	}
}
