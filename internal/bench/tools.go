package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"text/tabwriter"

	"agentd/internal/agent"
)

// The figures of the tools that act on a machine (`agentd bench tools`):
// exec's round trip with and without bubblewrap (the sandbox's cost), grep
// over a workspace of many files, read_file of a range of a 10 MB file —
// each through the real tools as the tool registry runs a turn's call
// (toolscalls.go) — and a turn of agentd serve whose step calls exec, on
// the fake model (toolsserve.go).

// ToolsOptions say how Tools measures.
type ToolsOptions struct {
	// Quick runs smaller counts, for CI. Default false: the full counts.
	Quick bool
	// Execs is how many exec calls each of the floor, mode none and mode
	// bwrap times, in turn (default 200; quick 20).
	Execs int
	// Files is how many files the grep workspace holds (default 100,000;
	// quick 10,000), in folders of 1,000.
	Files int
	// Greps is how many greps are timed (default 5; quick 3).
	Greps int
	// Reads is how many read_file calls are timed (default 200; quick 20).
	Reads int
	// Turns is how many turns through agentd serve each of the exec turn
	// and the plain turn times, in turn (default 200; quick 20).
	Turns int
	// ServeSandbox is the sandbox mode of the agent whose turns call exec
	// through agentd serve: bwrap or none (default: bwrap where it runs,
	// else none).
	ServeSandbox string
	// Executable is the agentd binary: the sandbox's helper and the
	// measured serve. Default: the running executable.
	Executable string
	// Version is agentd's version, as the result gives it. Default "".
	Version string
}

// ToolsResult is what Tools measured; `agentd bench tools --json` prints
// it. Times are in milliseconds.
type ToolsResult struct {
	// exec of true through the registry, Execs times each, in turn: the
	// floor (os/exec of the same program, no helper, no sandbox), mode
	// none (the helper: cgroup, rlimits) and mode bwrap. SandboxCost is
	// bwrap − none. Bwrap is bubblewrap's version; "" when it is not
	// installed or cannot run here (NoBwrap says why), and then the bwrap
	// figures are 0. Cgroup is the cgroup version the sandbox uses: v2,
	// v1 or none (then rlimits alone).
	Execs            int     `json:"execs"`
	Bwrap            string  `json:"bwrap"`
	NoBwrap          string  `json:"no_bwrap,omitempty"`
	Cgroup           string  `json:"cgroup"`
	ExecFloorP50ms   float64 `json:"exec_floor_p50_ms"`
	ExecFloorP99ms   float64 `json:"exec_floor_p99_ms"`
	ExecNoneP50ms    float64 `json:"exec_none_p50_ms"`
	ExecNoneP99ms    float64 `json:"exec_none_p99_ms"`
	ExecBwrapP50ms   float64 `json:"exec_bwrap_p50_ms"`
	ExecBwrapP99ms   float64 `json:"exec_bwrap_p99_ms"`
	SandboxCostP50ms float64 `json:"sandbox_cost_p50_ms"`
	SandboxCostP99ms float64 `json:"sandbox_cost_p99_ms"`
	// grep of a pattern over Files files, one in a thousand matching,
	// Greps times after one untimed run; beside GNU grep -rE over the
	// same tree where it is installed (0 where not).
	Files          int     `json:"files"`
	Greps          int     `json:"greps"`
	GrepMatches    int     `json:"grep_matches"`
	GrepP50ms      float64 `json:"grep_p50_ms"`
	GrepMaxms      float64 `json:"grep_max_ms"`
	GNUGrepP50ms   float64 `json:"gnu_grep_p50_ms"`
	ReadFileMB     float64 `json:"read_file_mb"`
	Reads          int     `json:"reads"`
	ReadRangeP50ms float64 `json:"read_range_p50_ms"`
	ReadRangeP99ms float64 `json:"read_range_p99_ms"`
	// Through agentd serve: Turns turns whose step calls exec of true
	// (in TurnMode: ServeSandbox, by default bwrap where it runs, else
	// none), and as many
	// one-step turns of the same agent, in turn, POST …/messages?wait=true
	// over TCP. TurnAdded is exec turn − plain turn (a second model round
	// trip and the call). TurnCall is the exec call as the daemon ran it
	// (its tool_call event to its tool_result event); TurnOverExec is,
	// turn by turn, the exec turn less its call: what the turn costs on
	// top of its command.
	Turns             int     `json:"turns"`
	TurnMode          string  `json:"turn_mode"`
	TurnExecP50ms     float64 `json:"turn_exec_p50_ms"`
	TurnExecP99ms     float64 `json:"turn_exec_p99_ms"`
	TurnPlainP50ms    float64 `json:"turn_plain_p50_ms"`
	TurnPlainP99ms    float64 `json:"turn_plain_p99_ms"`
	TurnAddedP50ms    float64 `json:"turn_added_p50_ms"`
	TurnCallP50ms     float64 `json:"turn_call_p50_ms"`
	TurnCallP99ms     float64 `json:"turn_call_p99_ms"`
	TurnOverExecP50ms float64 `json:"turn_over_exec_p50_ms"`
	TurnOverExecP99ms float64 `json:"turn_over_exec_p99_ms"`

	Quick        bool   `json:"quick,omitempty"`
	CPUs         int    `json:"cpus"`
	GoVersion    string `json:"go"`
	AgentVersion string `json:"agentd"`
}

// toolsConfig is one Tools run's counts.
type toolsConfig struct {
	execs, files, greps, reads, turns int
	exe, ver, serveMode               string
	quick                             bool
}

func newToolsConfig(o *ToolsOptions) (toolsConfig, error) {
	if o == nil {
		o = new(ToolsOptions)
	}
	c := toolsConfig{execs: o.Execs, files: o.Files, greps: o.Greps, reads: o.Reads, turns: o.Turns,
		exe: o.Executable, ver: o.Version, serveMode: o.ServeSandbox, quick: o.Quick}
	def := func(v *int, full, quick int) { orCount(v, full, quick, c.quick) }
	def(&c.execs, 200, 20)
	def(&c.files, 100_000, 10_000)
	def(&c.greps, 5, 3)
	def(&c.reads, 200, 20)
	def(&c.turns, 200, 20)
	if m := c.serveMode; m != "" && m != agent.SandboxBwrap && m != agent.SandboxNone {
		return c, fmt.Errorf("bench: the serve sandbox %q is neither %s nor %s", m, agent.SandboxBwrap, agent.SandboxNone)
	}
	if c.exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, err
		}
		c.exe = exe
	}
	return c, nil
}

// Tools measures the tools that act on a machine. It needs the agentd
// binary (ToolsOptions.Executable: the sandbox's helper and agentd serve)
// and loopback; what it writes goes into a temporary folder it removes.
func Tools(ctx context.Context, o *ToolsOptions) (*ToolsResult, error) {
	c, err := newToolsConfig(o)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentd-bench-tools-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return runTools(ctx, dir, c)
}

func runTools(ctx context.Context, dir string, c toolsConfig) (*ToolsResult, error) {
	res := &ToolsResult{Execs: c.execs, Files: c.files, Greps: c.greps, Reads: c.reads, Turns: c.turns,
		Quick: c.quick, CPUs: goruntime.NumCPU(), GoVersion: goruntime.Version(), AgentVersion: c.ver}
	tc, err := newToolCalls(dir, c, res)
	if err != nil {
		return nil, err
	}
	defer tc.close()
	for _, measure := range []func(context.Context, *ToolsResult) error{tc.execs, tc.grep, tc.readRange} {
		if err := measure(ctx, res); err != nil {
			return nil, err
		}
	}
	return res, runToolsServe(ctx, dir, c, res)
}

// WriteTable writes the result for people. The issue sets no target for
// these figures: the column is there, empty, as in the other tables.
func (r *ToolsResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	bw := r.Bwrap
	if bw == "" {
		bw = "not measured: " + r.NoBwrap
	}
	fmt.Fprintf(tw, "# Tools that act on a machine, called as a turn's tool calls run\nFIGURE\tVALUE\tTARGET\tWHAT\n")
	row := func(name string, v float64, what string) { fmt.Fprintf(tw, "%s\t%.2f ms\t\t%s\n", name, v, what) }
	two := func(name string, p50, p99 float64, what string) {
		fmt.Fprintf(tw, "%s\t%.2f / %.2f ms\t\t%s\n", name, p50, p99, what)
	}
	two("exec_floor p50 / p99", r.ExecFloorP50ms, r.ExecFloorP99ms, fmt.Sprintf("os/exec of true, no helper, no sandbox (%d runs each, in turn with the next two)", r.Execs))
	two("exec_none p50 / p99", r.ExecNoneP50ms, r.ExecNoneP99ms, "the exec tool, sandbox: none (the helper: cgroup "+r.Cgroup+", rlimits)")
	two("exec_bwrap p50 / p99", r.ExecBwrapP50ms, r.ExecBwrapP99ms, "the exec tool, sandbox: bwrap ("+bw+")")
	two("sandbox_cost p50 / p99", r.SandboxCostP50ms, r.SandboxCostP99ms, "exec_bwrap − exec_none: bubblewrap's cost a command")
	row("grep_p50", r.GrepP50ms, fmt.Sprintf("grep of NEEDLE-\\d+ over %d files of 330 bytes, %d matching (%d runs, max %.0f ms)", r.Files, r.GrepMatches, r.Greps, r.GrepMaxms))
	gnu := "GNU grep -rE over the same tree, for comparison"
	if r.GNUGrepP50ms == 0 {
		gnu = "GNU grep is not installed: not measured"
	}
	row("gnu_grep_p50", r.GNUGrepP50ms, gnu)
	two("read_range p50 / p99", r.ReadRangeP50ms, r.ReadRangeP99ms, fmt.Sprintf("read_file of lines 50,000–50,099 of a %.0f MB file of 100,000 lines (%d runs)", r.ReadFileMB, r.Reads))
	two("turn_exec p50 / p99", r.TurnExecP50ms, r.TurnExecP99ms, fmt.Sprintf("agentd serve: a turn whose step calls exec of true, sandbox %s, fake model, POST …/messages?wait=true over TCP (%d turns)", r.TurnMode, r.Turns))
	two("turn_plain p50 / p99", r.TurnPlainP50ms, r.TurnPlainP99ms, "the same agent's one-step turn, in turn with those")
	row("turn_added_p50", r.TurnAddedP50ms, "turn_exec − turn_plain: the step with the call (a model round trip, the call, its events)")
	two("turn_call p50 / p99", r.TurnCallP50ms, r.TurnCallP99ms, "of the exec turn, its call as agentd serve ran it (tool_call event → tool_result event)")
	two("turn_over_exec p50 / p99", r.TurnOverExecP50ms, r.TurnOverExecP99ms, "turn_exec − its call, turn by turn: the turn's cost on top of its command")
	if err := tw.Flush(); err != nil {
		return err
	}
	q := ""
	if r.Quick {
		q = ", --quick counts"
	}
	_, err := fmt.Fprintf(w, "(%d CPUs, %s, agentd %s%s)\n", r.CPUs, r.GoVersion, r.AgentVersion, q)
	return err
}
