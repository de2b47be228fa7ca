//go:build attack

package sandbox_test

import (
	"os"
	"strings"
	"testing"

	"agentd/internal/sandbox"
)

// TestAttackProcSysWritable: when agentd runs as root, a command in bwrap
// runs as uid 0 of a user namespace that maps it to the host's uid 0
// (even with --uid 65534: bwrap maps the sandbox's uid to its caller's),
// and sysctl files check only that the writer's uid is the host's root.
// bwrap covers /proc/sys read-only only when it finds it writable by
// access(2), which a directory of mode 0555 never is, so /proc/sys stays
// read-write: the command changes the host's kernel settings. Among them
// kernel.core_pattern and kernel.modprobe, programs the kernel runs as
// root in the host's namespaces: "|<workspace>/x" in core_pattern and a
// crash of any process runs x as root on the host (the workspace is
// bound at its own host path, so the path means the same there). That
// is the sandbox's end, from the default mode.
//
// This test changes nothing: it writes back the value a setting has, and
// opens core_pattern and modprobe for writing without writing. With
// "--ro-bind /proc/sys /proc/sys" after "--proc /proc" (checked on this
// machine with bwrap 0.8) each is refused; running commands as a host
// user other than root when agentd is root is the deeper fix.
func TestAttackProcSysWritable(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("as another user than root, the command is not the host's root")
	}
	const script = `v=$(cat /proc/sys/kernel/printk_ratelimit)
if echo "$v" > /proc/sys/kernel/printk_ratelimit; then echo "WROTE kernel.printk_ratelimit"; fi
for f in kernel/core_pattern kernel/modprobe; do
	if : >> /proc/sys/$f; then echo "OPENED kernel.${f#kernel/} for writing"; fi
done`
	r := run(t, &sandbox.Spec{Argv: sh(script)})
	if strings.Contains(r.out, "WROTE") || strings.Contains(r.out, "OPENED") {
		t.Errorf("in bwrap, a command may change the host's kernel settings:\n%s", r.out)
	}
}
