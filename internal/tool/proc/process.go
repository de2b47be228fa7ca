package proc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"agentd/internal/tool"
)

// processTool is the process tool: background commands of a session.
type processTool struct{ m *Manager }

// Actions of the process tool.
const (
	actStart = "start"
	actPoll  = "poll"
	actWrite = "write"
	actKill  = "kill"
	actList  = "list"
)

const processSchema = `{
	"type": "object",
	"properties": {
		"action": {"type": "string", "enum": ["start", "poll", "write", "kill", "list"], "description": "start a command, poll its new output and state, write to its input, kill it, or list this session's processes."},
		"argv": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "start: the program and its arguments (with shell: true, one string: the command line)."},
		"cwd": {"type": "string", "description": "start: the working directory, relative to the workspace."},
		"shell": {"type": "boolean", "description": "start: run argv[0] with sh -c (only when the agent's exec.shell allows it)."},
		"stdin": {"type": "string", "description": "start: the first input of the command; more with write."},
		"id": {"type": "string", "description": "poll, write, kill: the process, as start named it (p1, p2 …)."},
		"wait": {"type": "number", "minimum": 0, "description": "poll: seconds to wait for new output or the end (default 0, at most 30)."},
		"data": {"type": "string", "description": "write: what to write to the process's input."},
		"eof": {"type": "boolean", "description": "write: close the process's input after data."}
	},
	"required": ["action"],
	"additionalProperties": false
}`

func (*processTool) Spec() tool.Spec {
	return tool.Spec{
		Name: "process",
		Description: "Runs commands in the background in the workspace, in a sandbox, for commands that keep " +
			"running (servers, watchers, long builds): start one (it gets an id, p1, p2 …), poll its new output " +
			"and state, write to its input, kill it, list them. They keep running between turns and end with the session.",
		InputSchema: json.RawMessage(processSchema),
		AskFirst:    true,
		OptIn:       true,
	}
}

type processArgs struct {
	Action string `json:"action"`
	command
	ID   string  `json:"id"`
	Wait float64 `json:"wait"`
	Data string  `json:"data"`
	EOF  bool    `json:"eof"`
}

func decodeProcess(raw json.RawMessage) (*processArgs, error) {
	var a processArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return nil, fmt.Errorf("process: %w: %w", ErrArgs, err)
	}
	switch a.Action {
	case actStart, actList:
	case actPoll, actWrite, actKill:
		if a.ID == "" {
			return nil, fmt.Errorf("process: %w: %s needs the id of a process", ErrArgs, a.Action)
		}
	default:
		return nil, fmt.Errorf("process: %w: unknown action %q (start, poll, write, kill or list)", ErrArgs, a.Action)
	}
	return &a, nil
}

// Inert: poll and list change nothing and start nothing.
func (*processTool) Inert(raw json.RawMessage) bool {
	a, err := decodeProcess(raw)
	return err == nil && (a.Action == actPoll || a.Action == actList)
}

// Preview is the command card of a start; for the other actions, a card
// naming the process they act on.
func (t *processTool) Preview(_ context.Context, c *tool.Call) (tool.Card, error) {
	a, err := decodeProcess(c.Args)
	if err != nil {
		return tool.Card{}, err
	}
	switch a.Action {
	case actStart:
		p, err := t.m.prepare(c.Agent, &a.command)
		if err != nil {
			return tool.Card{}, fmt.Errorf("process: %w", err)
		}
		return t.m.card(p, a.Stdin), nil
	case actList:
		return tool.Card{Kind: tool.CardCommand, Title: "List this session's background processes"}, nil
	}
	b, err := t.m.lookup(c.Session, a.ID)
	if err != nil {
		return tool.Card{}, err
	}
	card := t.m.card(b.prep, "")
	switch a.Action {
	case actPoll:
		card.Title = fmt.Sprintf("Read the output of %s: %s", b.id, quoteArgv(b.argv))
	case actKill:
		card.Title = fmt.Sprintf("Kill %s: %s", b.id, quoteArgv(b.argv))
	default: // actWrite: the data is on the card, as a command's stdin is
		card.Title = fmt.Sprintf("Write %d bytes to the input of %s: %s", len(a.Data), b.id, quoteArgv(b.argv))
		if a.EOF {
			card.Title += ", then close it"
		}
		card.Input, card.InputOmitted = cardInput(a.Data)
	}
	card.Exact = "" // "always" is for starting an exact command, not for acting on an id
	return card, nil
}

func (t *processTool) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	a, err := decodeProcess(c.Args)
	if err != nil {
		return tool.Result{}, err
	}
	switch a.Action {
	case actStart:
		return t.start(c, a)
	case actList:
		return tool.Result{Output: t.m.list(c.Session)}, nil
	}
	b, err := t.m.lookup(c.Session, a.ID)
	if err != nil {
		return tool.Result{}, err
	}
	switch a.Action {
	case actPoll:
		return t.m.poll(ctx, b, a.Wait, c.MaxOutputBytes), nil
	case actWrite:
		if b.ended() {
			return tool.Result{}, fmt.Errorf("process %s: %w", b.id, ErrFinished)
		}
		if err := b.stdin.write(a.Data, a.EOF); err != nil {
			return tool.Result{}, fmt.Errorf("process %s: %w", b.id, err)
		}
		return tool.Result{Output: fmt.Sprintf("wrote %d bytes to %s%s", len(a.Data), b.id, map[bool]string{true: " and closed its input"}[a.EOF])}, nil
	default: // actKill
		if b.ended() {
			return tool.Result{Output: b.id + " had ended: " + t.m.procLine(b)}, nil
		}
		b.p.Kill()
		select {
		case <-b.done:
			return tool.Result{Output: "killed " + b.id + ": " + t.m.procLine(b)}, nil
		case <-ctx.Done():
			return tool.Result{Output: "killing " + b.id}, nil
		}
	}
}

func (t *processTool) start(c *tool.Call, a *processArgs) (tool.Result, error) {
	p, err := t.m.prepare(c.Agent, &a.command)
	if err != nil {
		return tool.Result{}, fmt.Errorf("process: %w", err)
	}
	b, err := t.m.start(c.Session, p, a.Stdin)
	if err != nil {
		return tool.Result{}, fmt.Errorf("process: %w", err)
	}
	card := t.m.card(p, "")
	return tool.Result{Output: fmt.Sprintf("started %s: %s (%s)\npoll it for its output: {\"action\": \"poll\", \"id\": %q}", b.id, quoteArgv(b.argv), card.Sandbox, b.id)}, nil
}

// lookup finds the process id of the session at addr.
func (m *Manager) lookup(addr, id string) (*bgProc, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[addr]; s != nil {
		if b := s.procs[id]; b != nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("process %s: %w in this session (background processes end with agentd: one started before it restarted has ended)", id, ErrNoProc)
}

// poll waits up to wait seconds for output past b's cursor or its end,
// and returns its state and the new output, up to limit bytes (the rest
// waits for the next poll).
func (m *Manager) poll(ctx context.Context, b *bgProc, wait float64, limit int) tool.Result {
	limit = outputLimit(b.prep.settings.Exec.MaxOutputBytes, limit)
	m.mu.Lock()
	cursor := b.cursor
	m.mu.Unlock()
	if wait > 0 {
		d := min(time.Duration(wait*float64(time.Second)), m.o.MaxWait)
		c, changed := b.out.Since(cursor, 1)
		if c.Next == cursor { // nothing new yet
			timer := time.NewTimer(d)
			select {
			case <-changed:
			case <-b.done:
			case <-timer.C:
			case <-ctx.Done():
			}
			timer.Stop()
		}
	}
	ended := b.ended() // before reading, so that an ended process's output is all there
	c, _ := b.out.Since(cursor, limit)
	m.mu.Lock()
	if b.cursor == cursor { // a poll at once with this one has not read it
		b.cursor = c.Next
	}
	m.mu.Unlock()

	var out strings.Builder
	out.WriteString(b.id + " " + m.procLine(b))
	out.WriteByte('\n')
	out.Write(c.Data[:c.GapAt])
	if c.Lost > 0 {
		if c.GapAt > 0 && c.Data[c.GapAt-1] != '\n' {
			out.WriteByte('\n')
		}
		fmt.Fprintf(&out, "… %d bytes of output left out (no longer kept) …\n", c.Lost)
	}
	out.Write(c.Data[c.GapAt:])
	if more := b.out.Len() - c.Next; more > 0 {
		fmt.Fprintf(&out, "\n… %d more bytes: poll again …", more)
	}
	return tool.Result{Output: out.String(), IsError: ended && (b.err != nil || b.exit.Code != 0 || b.exit.Reason != "" || b.exit.Signal != "")}
}

// procLine is a process's state: "running · 12.3 s", or its exit line.
func (m *Manager) procLine(b *bgProc) string {
	if !b.ended() {
		return fmt.Sprintf("running · %.1f s", m.o.Now().Sub(b.started).Seconds())
	}
	if b.err != nil {
		return "failed: " + b.err.Error()
	}
	return m.exitLine(b.exit, 0, b.prep)
}

// list is a line per process of the session at addr.
func (m *Manager) list(addr string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[addr]
	if s == nil || len(s.order) == 0 {
		return "no background processes in this session"
	}
	var out strings.Builder
	for _, id := range s.order {
		b := s.procs[id]
		dir := tool.Visible(b.dir)
		if dir == "" {
			dir = "."
		}
		fmt.Fprintf(&out, "%s · %s · started %s · in %s · %s\n", id, m.procLine(b), b.started.UTC().Format(time.RFC3339), dir, quoteArgv(b.argv))
	}
	return out.String()
}
