// Package doctor checks an agentd installation (its data directory, agent
// files, models, MCP servers and gateway) and says, for each problem, what
// to do about it. It reads and never writes: it may run beside a running
// agentd, whose API it asks when it is given one.
package doctor

import (
	"context"
	"net"
	"os/exec"
	"time"

	"agentd/internal/agent"
	"agentd/internal/gateway"
)

// Status is a check's outcome.
type Status string

// Outcomes, from good to bad.
const (
	OK   Status = "ok"
	Skip Status = "skip" // not checked, and why
	Warn Status = "warn" // works, but worth a look
	Fail Status = "fail" // does not work: Fix says what to do
)

// Check is one thing checked.
type Check struct {
	Area   string `json:"area"` // data, agent, model, mcp, gateway, workspace, sandbox
	Name   string `json:"name"` // what was checked
	Status Status `json:"status"`
	Detail string `json:"detail,omitempty"` // what was found
	Fix    string `json:"fix,omitempty"`    // what to do, for warn and fail
}

// Report is what Run found.
type Report struct {
	Data    string  `json:"data"`    // the data directory, absolute
	Running bool    `json:"running"` // agentd answers on its socket
	PID     int     `json:"pid,omitempty"`
	Checks  []Check `json:"checks"`
}

// Failed reports whether a check failed.
func (r *Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// Count returns how many checks have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}

func (r *Report) add(area, name string, s Status, detail, fix string) {
	r.Checks = append(r.Checks, Check{Area: area, Name: name, Status: s, Detail: detail, Fix: fix})
}

// Daemon is the running agentd's API.
type Daemon interface {
	Status(ctx context.Context) (gateway.StatusResponse, error)
	MCPServers(ctx context.Context) ([]gateway.ServerInfo, error)
}

// Prober makes a one-token call to a model.
type Prober interface {
	Probe(ctx context.Context, m agent.Model) error
}

// Layout names the data directory's files, as agentd's wiring knows them.
type Layout struct {
	DB, Lock, Socket string
	// HasData reports whether a directory holds agentd data.
	HasData func(dir string) bool
}

// Options configure Run.
type Options struct {
	// Daemon is the running agentd; nil when none answers.
	Daemon Daemon
	// Prober, if set, makes a one-token call to every model (--probe).
	Prober Prober
	// Dial reaches models' and MCP servers' hosts (default: a
	// net.Dialer).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// LookPath finds MCP servers' commands (default: exec.LookPath).
	LookPath func(file string) (string, error)
	// Timeout bounds each network check (default 5s).
	Timeout time.Duration
	// Env reads the environment (default: os.Getenv).
	Env func(string) string
	// Store, if set, reads the schema of the store agentd.yaml's store
	// (or --store) selects when it is a shared database rather than the
	// data directory's SQLite file; ok is false for SQLite. Unset, the
	// SQLite file is checked.
	Store func(ctx context.Context, c agent.StoreConfig) (s StoreSchema, ok bool, err error)
	// Sandbox, if set, says whether commands can run in bubblewrap here,
	// checked for the agents offered exec or process.
	Sandbox SandboxProber
}

// StoreSchema is what Options.Store found: the database (its password
// hidden), the schema version it holds and the one this agentd writes.
type StoreSchema struct {
	Where      string
	Have, Want int
}

// Run checks the installation on the data directory dir (absolute).
func Run(ctx context.Context, dir string, l Layout, o *Options) *Report {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{}).DialContext
	}
	if opts.LookPath == nil {
		opts.LookPath = exec.LookPath
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Env == nil {
		opts.Env = getenv
	}
	d := &doctor{dir: dir, l: l, o: opts, r: &Report{Data: dir}}
	if opts.Daemon != nil {
		if st, err := opts.Daemon.Status(ctx); err == nil {
			d.status, d.r.Running, d.r.PID = &st, true, st.PID
		}
	}
	if !d.data(ctx) {
		return d.r
	}
	cfg, defs := d.agents()
	if cfg == nil {
		return d.r
	}
	d.models(ctx, defs)
	d.mcp(ctx, cfg, defs)
	d.gateway(cfg)
	d.workspaces(defs)
	d.sandbox(defs)
	return d.r
}

// doctor is one run.
type doctor struct {
	dir    string
	l      Layout
	o      Options
	r      *Report
	status *gateway.StatusResponse // the running agentd's; nil when none
}
