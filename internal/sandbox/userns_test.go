package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/sandbox"
)

// TestAttackUserNamespaceInside: a command in bwrap makes a user
// namespace of its own and holds every capability in it (and a network
// namespace it administers). That is not a way out by itself, but it is
// the way most container escapes of recent years began (nf_tables,
// overlayfs, io_uring bugs reachable only with CAP_NET_ADMIN or
// CAP_SYS_ADMIN in a namespace). agentd gives bwrap --unshare-user
// --disable-userns: the sandbox's user namespace allows no other, and
// unshare fails (ENOSPC).
func TestAttackUserNamespaceInside(t *testing.T) {
	needBwrap(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the probe unshares in a single-threaded process, before any exec drops what it gained")
	}
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "u.py"), []byte(usernsProbe), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, &sandbox.Spec{Workspace: ws, Argv: []string{"python3", "u.py"}})
	t.Logf("%+v %q", r.exit, r.out)
	if strings.Contains(r.out, "USERNS") || !strings.Contains(r.out, "unshare failed") {
		t.Errorf("in bwrap, a command made a user namespace with all capabilities: %q; want unshare to fail", r.out)
	}
}

// usernsProbe unshares a user and a network namespace and brings the new
// namespace's loopback up, which takes CAP_NET_ADMIN in it. It does so
// in the process that unshared: an execve in a namespace where uid 0 is
// not mapped would drop the capabilities again.
const usernsProbe = `import ctypes, fcntl, os, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000 | 0x40000000) != 0:
    print("unshare failed:", os.strerror(ctypes.get_errno()))
    raise SystemExit
print([l for l in open("/proc/self/status") if l.startswith("CapEff")][0].strip())
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
fcntl.ioctl(s, 0x8914, struct.pack("16sH14s", b"lo", 0x1 | 0x8, bytes(14)))
print("USERNS: CAP_NET_ADMIN in a namespace of its own (lo up)")
`
