//go:build attack

package sandbox_test

// Attacks on what the sandbox shares with the host's kernel: user
// namespaces (the way to the kernel's largest attack surface, nf_tables
// and the other interfaces that need CAP_NET_ADMIN or CAP_SYS_ADMIN in a
// namespace of one's own) and the key rings of the user agentd runs as.
// A probe in Go is this test binary, copied into the workspace and run
// there with ATTACK_PROBE naming what it tries.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"agentd/internal/sandbox"
)

func init() {
	probe := os.Getenv("ATTACK_PROBE")
	if probe == "" {
		return
	}
	switch probe {
	case "keyring":
		desc := os.Getenv("ATTACK_KEY")
		for _, ring := range []int{unix.KEY_SPEC_USER_KEYRING, unix.KEY_SPEC_SESSION_KEYRING} {
			id, err := unix.KeyctlSearch(ring, "user", desc, 0)
			if err != nil {
				fmt.Println("search", ring, err)
				continue
			}
			buf := make([]byte, 256)
			n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
			if err != nil {
				fmt.Println("read", err)
				continue
			}
			fmt.Printf("KEY %s\n", buf[:min(n, len(buf))])
		}
		// and leave one behind for agentd's user to find
		if _, err := unix.AddKey("user", desc+"-planted", []byte("planted"), unix.KEY_SPEC_USER_KEYRING); err == nil {
			fmt.Println("PLANTED")
		}
	}
	os.Exit(0)
}

// self copies this test binary into a fresh workspace, so a command in the
// sandbox can run it.
func self(t *testing.T) (ws, bin string) {
	t.Helper()
	ws = t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	bin = filepath.Join(ws, "probe")
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o700)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return ws, bin
}

// TestAttackUserNamespaceInside: a command in bwrap makes a user
// namespace of its own and holds every capability in it (and a network
// namespace it administers). That is not a way out by itself, but it is
// the way most container escapes of recent years began (nf_tables,
// overlayfs, io_uring bugs reachable only with CAP_NET_ADMIN or
// CAP_SYS_ADMIN in a namespace). bwrap 0.8 refuses it with
// --unshare-user --disable-userns (checked on this machine: unshare then
// fails with ENOSPC); a seccomp filter is the other way.
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
	if strings.Contains(r.out, "USERNS") {
		t.Errorf("in bwrap, a command made a user namespace with all capabilities: %q", r.out)
	}
}

// TestAttackKeyring: agentd as root runs commands as uid 0 without
// capabilities, but in the same user namespace, so they reach uid 0's key
// rings: a key agentd's user (or any root process on the host: fscrypt,
// Kerberos, ecryptfs, keyctl in a script) put in its user key ring is read
// by the command, and the command plants keys there for others to find.
func TestAttackKeyring(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("the keyring of agentd's user is reached as root (as another user, bwrap makes a user namespace)")
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	desc := "agentd-attack-" + hex.EncodeToString(rnd[:])
	secret := "s3cret-" + desc
	id, err := unix.AddKey("user", desc, []byte(secret), unix.KEY_SPEC_USER_KEYRING)
	if err != nil {
		t.Skipf("add key: %v", err)
	}
	t.Cleanup(func() {
		unix.KeyctlInt(unix.KEYCTL_INVALIDATE, id, 0, 0, 0)
		if p, err := unix.KeyctlSearch(unix.KEY_SPEC_USER_KEYRING, "user", desc+"-planted", 0); err == nil {
			unix.KeyctlInt(unix.KEYCTL_INVALIDATE, p, 0, 0, 0)
		}
	})
	ws, bin := self(t)
	r := run(t, &sandbox.Spec{Workspace: ws, Argv: []string{bin}, Env: []string{"ATTACK_PROBE=keyring", "ATTACK_KEY=" + desc}})
	if strings.Contains(r.out, secret) {
		t.Errorf("in bwrap, a command read a key of agentd's user's key ring: %q", r.out)
	}
	if strings.Contains(r.out, "PLANTED") {
		t.Errorf("in bwrap, a command added a key to agentd's user's key ring: %q", r.out)
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
