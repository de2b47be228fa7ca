package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"agentd/internal/agent"
)

// Cgroup versions (cgroups.version, Report.Cgroup).
const (
	cgroupV2   = "v2"
	cgroupV1   = "v1"
	cgroupNone = "none"
)

// cgroups is where a command's cgroup is made: under agentd's own cgroup
// of a v2 hierarchy with the memory and pids controllers, or of the v1
// pids and memory hierarchies. version "none": limits are rlimits alone.
type cgroups struct {
	version string
	v2      string // v2: agentd's cgroup directory
	pids    string // v1: agentd's directory in the pids hierarchy
	memory  string // v1: agentd's directory in the memory hierarchy
	seq     *atomic.Int64
}

// detectCgroups finds where agentd may make cgroups, trying v2 then v1.
func detectCgroups(root string) cgroups {
	c := cgroups{version: cgroupNone, seq: new(atomic.Int64)}
	own := ownCgroups()
	if p, ok := own[""]; ok {
		dir := filepath.Join(root, p)
		if hasControllers(dir, "memory", "pids") && writable(dir) {
			c.version, c.v2 = cgroupV2, dir
			return c
		}
	}
	pids := filepath.Join(root, "pids", own["pids"])
	mem := filepath.Join(root, "memory", own["memory"])
	if _, ok := own["pids"]; ok && writable(pids) {
		if _, ok := own["memory"]; ok && writable(mem) {
			c.version, c.pids, c.memory = cgroupV1, pids, mem
		}
	}
	return c
}

// ownCgroups reads /proc/self/cgroup: controller → path ("" for v2).
func ownCgroups() map[string]string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			m[ctl] = parts[2]
		}
	}
	return m
}

// hasControllers reports whether a v2 cgroup's children may use ctls:
// they are enabled in its cgroup.subtree_control.
func hasControllers(dir string, ctls ...string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return false
	}
	have := strings.Fields(string(b))
	for _, c := range ctls {
		found := false
		for _, h := range have {
			found = found || h == c
		}
		if !found {
			return false
		}
	}
	return true
}

func writable(dir string) bool { return syscall.Access(dir, 2 /* W_OK */) == nil }

// group is one command's cgroup (one directory per hierarchy).
type group struct {
	version string
	dirs    []string // v2: one; v1: pids then memory
}

// create makes a cgroup bounded by l; nil (and the reason) when agentd may
// not, so the limits fall back to rlimits.
func (c cgroups) create(l agent.Limits) (*group, error) {
	if c.version == cgroupNone {
		return nil, nil
	}
	name := fmt.Sprintf("agentd-sandbox-%d-%d", os.Getpid(), c.seq.Add(1))
	g := &group{version: c.version}
	var files [][2]string
	switch c.version {
	case cgroupV2:
		g.dirs = []string{filepath.Join(c.v2, name)}
		files = [][2]string{
			{filepath.Join(g.dirs[0], "pids.max"), strconv.Itoa(l.Processes)},
			{filepath.Join(g.dirs[0], "memory.max"), strconv.FormatInt(int64(l.Memory), 10)},
			{filepath.Join(g.dirs[0], "memory.swap.max"), "0"},
		}
	case cgroupV1:
		g.dirs = []string{filepath.Join(c.pids, name), filepath.Join(c.memory, name)}
		files = [][2]string{
			{filepath.Join(g.dirs[0], "pids.max"), strconv.Itoa(l.Processes)},
			{filepath.Join(g.dirs[1], "memory.limit_in_bytes"), strconv.FormatInt(int64(l.Memory), 10)},
			{filepath.Join(g.dirs[1], "memory.memsw.limit_in_bytes"), strconv.FormatInt(int64(l.Memory), 10)},
		}
	}
	for _, d := range g.dirs {
		if err := os.Mkdir(d, 0o700); err != nil {
			g.remove()
			return nil, fmt.Errorf("make cgroup: %w", err)
		}
	}
	for i, f := range files {
		if err := os.WriteFile(f[0], []byte(f[1]), 0); err != nil {
			if i == len(files)-1 {
				continue // swap accounting is often off; memory alone still holds
			}
			g.remove()
			return nil, fmt.Errorf("set %s: %w", filepath.Base(f[0]), err)
		}
	}
	return g, nil
}

// procs returns the cgroup.procs files the helper joins.
func (g *group) procs() []string {
	var p []string
	for _, d := range g.dirs {
		p = append(p, filepath.Join(d, "cgroup.procs"))
	}
	return p
}

// kill kills every process of the cgroup. A process forking while it is
// read is caught by the next pass; pids.max bounds how long that lasts.
func (g *group) kill() {
	if g.version == cgroupV2 {
		if os.WriteFile(filepath.Join(g.dirs[0], "cgroup.kill"), []byte("1"), 0) == nil {
			return
		}
	}
	for range 100 {
		pids := g.pids()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func (g *group) pids() []int {
	b, err := os.ReadFile(filepath.Join(g.dirs[0], "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// hit reports which limits the cgroup's counters say were reached.
func (g *group) hit() (memory, processes bool) {
	switch g.version {
	case cgroupV2:
		memory = eventCount(filepath.Join(g.dirs[0], "memory.events"), "oom_kill") > 0
		processes = eventCount(filepath.Join(g.dirs[0], "pids.events"), "max") > 0
	case cgroupV1:
		processes = eventCount(filepath.Join(g.dirs[0], "pids.events"), "max") > 0
		memory = eventCount(filepath.Join(g.dirs[1], "memory.oom_control"), "oom_kill") > 0
	}
	return memory, processes
}

// eventCount reads "name N" from a flat-keyed cgroup file.
func eventCount(file, name string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// remove deletes the cgroup's directories once its processes are gone
// (the kernel frees a dying process's membership a moment after its exit).
func (g *group) remove() error {
	var errs []error
	for _, d := range g.dirs {
		var err error
		for range 50 {
			err = os.Remove(d)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
