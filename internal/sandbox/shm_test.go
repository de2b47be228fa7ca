package sandbox_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

// TestAttackDevShmIsUnbounded: bwrap's --dev is a tmpfs of its own, with
// no size, and /dev/shm in it is writable: where agentd has no cgroup
// (agentd as another user than root, or cgroups not writable), memory is
// RLIMIT_AS, which counts no tmpfs page, so a command keeps any amount
// of the host's memory in /dev/shm (up to half of it, tmpfs's default)
// for as long as it runs, whatever limits.memory and limits.tmp say.
// /tmp has --size; /dev wants one too (or /dev/shm a --size'd tmpfs of
// its own), counted against limits.tmp.
func TestAttackDevShmIsUnbounded(t *testing.T) {
	needBwrap(t)
	const script = `for i in 1 2 3 4 5 6; do head -c 50M /dev/zero > /dev/shm/f$i || exit 1; done; du -sm /dev/shm | cut -f1`
	for _, cg := range []string{"no cgroup (rlimits)", "cgroups where agentd may make them"} {
		t.Run(cg, func(t *testing.T) {
			o := &sandbox.Options{}
			if strings.HasPrefix(cg, "no") {
				o.CgroupRoot = t.TempDir()
			}
			sp := &sandbox.Spec{Mode: agent.SandboxBwrap, Workspace: t.TempDir(), Argv: sh(script), Timeout: time.Minute,
				Limits: agent.Limits{Memory: 64 << 20, Tmp: 16 << 20}.WithDefaults()}
			var out bytes.Buffer
			sp.Stdout, sp.Stderr = &out, &out
			e, err := sandbox.New(o).Run(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			if e.Code == 0 && strings.TrimSpace(out.String()) == "300" {
				t.Errorf("in bwrap with limits.memory 64 MiB and limits.tmp 16 MiB, a command holds 300 MiB in /dev/shm: %+v %q", e, out.String())
			} else {
				t.Logf("held: %+v %q", e, out.String())
			}
		})
	}
}
