package proc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"agentd/internal/sandbox"
	"agentd/internal/tool"
)

// execTool is the exec tool: one command, waited for.
type execTool struct{ m *Manager }

const execSchema = `{
	"type": "object",
	"properties": {
		"argv": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "The program and its arguments, as [\"go\", \"test\", \"./...\"]; no shell reads them. With shell: true, one string: the command line sh -c runs."},
		"cwd": {"type": "string", "description": "The working directory, relative to the workspace (default: its root)."},
		"timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds before the command is killed (default and most: the agent's exec.timeout)."},
		"stdin": {"type": "string", "description": "The command's standard input (default: none)."},
		"shell": {"type": "boolean", "description": "Run argv[0] as a shell command line (only when the agent's exec.shell allows it)."}
	},
	"required": ["argv"],
	"additionalProperties": false
}`

func (*execTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "exec",
		Description: "Runs a command in the workspace, in a sandbox, and returns its exit (first line) and its " +
			"output, stdout and stderr as written, capped keeping the start and the end. " +
			"For a command that keeps running (a server, a watcher) use the process tool.",
		InputSchema: json.RawMessage(execSchema),
		AskFirst:    true,
		OptIn:       true,
	}
}

type execArgs struct {
	command
	Timeout float64 `json:"timeout"`
}

// prepare decodes and checks a call, with the timeout it runs with.
func (t *execTool) prepare(c *tool.Call) (*prepared, time.Duration, error) {
	var a execArgs
	if err := tool.DecodeArgs(c.Args, &a); err != nil {
		return nil, 0, fmt.Errorf("exec: %w: %w", ErrArgs, err)
	}
	p, err := t.m.prepare(c.Agent, &a.command)
	if err != nil {
		return nil, 0, fmt.Errorf("exec: %w", err)
	}
	most := time.Duration(p.settings.Exec.Timeout)
	timeout := most
	if a.Timeout > 0 {
		timeout = time.Duration(a.Timeout * float64(time.Second))
		if timeout > most {
			return nil, 0, fmt.Errorf("exec: %w: timeout %gs is more than the agent's exec.timeout (%s)", ErrArgs, a.Timeout, fmtDur(most))
		}
	} else if a.Timeout < 0 {
		return nil, 0, fmt.Errorf("exec: %w: timeout must be positive", ErrArgs)
	}
	p.spec.Timeout = timeout
	if a.Stdin != "" {
		p.stdin = a.Stdin
		p.spec.Stdin = strings.NewReader(a.Stdin)
	}
	return p, timeout, nil
}

// Preview is the command card, after the checks the call makes.
// Deadline is the agent's exec.timeout and a little more, so that a
// command at its timeout is ended and reported by exec, not cut off by
// the registry's deadline (tools.timeout, shorter by default).
func (t *execTool) Deadline(agentID string) time.Duration {
	st, ok := t.m.settings(agentID)
	if !ok {
		return 0
	}
	return st.Exec.Timeout.D() + 5*time.Second
}

func (t *execTool) Preview(_ context.Context, c *tool.Call) (tool.Card, error) {
	p, _, err := t.prepare(c)
	if err != nil {
		return tool.Card{}, err
	}
	return t.m.card(p, p.stdin), nil
}

func (t *execTool) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	p, timeout, err := t.prepare(c)
	if err != nil {
		return tool.Result{}, err
	}
	out := newRing(outputLimit(p.settings.Exec.MaxOutputBytes, c.MaxOutputBytes))
	p.spec.Stdout, p.spec.Stderr = out, out
	proc, err := t.m.startIn(ctx, p)
	if err != nil {
		return tool.Result{}, fmt.Errorf("exec: %w", err)
	}
	exit, err := proc.Wait()
	if err != nil {
		return tool.Result{}, fmt.Errorf("exec: %w", err)
	}
	line := t.m.exitLine(exit, timeout, p)
	return tool.Result{Output: line + "\n" + out.String(), IsError: exit.Code != 0 || exit.Reason != "" || exit.Signal != ""}, nil
}

// exitLine is a result's first line: "exit 0 · 1.2 s · bwrap, no
// network", "killed: timeout after 2m · …".
func (m *Manager) exitLine(e Exit, timeout time.Duration, p *prepared) string {
	var how string
	switch {
	case e.Reason == sandbox.ReasonTimeout:
		how = "killed: timeout after " + fmtDur(timeout)
	case e.Reason != "":
		how = "killed: " + e.Reason
	case e.Signal != "":
		how = "signal " + e.Signal
	default:
		how = fmt.Sprintf("exit %d", e.Code)
	}
	mode := e.Mode
	if mode == "" {
		mode = p.settings.Mode
	}
	return fmt.Sprintf("%s · %.1f s · %s", how, e.Wall.Seconds(), m.run.Describe(mode, p.settings.Exec.Network))
}

// fmtDur writes whole minutes and seconds short: 2m, 90s, 1.5s.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// headroom is what a result's first line and notes take besides the
// output, kept out of the call's cap so that the registry's cut never
// takes the output's tail.
const headroom = 256

// outputLimit is the output a result holds: exec.max_output_bytes, less
// when the call's cap (callMax, 0: none) leaves less room.
func outputLimit(policy, callMax int) int {
	if callMax > 0 {
		return max(2, min(policy, callMax-headroom))
	}
	return policy
}
