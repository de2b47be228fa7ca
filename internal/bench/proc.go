package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// What /proc says of a process: its memory and the CPU it has used. Where
// there is no /proc (not Linux) the figures are 0.

// rssMB reads a process's resident set size from /proc, in MiB.
func rssMB(pid int) float64 { return statusMB(pid, "VmRSS") }

// statusMB reads one memory field of /proc/<pid>/status (VmRSS, RssAnon,
// RssFile), in MiB.
func statusMB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux that agentd runs on).
const clockTick = 10 * time.Millisecond

// cpuTime returns the CPU time a process has used, user and system, over
// all its threads, from /proc/<pid>/stat.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return parseStat(b)
}

// parseStat returns utime + stime of a /proc/<pid>/stat line. The command
// name, in parentheses, may hold spaces and parentheses itself, so the
// fields are counted from the last ')'.
func parseStat(b []byte) time.Duration {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // from field 3, the state
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14, utime
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15, stime
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * clockTick
}
