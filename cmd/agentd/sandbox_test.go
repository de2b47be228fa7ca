package main

import (
	"os/exec"
	"strings"
	"testing"
)

// sandboxProbe is a shell command an agent runs in bwrap that tries what
// the sandbox keeps from it: a kernel setting, a user namespace of its
// own, /dev/shm past limits.tmp. It says END when it got through.
// The setting is written with the value it has: run where the sandbox
// does not hold, the probe changes nothing of the host.
const sandboxProbe = `v=$(cat /proc/sys/kernel/printk_ratelimit); ` +
	`echo $v > /proc/sys/kernel/printk_ratelimit && echo SYSCTL-WRITTEN; ` +
	`unshare -U true && echo USERNS-MADE; ` +
	`head -c 4M /dev/zero > /dev/shm/x && echo SHM-FILLED; echo END`

// TestSandboxThroughTheBinary: an agent's exec, run by agentd send on
// its own and through agentd serve, gets the sandbox's /proc, user
// namespace and /dev/shm limits.
func TestSandboxThroughTheBinary(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed here (apt install bubblewrap); CI runs this test")
	}
	for _, daemon := range []bool{false, true} {
		name := "in process"
		if daemon {
			name = "through the daemon"
		}
		t.Run(name, func(t *testing.T) {
			addr := fake(t, "call exec {\"argv\": [\"sh\", \"-c\", \""+sandboxProbe+"\"]}\n---\nsay probe: {{tool_result}}\n")
			dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr,
				"tools:\n  builtin: [exec]\n  allow: [exec]\nexec:\n  shell: true\n  limits: {tmp: 1MiB}\n")})
			if daemon {
				serve(t, dir)
			}
			r := run(t, dir, "send", "a", "probe")
			if r.code != 0 || !strings.Contains(r.stdout, "END") {
				t.Fatalf("exit %d, want the probe's output:\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			for _, got := range []string{"SYSCTL-WRITTEN", "USERNS-MADE", "SHM-FILLED"} {
				if strings.Contains(r.stdout, got) {
					t.Errorf("a command in the sandbox: %s\n%s", got, r.stdout)
				}
			}
		})
	}
}
