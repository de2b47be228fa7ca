package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
	"agentd/internal/tool"
	"agentd/internal/tool/files"
	"agentd/internal/tool/proc"
	"agentd/internal/workspace"
)

// The tools' calls in process: the file tools over a workspace set, exec
// through a proc.Manager on the real sandbox with agentd as its helper,
// all registered in a tool registry and called through its Run, as a
// turn's tool calls are (schema check, deadline, output cap).

// The bench's agents, each with a workspace of its own: exec in each
// sandbox mode, and the file tools'.
const (
	toolsAgentNone  = "exec-none"
	toolsAgentBwrap = "exec-bwrap"
	toolsAgentFiles = "files"
)

// toolCalls is the registry of the tools and what they run on.
type toolCalls struct {
	c      toolsConfig
	ws     *workspace.Set
	procs  *proc.Manager
	reg    *tool.Registry
	root   string // the workspaces' parent folder
	calls  int    // calls made, for their ids
	opts   tool.RunOptions
	floorP string // the floor's program: true, looked up in PATH
}

// newToolCalls returns the registry of the tools, and says in res what
// sandbox this machine gives.
func newToolCalls(dir string, c toolsConfig, res *ToolsResult) (*toolCalls, error) {
	root := filepath.Join(dir, "workspaces")
	t := &toolCalls{c: c, root: root, reg: tool.NewRegistry(nil)}
	t.ws = workspace.NewSet(func(id string) (string, error) { return filepath.Join(root, id), nil })
	sb := sandbox.New(&sandbox.Options{Helper: []string{c.exe, sandbox.HelperArg}})
	probe := sb.Probe()
	res.Cgroup, res.NoBwrap = probe.Cgroup, probe.Problem
	if probe.Runs {
		res.Bwrap = probe.Version
	}
	settings := func(id string) (proc.Settings, bool) {
		mode := map[string]string{toolsAgentNone: agent.SandboxNone, toolsAgentBwrap: agent.SandboxBwrap}[id]
		return proc.Settings{Mode: mode, Exec: agent.ExecPolicy{}.WithDefaults()}, mode != ""
	}
	ws := proc.WorkspacesFunc(func(id string) (proc.Workspace, error) {
		w, err := t.ws.For(id)
		if err != nil {
			return nil, err // not a nil *Workspace in an interface
		}
		return w, nil
	})
	t.procs = proc.New(ws, proc.SandboxRunner(sb), settings, nil)
	for _, tl := range append(files.Tools(t.ws, nil), t.procs.Tools()...) {
		if err := t.reg.Register(tl); err != nil {
			t.close()
			return nil, err
		}
	}
	p, err := exec.LookPath("true")
	if err != nil {
		t.close()
		return nil, err
	}
	t.floorP = p
	return t, nil
}

func (t *toolCalls) close() {
	t.procs.Close()
	t.ws.Close()
}

// call runs the tool name with args as agentID's, and returns its output,
// or an error when the tool's result is one.
func (t *toolCalls) call(ctx context.Context, agentID, name, args string) (string, error) {
	t.calls++
	out := t.reg.Run(ctx, &tool.Call{ID: "c" + strconv.Itoa(t.calls), Name: name, Args: json.RawMessage(args),
		Agent: agentID, Session: agentID + "/bench"}, &t.opts)
	if out.Result.IsError {
		return "", fmt.Errorf("bench: %s %s: %s", name, args, out.Result.Output)
	}
	return out.Result.Output, nil
}

// execs times c.execs exec calls of true in each mode, beside the floor,
// the three in turn so that each sees the same load.
func (t *toolCalls) execs(ctx context.Context, res *ToolsResult) error {
	type way struct {
		run  func() error
		took []time.Duration
	}
	viaTool := func(agentID string) func() error {
		return func() error {
			out, err := t.call(ctx, agentID, "exec", `{"argv": ["true"]}`)
			if err == nil && !strings.HasPrefix(out, "exit 0 ") {
				err = fmt.Errorf("bench: exec of true: %q", out)
			}
			return err
		}
	}
	ways := []*way{
		{run: func() error { return exec.CommandContext(ctx, t.floorP).Run() }},
		{run: viaTool(toolsAgentNone)},
	}
	if res.Bwrap != "" {
		ways = append(ways, &way{run: viaTool(toolsAgentBwrap)})
	}
	for _, w := range ways { // the first of each is not timed: the helper's pages, the cgroup's folders
		if err := w.run(); err != nil {
			return err
		}
	}
	for range t.c.execs {
		for _, w := range ways {
			t0 := time.Now()
			if err := w.run(); err != nil {
				return err
			}
			w.took = append(w.took, time.Since(t0))
		}
	}
	res.ExecFloorP50ms, res.ExecFloorP99ms = pct(ways[0].took, 50), pct(ways[0].took, 99)
	res.ExecNoneP50ms, res.ExecNoneP99ms = pct(ways[1].took, 50), pct(ways[1].took, 99)
	if len(ways) > 2 {
		res.ExecBwrapP50ms, res.ExecBwrapP99ms = pct(ways[2].took, 50), pct(ways[2].took, 99)
		res.SandboxCostP50ms, res.SandboxCostP99ms = res.ExecBwrapP50ms-res.ExecNoneP50ms, res.ExecBwrapP99ms-res.ExecNoneP99ms
	}
	return nil
}

// grepBody is each file of the grep workspace: 330 bytes of Go.
var grepBody = strings.Repeat("func handle(w http.ResponseWriter, r *http.Request) { return }\n", 5)

// writeGrepTree fills dir with n files in folders of 1,000 (pkgNN/modN),
// the 501st of each folder holding a match.
func writeGrepTree(dir string, n int) (matches int, err error) {
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", i/10_000), fmt.Sprintf("mod%d", i/1000%10))
		if i%1000 == 0 {
			if err := os.MkdirAll(sub, 0o700); err != nil {
				return 0, err
			}
		}
		text := grepBody
		if i%1000 == 500 {
			text += "// NEEDLE-42 found here\n"
			matches++
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.go", i%1000)), []byte(text), 0o600); err != nil {
			return 0, err
		}
	}
	return matches, nil
}

// grep times c.greps greps over a tree of c.files files after one
// untimed run (the tree's pages and entries cached, as in a workspace in
// use), each beside GNU grep over the same tree where it is installed.
func (t *toolCalls) grep(ctx context.Context, res *ToolsResult) error {
	dir := filepath.Join(t.root, toolsAgentFiles, "tree")
	want, err := writeGrepTree(dir, t.c.files)
	if err != nil {
		return err
	}
	viaTool := func() error {
		out, err := t.call(ctx, toolsAgentFiles, "grep", `{"pattern": "NEEDLE-\\d+", "path": "tree"}`)
		if n := strings.Count(out, "NEEDLE-42"); err == nil && n != want {
			err = fmt.Errorf("bench: grep found %d matches, not %d:\n%s", n, want, out)
		}
		return err
	}
	gnu, _ := exec.LookPath("grep")
	viaGNU := func() error {
		cmd := exec.CommandContext(ctx, gnu, "-rE", "NEEDLE-[0-9]+", ".")
		cmd.Dir = dir
		out, err := cmd.Output()
		if n := strings.Count(string(out), "NEEDLE-42"); err == nil && n != want {
			err = fmt.Errorf("bench: GNU grep found %d matches, not %d", n, want)
		}
		return err
	}
	if err := viaTool(); err != nil {
		return err
	}
	var took, gnuTook []time.Duration
	for range t.c.greps {
		t0 := time.Now()
		if err := viaTool(); err != nil {
			return err
		}
		took = append(took, time.Since(t0))
		if gnu == "" {
			continue
		}
		t0 = time.Now()
		if err := viaGNU(); err != nil {
			return err
		}
		gnuTook = append(gnuTook, time.Since(t0))
	}
	res.GrepMatches, res.GrepP50ms, res.GrepMaxms = want, pct(took, 50), pct(took, 100)
	res.GNUGrepP50ms = pct(gnuTook, 50)
	return nil
}

// readRange times c.reads read_file calls of 100 lines in the middle of
// a 10 MB file of 100,000 lines.
func (t *toolCalls) readRange(ctx context.Context, res *ToolsResult) error {
	const lines, size = 100_000, 100
	dir := filepath.Join(t.root, toolsAgentFiles)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	line := strings.Repeat("x", size-1) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "big.log"), []byte(strings.Repeat(line, lines)), 0o600); err != nil {
		return err
	}
	const head = "big.log lines 50000–50099 of 100000\n"
	var took []time.Duration
	for range t.c.reads {
		t0 := time.Now()
		out, err := t.call(ctx, toolsAgentFiles, "read_file", `{"path": "big.log", "offset": 50000, "limit": 100}`)
		if err == nil && !strings.HasPrefix(out, head) {
			err = fmt.Errorf("bench: read_file: %.80q", out)
		}
		if err != nil {
			return err
		}
		took = append(took, time.Since(t0))
	}
	res.ReadFileMB = float64(lines*size) / 1e6
	res.ReadRangeP50ms, res.ReadRangeP99ms = pct(took, 50), pct(took, 99)
	return nil
}
