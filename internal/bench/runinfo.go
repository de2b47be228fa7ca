package bench

import (
	"fmt"
	"io"
	goruntime "runtime"
)

// RunInfo says how a bench ran and on what: the last fields of each
// result's JSON and the footer of its table. Scripts read its JSON names.
type RunInfo struct {
	Quick        bool   `json:"quick,omitempty"`
	Synchronous  string `json:"synchronous"`
	CPUs         int    `json:"cpus"`
	GoVersion    string `json:"go"`
	AgentVersion string `json:"agentd"`
}

// newRunInfo is the RunInfo of a run on this machine with these settings.
func newRunInfo(quick bool, synchronous, version string) RunInfo {
	return RunInfo{Quick: quick, Synchronous: synchronous, CPUs: goruntime.NumCPU(),
		GoVersion: goruntime.Version(), AgentVersion: version}
}

// writeFooter writes the line under a table: the machine, the versions,
// the store's synchronous mode and whether the counts were --quick ones.
func (r RunInfo) writeFooter(w io.Writer) error {
	q := ""
	if r.Quick {
		q = ", --quick counts"
	}
	_, err := fmt.Fprintf(w, "(%d CPUs, %s, agentd %s, synchronous=%s%s)\n", r.CPUs, r.GoVersion, r.AgentVersion, r.Synchronous, q)
	return err
}
