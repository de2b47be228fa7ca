package sandbox_test

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

// TestInheritedDescriptors: a descriptor agentd inherited without
// close-on-exec (here a directory of the host, as one a service manager
// or a shell may pass) does not reach the command, in either mode.
func TestInheritedDescriptors(t *testing.T) {
	secret := t.TempDir()
	dir, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if _, err := unix.FcntlInt(dir.Fd(), unix.F_SETFD, 0); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{agent.SandboxNone, agent.SandboxBwrap} {
		t.Run(mode, func(t *testing.T) {
			if mode == agent.SandboxBwrap {
				needBwrap(t)
			}
			r := run(t, &sandbox.Spec{Mode: mode, Argv: sh(`for f in /proc/self/fd/*; do readlink "$f" || true; done`)})
			if strings.Contains(r.out, secret) {
				t.Errorf("the command holds agentd's descriptor of %s:\n%s", secret, r.out)
			}
		})
	}
}
