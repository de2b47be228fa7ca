// Package proc is the exec and process tools: an agent runs a command in
// its workspace, inside the sandbox, and gets its exit and its output
// (exec), or starts one in the background and polls its output, writes to
// its input, kills it, lists them (process). A Manager owns the background
// processes: they belong to a session, are bounded per session, never
// block a turn, and end with their session (CloseSession) or with agentd
// (Close; the sandbox makes them die with agentd's process too).
package proc

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
	"agentd/internal/tool"
)

// Errors of the exec and process tools.
var (
	ErrArgs        = errors.New("bad arguments")
	ErrShell       = errors.New("a shell is not allowed")
	ErrNoAgent     = errors.New("no exec settings for the agent")
	ErrLimit       = errors.New("too many background processes")
	ErrNoProc      = errors.New("no such process")
	ErrStdin       = errors.New("the process's input is full")
	ErrClosed      = errors.New("agentd is stopping")
	ErrFinished    = errors.New("the process has ended")
	ErrInputClosed = errors.New("the process's input is closed")
)

// Spec is one command to run, and Exit how it ended: the sandbox's.
type (
	Spec = sandbox.Spec
	Exit = sandbox.Exit
)

// Process is a started command.
type Process interface {
	Wait() (Exit, error)
	Kill() // the whole command, whatever it started
}

// Runner starts commands in a sandbox: SandboxRunner over the sandbox
// package's, or a test's own.
type Runner interface {
	Start(ctx context.Context, sp *Spec) (Process, error)
	// Describe names the sandbox of mode for a card: "bwrap, no network",
	// "none".
	Describe(mode string, network bool) string
}

// SandboxRunner runs commands with s.
func SandboxRunner(s *sandbox.Sandbox) Runner { return sandboxRunner{s} }

type sandboxRunner struct{ s *sandbox.Sandbox }

func (r sandboxRunner) Start(ctx context.Context, sp *Spec) (Process, error) {
	p, err := r.s.Start(ctx, sp)
	if err != nil {
		return nil, err // not a nil *sandbox.Process in an interface
	}
	return p, nil
}

func (r sandboxRunner) Describe(mode string, network bool) string { return r.s.Describe(mode, network) }

// Workspace is an agent's folder.
type Workspace interface {
	Dir() string                        // its host path, absolute, symlinks resolved
	HostDir(rel string) (string, error) // a directory inside it as a host path; an error outside
}

// Workspaces gives each agent its workspace.
type Workspaces interface {
	For(agentID string) (Workspace, error)
}

// WorkspacesFunc adapts a function to Workspaces.
type WorkspacesFunc func(agentID string) (Workspace, error)

// For calls f.
func (f WorkspacesFunc) For(agentID string) (Workspace, error) { return f(agentID) }

// Settings are an agent's sandbox mode and exec policy.
type Settings struct {
	Mode string           // agent.SandboxBwrap | SandboxAuto | SandboxNone
	Exec agent.ExecPolicy // WithDefaults applied (it is applied again)
}

// Options configure a Manager.
type Options struct {
	// LookupEnv reads agentd's environment for exec.env's names
	// (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// OutputBytes is what a background process's output keeps, its head
	// and its tail (default 256 KiB).
	OutputBytes int
	// StdinBytes bounds the input written to a background process and not
	// yet read by it (default 1 MiB).
	StdinBytes int
	// MaxWait bounds a poll's wait (default 30s).
	MaxWait time.Duration
	// KeepEnded is how many ended processes a session keeps listed besides
	// its running ones (default 16).
	KeepEnded int
	// Now reads the clock (default time.Now).
	Now func() time.Time
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Manager runs the exec and process tools and owns the background
// processes.
//
// Lock order: Manager.mu, then a ring's or a stdin's own.
type Manager struct {
	ws       Workspaces
	run      Runner
	settings func(agentID string) (Settings, bool)
	o        Options

	ctx    context.Context // the background processes'; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // a waiter and a stdin pump per background process

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
}

// New returns a Manager running commands with run in the workspaces of
// ws, by the settings of each agent (false: the agent has none, and its
// commands are refused).
func New(ws Workspaces, run Runner, settings func(agentID string) (Settings, bool), o *Options) *Manager {
	m := &Manager{ws: ws, run: run, settings: settings, sessions: map[string]*session{}}
	if o != nil {
		m.o = *o
	}
	if m.o.LookupEnv == nil {
		m.o.LookupEnv = os.LookupEnv
	}
	if m.o.OutputBytes <= 0 {
		m.o.OutputBytes = 256 << 10
	}
	if m.o.StdinBytes <= 0 {
		m.o.StdinBytes = 1 << 20
	}
	if m.o.MaxWait <= 0 {
		m.o.MaxWait = 30 * time.Second
	}
	if m.o.KeepEnded <= 0 {
		m.o.KeepEnded = 16
	}
	if m.o.Now == nil {
		m.o.Now = time.Now
	}
	if m.o.Logger == nil {
		m.o.Logger = slog.Default()
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m
}

// Tools returns exec and process.
func (m *Manager) Tools() []tool.Tool {
	return []tool.Tool{&execTool{m}, &processTool{m}}
}

// CloseSession kills the background processes of the session at addr and
// forgets them (a session reset or deleted).
func (m *Manager) CloseSession(addr string) {
	m.mu.Lock()
	s := m.sessions[addr]
	delete(m.sessions, addr)
	m.mu.Unlock()
	if s != nil {
		s.killAll()
	}
}

// Close kills every background process and waits for their ends.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	sessions := m.sessions
	m.sessions = map[string]*session{}
	m.mu.Unlock()
	for _, s := range sessions {
		s.killAll()
	}
	m.cancel()
	m.wg.Wait()
	return nil
}
