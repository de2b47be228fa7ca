//go:build attack

package sandbox_test

// An attack on what the sandbox shares with the host's kernel when the
// network is granted: the host's abstract unix sockets (a stated limit,
// docs/tools.md "The sandbox").
// A probe in Go is this test binary, copied into the workspace and run
// there with ATTACK_PROBE naming what it tries.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"agentd/internal/sandbox"
)

func init() {
	probe := os.Getenv("ATTACK_PROBE")
	if probe == "" || (len(os.Args) > 1 && os.Args[1] == sandbox.HelperArg) {
		return // the helper (this binary too) gets the command's environment
	}
	switch probe {
	case "abstract":
		c, err := net.Dial("unix", "@"+os.Getenv("ATTACK_SOCKET"))
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(0)
		}
		c.Write([]byte("hello from the sandbox\n"))
		c.Close()
		fmt.Println("CONNECTED")
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

// TestAttackAbstractSocketWithNetwork: exec.network: true shares the
// host's network namespace, and with it every abstract unix socket of
// the host (D-Bus, X11, containerd's shims, anything that listens on
// "@name"): they have no file permissions, only the peer's credentials,
// and the command's are uid 0 when agentd runs as root. A root-only
// service on an abstract socket takes the sandboxed command for root.
// docs/tools.md ("The network") states it as a limit of exec.network.
// A user namespace mapping the command to another uid (--unshare-user
// --uid 65534) makes the credentials honest; a network namespace of its
// own with a user-mode stack (pasta, slirp4netns) keeps the sockets out.
func TestAttackAbstractSocketWithNetwork(t *testing.T) {
	needBwrap(t)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "agentd-attack-" + hex.EncodeToString(rnd[:])
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			uid := "?"
			if raw, err := c.(*net.UnixConn).SyscallConn(); err == nil {
				raw.Control(func(fd uintptr) {
					if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
						uid = fmt.Sprint(cred.Uid)
					}
				})
			}
			c.Close()
			peer <- uid
		}
	}()
	for _, network := range []bool{false, true} {
		ws, bin := self(t)
		r := run(t, &sandbox.Spec{Workspace: ws, Network: network, Argv: []string{bin}, Env: []string{"ATTACK_PROBE=abstract", "ATTACK_SOCKET=" + name}})
		if !strings.Contains(r.out, "CONNECTED") {
			t.Logf("network %v: held: %q", network, r.out)
			continue
		}
		uid := <-peer
		t.Errorf("in bwrap with network %v, a command reached the host's abstract socket @%s, as uid %s", network, name, uid)
	}
}
