package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"agentd/internal/agent"
)

// Limits on a stdio server's stderr.
const (
	maxStderrLine = 4 << 10 // longer lines are cut
	stderrTail    = 5       // lines kept to explain a failure
	maxTailLine   = 300     // bytes of each kept line
)

// process is a stdio server's child process.
type process struct {
	cmd    *exec.Cmd
	pid    int
	stdin  *os.File // our end of its stdin
	stdout *os.File // our end of its stdout
	stderr *os.File // our end of its stderr

	exited     chan struct{} // closed once the process is reaped
	waitErr    error         // set before exited is closed
	stderrDone chan struct{} // closed when stderr is read to the end

	mu   sync.Mutex
	tail []string // the last lines of stderr
}

// startProcess starts cfg.Command directly (never through a shell) with an
// environment holding only PATH, HOME, LANG, TMPDIR, the variables PassEnv
// names and Env.
func startProcess(name string, cfg agent.MCPServer, log *slog.Logger) (*process, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = childEnv(cfg)
	cmd.Dir = cfg.Dir
	setProcessGroup(cmd)

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", cfg.Command, err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("starting %s: %w", cfg.Command, err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("starting %s: %w", cfg.Command, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("starting %s: %w", cfg.Command, err)
	}
	// The child has its ends now.
	inR.Close()
	outW.Close()
	errW.Close()

	p := &process{
		cmd:        cmd,
		pid:        cmd.Process.Pid,
		stdin:      inW,
		stdout:     outR,
		stderr:     errR,
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go p.readStderr(log)
	log.Debug("mcp: started", "command", cfg.Command, "pid", p.pid)
	return p, nil
}

// childEnv is the environment of a stdio server.
func childEnv(cfg agent.MCPServer) []string {
	env := map[string]string{}
	// The variables of agentd's own environment every server gets.
	base := []string{"PATH", "HOME", "LANG", "TMPDIR"}
	for _, k := range slices.Concat(base, cfg.PassEnv) {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range cfg.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// readStderr logs the child's stderr line by line: lines that look like
// problems at warn level, the rest at debug. Memory is bounded: long lines
// are cut.
func (p *process) readStderr(log *slog.Logger) {
	defer close(p.stderrDone)
	r := bufio.NewReaderSize(p.stderr, maxStderrLine)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			cut := errors.Is(err, bufio.ErrBufferFull)
			p.logLine(log, line, cut)
			if cut {
				// Skip the rest of the long line.
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = r.ReadSlice('\n')
				}
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func (p *process) logLine(log *slog.Logger, line []byte, cut bool) {
	text := strings.TrimRight(string(bytes.ToValidUTF8(line, []byte("?"))), "\r\n")
	if text == "" {
		return
	}
	if cut {
		text += " [line cut]"
	}
	level := slog.LevelDebug
	if looksLikeProblem(text) {
		level = slog.LevelWarn
	}
	log.Log(context.Background(), level, "mcp: server stderr", "line", text)
	if len(text) > maxTailLine {
		n := maxTailLine
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text = text[:n] + "…"
	}
	p.mu.Lock()
	p.tail = append(p.tail, text)
	if len(p.tail) > stderrTail {
		p.tail = p.tail[len(p.tail)-stderrTail:]
	}
	p.mu.Unlock()
}

func looksLikeProblem(s string) bool {
	l := strings.ToLower(s)
	for _, w := range []string{"error", "fatal", "panic", "warn", "exception", "traceback", "denied", "not found"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// stop closes the child's stdin and gives it grace to exit, then sends
// SIGTERM and after another grace SIGKILL, to its whole process group. It
// returns once the child is reaped.
func (p *process) stop(grace time.Duration) {
	p.stdin.Close()
	select {
	case <-p.exited:
		killGroup(p.cmd, true) // leftovers of the group
		return
	case <-time.After(grace):
	}
	killGroup(p.cmd, false)
	select {
	case <-p.exited:
		killGroup(p.cmd, true)
		return
	case <-time.After(grace):
	}
	killGroup(p.cmd, true)
	<-p.exited
}

// drainStderr waits a moment for the rest of stderr, then stops reading it
// (a grandchild that left the process group may hold it open).
func (p *process) drainStderr() {
	select {
	case <-p.stderrDone:
	case <-time.After(500 * time.Millisecond):
		p.stderr.Close()
		<-p.stderrDone
	}
	p.stdout.Close()
}

// exitReason says why the process's session ended.
func (p *process) exitReason() string {
	select {
	case <-p.exited:
	case <-time.After(time.Second):
		return p.withTail("the server closed its output")
	}
	select {
	case <-p.stderrDone:
	case <-time.After(200 * time.Millisecond):
	}
	return p.withTail(exitText(p.waitErr))
}

// explain adds what the process said and how it ended to err.
func (p *process) explain(err error) error {
	select {
	case <-p.exited:
		return fmt.Errorf("%w (%s)", err, p.withTail(exitText(p.waitErr)))
	default:
		if t := p.lastLines(); t != "" {
			return fmt.Errorf("%w (stderr: %s)", err, t)
		}
		return err
	}
}

func exitText(err error) string {
	if err == nil {
		return "process exited with status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return "process " + ee.ProcessState.String()
	}
	return "process ended: " + err.Error()
}

func (p *process) withTail(s string) string {
	if t := p.lastLines(); t != "" {
		return s + "; stderr: " + t
	}
	return s
}

func (p *process) lastLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " | ")
}
