package sandbox_test

// Each test here is an attack on the sandbox, made as a command an agent
// could run. Each asserts the attack failed and, where it makes sense,
// that the same command without the obstacle (mode none, or the network
// granted) did what it tried, so a test cannot pass because its command
// was broken.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

// dataDir makes a "data directory" outside the workspace holding a secret.
func dataDir(t *testing.T) (dir, secret string) {
	t.Helper()
	dir = t.TempDir()
	secret = "secret-" + filepath.Base(dir)
	if err := os.WriteFile(filepath.Join(dir, "agentd.db"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, secret
}

func TestAttackReadShadow(t *testing.T) {
	needBwrap(t)
	r := run(t, &sandbox.Spec{Argv: []string{"cat", "/etc/shadow"}})
	if r.exit.Code == 0 || strings.Contains(r.out, "root:") {
		t.Errorf("in bwrap, cat /etc/shadow: %+v %q; want it missing", r.exit, r.out)
	}
	if os.Geteuid() == 0 {
		if r := run(t, &sandbox.Spec{Mode: agent.SandboxNone, Argv: []string{"cat", "/etc/shadow"}}); r.exit.Code != 0 || !strings.Contains(r.out, "root:") {
			t.Errorf("control: as root without bwrap cat /etc/shadow should work: %+v %q", r.exit, r.out)
		}
	}
}

func TestAttackReadDataDir(t *testing.T) {
	needBwrap(t)
	data, secret := dataDir(t)
	argv := []string{"cat", filepath.Join(data, "agentd.db")}
	if r := run(t, &sandbox.Spec{Argv: argv}); r.exit.Code == 0 || strings.Contains(r.out, secret) {
		t.Errorf("in bwrap, %q: %+v %q; want the data directory missing", argv, r.exit, r.out)
	}
	if r := run(t, &sandbox.Spec{Mode: agent.SandboxNone, Argv: argv}); !strings.Contains(r.out, secret) {
		t.Errorf("control: without bwrap %q should read the secret: %+v %q", argv, r.exit, r.out)
	}
}

func TestAttackWriteOutside(t *testing.T) {
	needBwrap(t)
	data, _ := dataDir(t)
	name := "agentd-attack-" + filepath.Base(filepath.Dir(t.TempDir()))
	for _, target := range []string{
		filepath.Join("/", name),
		filepath.Join("/etc", name),
		filepath.Join("/usr", name),
		filepath.Join("/usr/bin", name),
		filepath.Join(data, name),
		filepath.Join("/tmp", name),
		filepath.Join("/root", name),
		filepath.Join("/var/tmp", name),
	} {
		t.Run(target, func(t *testing.T) {
			t.Cleanup(func() { os.Remove(target) })
			r := run(t, &sandbox.Spec{Argv: sh(fmt.Sprintf("mkdir -p %s && echo pwned > %s", filepath.Dir(target), target))})
			if _, err := os.Stat(target); err == nil {
				t.Fatalf("in bwrap, a command wrote %s on the host (%+v %q)", target, r.exit, r.out)
			}
		})
	}
	ws := t.TempDir()
	if r := run(t, &sandbox.Spec{Workspace: ws, Argv: sh("echo ok > inside")}); r.exit.Code != 0 {
		t.Fatalf("control: writing in the workspace failed: %+v %q", r.exit, r.out)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "inside")); err != nil || string(b) != "ok\n" {
		t.Errorf("control: the workspace file on the host = %q, %v", b, err)
	}
	target := filepath.Join(data, name)
	t.Cleanup(func() { os.Remove(target) })
	if r := run(t, &sandbox.Spec{Mode: agent.SandboxNone, Argv: sh("echo pwned > " + target)}); r.exit.Code != 0 {
		t.Errorf("control: without bwrap writing %s should work: %+v %q", target, r.exit, r.out)
	}
}

// connect is a command connecting to addr:port with bash's /dev/tcp.
func connect(host string, port int) []string {
	return []string{"bash", "-c", fmt.Sprintf("echo hi > /dev/tcp/%s/%d && echo connected", host, port)}
}

func TestAttackConnectLoopback(t *testing.T) {
	needBwrap(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	if r := run(t, &sandbox.Spec{Argv: connect("127.0.0.1", port)}); r.exit.Code == 0 || strings.Contains(r.out, "connected") {
		t.Errorf("in bwrap, connecting to the host's 127.0.0.1:%d: %+v %q; want refused", port, r.exit, r.out)
	}
	if r := run(t, &sandbox.Spec{Network: true, Argv: connect("127.0.0.1", port)}); !strings.Contains(r.out, "connected") {
		t.Errorf("control: bwrap with the network granted should connect: %+v %q", r.exit, r.out)
	}
	if r := run(t, &sandbox.Spec{Mode: agent.SandboxNone, Argv: connect("127.0.0.1", port)}); !strings.Contains(r.out, "connected") {
		t.Errorf("control: without bwrap the command should connect: %+v %q", r.exit, r.out)
	}
}

func TestAttackConnectMetadata(t *testing.T) {
	needBwrap(t)
	r := run(t, &sandbox.Spec{Argv: connect("169.254.169.254", 80)})
	if r.exit.Code == 0 || strings.Contains(r.out, "connected") {
		t.Errorf("in bwrap, connecting to 169.254.169.254:80: %+v %q; want refused", r.exit, r.out)
	}
	// No route at all in the command's network namespace: it fails at
	// once, it does not wait for a timeout.
	if !strings.Contains(r.out, "unreachable") {
		t.Errorf("in bwrap, 169.254.169.254: %q; want the network unreachable", r.out)
	}
}

func TestAttackSymlinks(t *testing.T) {
	needBwrap(t)
	data, secret := dataDir(t)
	ws := t.TempDir()
	for name, target := range map[string]string{"shadow": "/etc/shadow", "data": data, "root": "/"} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, argv := range [][]string{
		{"cat", "shadow"},
		{"cat", "data/agentd.db"},
		{"cat", "root/etc/shadow"},
		{"cat", "root" + data + "/agentd.db"},
	} {
		r := run(t, &sandbox.Spec{Workspace: ws, Argv: argv})
		if r.exit.Code == 0 || strings.Contains(r.out, secret) || strings.Contains(r.out, "root:") {
			t.Errorf("in bwrap, %q through a symlink: %+v %q; want nothing", argv, r.exit, r.out)
		}
	}
	if r := run(t, &sandbox.Spec{Workspace: ws, Argv: sh("echo pwned > root/etc/agentd-attack; echo pwned > data/x")}); true {
		for _, f := range []string{"/etc/agentd-attack", filepath.Join(data, "x")} {
			if _, err := os.Stat(f); err == nil {
				os.Remove(f)
				t.Errorf("in bwrap, a write through a symlink reached %s (%q)", f, r.out)
			}
		}
	}
	if r := run(t, &sandbox.Spec{Workspace: ws, Mode: agent.SandboxNone, Argv: []string{"cat", "data/agentd.db"}}); !strings.Contains(r.out, secret) {
		t.Errorf("control: without bwrap the symlink should lead to the secret: %+v %q", r.exit, r.out)
	}
}

func TestNoNewPrivileges(t *testing.T) {
	for _, mode := range []string{agent.SandboxNone, agent.SandboxBwrap} {
		t.Run(mode, func(t *testing.T) {
			if mode == agent.SandboxBwrap {
				needBwrap(t)
			}
			r := run(t, &sandbox.Spec{Mode: mode, Argv: []string{"grep", "-E", "^(NoNewPrivs|CapEff)", "/proc/self/status"}})
			if !strings.Contains(r.out, "NoNewPrivs:\t1") {
				t.Errorf("%q; want NoNewPrivs 1 (a setuid binary gains nothing)", r.out)
			}
			if mode == agent.SandboxBwrap && !strings.Contains(r.out, "CapEff:\t0000000000000000") {
				t.Errorf("%q; want no effective capabilities in bwrap", r.out)
			}
		})
	}
}

func TestEnvironmentMinimal(t *testing.T) {
	t.Setenv("AGENTD_TEST_SECRET", "s3cret")
	t.Setenv("AGENTD_TEST_ALLOWED", "yes")
	for _, mode := range []string{agent.SandboxNone, agent.SandboxBwrap} {
		t.Run(mode, func(t *testing.T) {
			if mode == agent.SandboxBwrap {
				needBwrap(t)
			}
			ws := t.TempDir()
			r := run(t, &sandbox.Spec{Mode: mode, Workspace: ws, Env: []string{"AGENTD_TEST_ALLOWED=yes"}, Argv: []string{"env"}})
			got := strings.Fields(r.out)
			want := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws, "LANG=C.UTF-8", "TERM=dumb", "TMPDIR=/tmp", "PWD=" + ws, "AGENTD_TEST_ALLOWED=yes"}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("env =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
