package sandbox_test

import (
	"fmt"
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
// opens core_pattern and modprobe for writing without writing. agentd
// binds /proc/sys read-only over the sandbox's /proc, so each is refused.
func TestAttackProcSysWritable(t *testing.T) {
	needBwrap(t)
	if os.Geteuid() != 0 {
		t.Skip("as another user than root, the command is not the host's root")
	}
	const script = `v=$(cat /proc/sys/kernel/printk_ratelimit)
if echo "$v" > /proc/sys/kernel/printk_ratelimit; then echo "WROTE kernel.printk_ratelimit"; fi
for f in kernel/core_pattern kernel/modprobe; do
	if true >> /proc/sys/$f; then echo "OPENED kernel.${f#kernel/} for writing"; fi
done`
	r := run(t, &sandbox.Spec{Argv: sh(script)})
	if strings.Contains(r.out, "WROTE") || strings.Contains(r.out, "OPENED") {
		t.Errorf("in bwrap, a command may change the host's kernel settings:\n%s", r.out)
	}
}

// TestProcMasked: as root a command is the host's uid 0 to /proc, so what
// Docker and Podman keep from a container is kept from it too: no file
// of /proc/sys, /proc/irq, /proc/bus, /proc/fs, /proc/acpi, /proc/scsi or
// /proc/asound opens for writing (nothing is written), and /proc/kcore,
// keys, timer_list, sysrq-trigger and the like cannot be read or written.
func TestProcMasked(t *testing.T) {
	needBwrap(t)
	var trees, masked []string
	for _, name := range []string{"sys", "irq", "bus", "fs", "acpi", "scsi", "asound"} {
		if _, err := os.Stat("/proc/" + name); err == nil {
			trees = append(trees, "/proc/"+name)
		}
	}
	for _, name := range []string{"kcore", "keys", "latency_stats", "timer_list", "timer_stats", "sched_debug", "sysrq-trigger"} {
		if _, err := os.Stat("/proc/" + name); err == nil {
			masked = append(masked, "/proc/"+name)
		}
	}
	script := fmt.Sprintf(`n=0
for f in $(find %s -type f -perm -u=w 2>/dev/null); do
	n=$((n+1))
	if true 2>/dev/null >> "$f"; then echo "OPENED $f"; fi
done
echo "TRIED $n"
for f in %s; do
	if true 2>/dev/null >> "$f"; then echo "OPENED $f"; fi
	if [ -n "$(head -c 64 "$f" 2>/dev/null)" ]; then echo "READ $f"; fi
done`, strings.Join(trees, " "), strings.Join(masked, " "))
	r := run(t, &sandbox.Spec{Argv: sh(script)})
	if strings.Contains(r.out, "OPENED") || strings.Contains(r.out, "READ") {
		t.Errorf("in bwrap, a command reached the host's kernel through /proc:\n%s", r.out)
	}
	if os.Geteuid() == 0 && strings.Contains(r.out, "TRIED 0\n") {
		t.Errorf("no writable file of %v in the sandbox to try: %q", trees, r.out)
	}
	t.Logf("%s", r.out)
}
