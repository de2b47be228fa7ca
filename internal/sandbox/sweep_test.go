package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"agentd/internal/agent"
)

// TestSweep: a cgroup left by an agentd that is gone, with a command still
// in it, is killed and removed when the next sandbox is made.
func TestSweep(t *testing.T) {
	c := detectCgroups("/sys/fs/cgroup")
	if c.version == cgroupNone {
		t.Skip("no cgroup agentd may make here")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	g, err := c.create(agent.Limits{}.WithDefaults())
	if err != nil {
		t.Fatal(err)
	}
	// Rename the group as the dead process's, as if it had made it.
	name := fmt.Sprintf("agentd-sandbox-%d-1", dead.Process.Pid)
	for i, d := range g.dirs {
		to := filepath.Join(filepath.Dir(d), name)
		if err := os.Rename(d, to); err != nil {
			t.Fatal(err)
		}
		g.dirs[i] = to
	}
	sleep := exec.Command("sleep", "3600")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Process.Kill()
	for _, p := range g.procs() {
		if err := os.WriteFile(p, []byte(strconv.Itoa(sleep.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
	}
	New(nil).Sweep()
	left := false
	for _, d := range g.dirs {
		if _, err := os.Stat(d); err == nil {
			left = true
			t.Errorf("the stale cgroup %s is still there", d)
		}
	}
	if left {
		sleep.Process.Kill()
		sleep.Wait()
		g.kill()
		g.remove()
		return
	}
	// Sweeping killed it (it could not remove the cgroup otherwise).
	if err := sleep.Wait(); err == nil {
		t.Errorf("the command in the stale cgroup ended by itself; want it killed")
	}
}
