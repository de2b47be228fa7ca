package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/tool"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Errors returned by the Manager, wrapped with details.
var (
	// ErrNotFound: no server of that name.
	ErrNotFound = errors.New("server not found")
	// ErrExists: a server of that name is being added right now.
	ErrExists = errors.New("server already exists")
	// ErrConflict: a server of that name is already defined with a
	// different configuration.
	ErrConflict = errors.New("conflicting server definition")
	// ErrConfigured: the server comes from a configuration file, so only
	// editing that file removes it.
	ErrConfigured = errors.New("server is defined in a configuration file")
	// ErrInvalid: the definition is not usable (name, transport, command,
	// URL, kind).
	ErrInvalid = errors.New("invalid server definition")
	// ErrNotConnected: the server is down, disabled or still connecting.
	ErrNotConnected = errors.New("server is not connected")
	// ErrUnsupported: the server does not offer the capability asked for
	// (resources, prompts).
	ErrUnsupported = errors.New("capability not supported by the server")
	// ErrClosed: the Manager has been closed.
	ErrClosed = errors.New("manager closed")
)

// Server states, as Status reports them.
const (
	StateConnecting = "connecting" // the first connection attempt is running
	StateConnected  = "connected"
	StateDown       = "down" // the last attempt failed or the connection died; reconnecting
	StateDisabled   = "disabled"
)

// Defaults.
const (
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	// DefaultTimeout bounds connecting and listing tools when the server's
	// configuration sets no timeout.
	DefaultTimeout = 30 * time.Second
	// DefaultProtocolVersion is the MCP protocol version asked for: the
	// newest of the stateful protocol, which servers widely speak and which
	// keeps one session per server.
	DefaultProtocolVersion = "2025-11-25"
	// DefaultStopGrace is how long a stdio server has to exit after its
	// stdin is closed, before it is terminated.
	DefaultStopGrace = 2 * time.Second
)

// Registrar is where server tools go (*tool.Registry satisfies it).
type Registrar interface {
	Register(t tool.Tool) error
	Unregister(name string) bool
}

// Options configures a Manager.
type Options struct {
	// Logger receives connection events and stdio servers' stderr. Nil
	// discards them.
	Logger *slog.Logger
	// Tools is where the servers' tools are registered. Required.
	Tools Registrar
	// ClientName and ClientVersion are sent in initialize (default
	// "agentd", "dev").
	ClientName, ClientVersion string
	// MinBackoff and MaxBackoff bound the reconnect delay, which doubles
	// after each failed attempt and is drawn uniformly from [0, delay)
	// (full jitter). Defaults: 250ms and 30s.
	MinBackoff, MaxBackoff time.Duration
	// ProtocolVersion is the MCP protocol version asked for when
	// connecting; the server may answer with an older one it supports.
	// Default: DefaultProtocolVersion. "2026-07-28" asks for the stateless
	// protocol, which falls back to the older handshake when the server
	// does not know it.
	ProtocolVersion string
	// StopGrace is how long a stdio server has to exit after its stdin is
	// closed before it is sent SIGTERM, then SIGKILL (default 2s).
	StopGrace time.Duration
	// StatePath is a JSON file (mode 0600) where servers added at run time
	// persist; "" means they are not persisted.
	StatePath string
	// MaxResultBytes is the text one message of a server may hold: longer
	// results are cut while they are read, so that a large result costs
	// no more memory than that and leaves the connection usable (default
	// DefaultMaxResultBytes; see "Large results" in limit.go). The
	// registry then cuts a result to the agent's tools.max_output_bytes.
	MaxResultBytes int
	// Uses reports whether an agent uses a node-wide server (one whose
	// Def.Agents is nil); the resource and prompt built-ins consult it for
	// calls that name an agent. Nil means every agent uses every node-wide
	// server.
	Uses func(agentID, server string) bool

	// dial replaces the transports, for tests.
	dial func(ctx context.Context, name string, cfg agent.MCPServer) (sdk.Transport, error)
}

// Def defines one server.
type Def struct {
	Name   string
	Config agent.MCPServer
	// Agents are the agents whose own definition this is; nil means
	// node-wide (every agent that uses it).
	Agents []string
	// Source says where the definition comes from: "config",
	// "agent:<id>", "runtime", "skill:<name>". It is shown in List. Servers
	// added with the source "skill:..." are not persisted.
	Source string
	// Skill, for a server a skill bundles (added when a session loads the
	// skill), is that skill: its tools are seen only in the sessions that
	// loaded it (tool.Spec.Skills), unless another definition of the same
	// server makes them visible more widely.
	Skill string
}

// Status describes one server.
type Status struct {
	Name      string
	Transport string
	Source    string // the sources of its definitions, comma-separated
	State     string // connecting, connected, down or disabled
	// Agents are the agents that see its tools; nil means node-wide.
	Agents []string
	// Skills, when set, are the skills whose loading sessions alone see
	// its tools (a skill's bundled server).
	Skills    []string
	Tools     int // tools registered now
	Restarts  int // successful reconnections
	LastError string
	PID       int // the stdio server's process id while connected
	// ServerName and ServerVersion are what the server said in initialize.
	ServerName, ServerVersion string
	// Since is when State last changed.
	Since time.Time
}

// contrib is one definition of a server: several agent files may define
// the same server with the same configuration.
type contrib struct {
	agents []string
	source string
	skills []string // the skills that bundle it; nil: not a skill's
}

// runtimeContrib is the contribution of d, added at run time.
func runtimeContrib(d *Def) *contrib {
	c := &contrib{agents: d.Agents, source: d.Source}
	if d.Skill != "" {
		c.skills = []string{d.Skill}
	}
	return c
}

// Manager connects to MCP servers and keeps their tools registered. It is
// safe for concurrent use.
type Manager struct {
	log    *slog.Logger
	opts   Options
	limits limits // what a server's message may hold
	impl   *sdk.Implementation
	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the Manager starts

	mu       sync.Mutex
	closed   bool
	servers  map[string]*server
	pending  map[string]bool    // names being added by Add
	stopping map[string]*server // servers stopped whose goroutine may still run
}

// New returns a Manager and starts connecting to the servers persisted in
// o.StatePath.
func New(o *Options) (*Manager, error) {
	if o == nil || o.Tools == nil {
		return nil, errors.New("mcp: new: Options.Tools is required")
	}
	m := &Manager{
		opts:     *o,
		log:      o.Logger,
		servers:  map[string]*server{},
		pending:  map[string]bool{},
		stopping: map[string]*server{},
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.opts.ClientName == "" {
		m.opts.ClientName = "agentd"
	}
	if m.opts.ClientVersion == "" {
		m.opts.ClientVersion = "dev"
	}
	if m.opts.MinBackoff <= 0 {
		m.opts.MinBackoff = DefaultMinBackoff
	}
	if m.opts.MaxBackoff <= 0 {
		m.opts.MaxBackoff = DefaultMaxBackoff
	}
	m.opts.MaxBackoff = max(m.opts.MaxBackoff, m.opts.MinBackoff)
	if m.opts.ProtocolVersion == "" {
		m.opts.ProtocolVersion = DefaultProtocolVersion
	}
	if m.opts.StopGrace <= 0 {
		m.opts.StopGrace = DefaultStopGrace
	}
	m.limits = defaultLimits(o.MaxResultBytes)
	m.impl = &sdk.Implementation{Name: m.opts.ClientName, Version: m.opts.ClientVersion}

	var saved []Def
	if m.opts.StatePath != "" {
		var err error
		if saved, err = loadState(m.opts.StatePath); err != nil {
			return nil, err
		}
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range saved {
		if err := validateDef(&d); err != nil {
			m.log.Warn("mcp: skipping a saved server", "server", d.Name, "error", err)
			continue
		}
		if m.servers[d.Name] != nil {
			m.log.Warn("mcp: skipping a saved server defined twice", "server", d.Name)
			continue
		}
		s := m.newServer(d.Name, d.Config)
		s.runtime = runtimeContrib(&d)
		s.scope, s.skills = s.view()
		m.servers[d.Name] = s
		m.start(s, nil)
	}
	return m, nil
}

// Set reconciles the configured servers (agentd.yaml and agent files) with
// defs: it starts the new ones, stops the removed ones and restarts the
// changed ones. Servers added with Add are kept. Definitions of one name with
// an identical configuration share one connection, their Agents merged; a
// definition that conflicts with an earlier one, or that is invalid, is
// skipped and reported. Set does not wait for connections, which are made
// in the background (see WaitReady); ctx is not used for them.
func (m *Manager) Set(ctx context.Context, defs []Def) []error {
	var errs []error
	type group struct {
		cfg      agent.MCPServer
		contribs []contrib
	}
	want := map[string]*group{}
	var order []string
	for _, d := range defs {
		if d.Source == "" {
			d.Source = "config"
		}
		if err := validateDef(&d); err != nil {
			errs = append(errs, err)
			continue
		}
		c := contrib{agents: slices.Clone(d.Agents), source: d.Source}
		g := want[d.Name]
		switch {
		case g == nil:
			want[d.Name] = &group{cfg: d.Config, contribs: []contrib{c}}
			order = append(order, d.Name)
		case !sameConfig(g.cfg, d.Config):
			errs = append(errs, conflict(d.Name, g.contribs[0].source))
		default:
			g.contribs = append(g.contribs, c)
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return append(errs, fmt.Errorf("mcp: set: %w", ErrClosed))
	}
	for _, name := range sortedKeys(m.servers) {
		s := m.servers[name]
		g := want[name]
		switch {
		case g == nil:
			s.configured = nil
		case sameConfig(s.cfg, g.cfg):
			s.configured = g.contribs
			delete(want, name)
		case s.runtime != nil:
			// A server added at run time keeps running; the file's
			// definition is refused.
			s.configured = nil
			errs = append(errs, conflict(name, s.runtime.source))
			delete(want, name)
		default:
			continue // changed: restarted below
		}
		if s.configured == nil && s.runtime == nil {
			m.stop(s)
			continue
		}
		s.setView(s.view())
	}
	for _, name := range order {
		g := want[name]
		if g == nil {
			continue
		}
		if prev := m.servers[name]; prev != nil {
			m.stop(prev)
		}
		s := m.newServer(name, g.cfg)
		s.configured = g.contribs
		s.scope, s.skills = s.view()
		m.servers[name] = s
		m.start(s, nil)
	}
	return errs
}

// Add adds a server at run time (addMCPServer): it connects and lists the
// tools before returning, bounded by ctx and Config.Timeout (default 30s).
// On failure nothing is kept and the error says why. The server is
// persisted to StatePath. Adding a server that already exists with an
// identical configuration merges d.Agents into it; with a different one it
// fails with ErrConflict. A disabled server is kept without connecting.
func (m *Manager) Add(ctx context.Context, d Def) (Status, error) {
	if d.Source == "" {
		d.Source = "runtime"
	}
	if err := validateDef(&d); err != nil {
		return Status{}, err
	}
	d.Agents = slices.Clone(d.Agents)

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return Status{}, fmt.Errorf("mcp: add %q: %w", d.Name, ErrClosed)
	}
	if s := m.servers[d.Name]; s != nil {
		defer m.mu.Unlock()
		return m.mergeLocked(s, d)
	}
	if m.pending[d.Name] {
		m.mu.Unlock()
		return Status{}, fmt.Errorf("mcp: add %q: %w: it is being added right now", d.Name, ErrExists)
	}
	m.pending[d.Name] = true
	// Close waits for this Add, which may start goroutines.
	m.wg.Add(1)
	defer m.wg.Done()
	s := m.newServer(d.Name, d.Config)
	s.runtime = runtimeContrib(&d)
	s.scope, s.skills = s.view()
	m.mu.Unlock()

	var cn *conn
	var err error
	if s.prev != nil {
		// A server of that name is still stopping: its tools go first.
		select {
		case <-s.prev.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err == nil && !d.Config.Disabled {
		cctx, cancel := context.WithTimeout(ctx, s.timeout())
		cn, err = s.connect(cctx)
		cancel()
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pending, d.Name)
	if err == nil && m.closed {
		err = ErrClosed
	}
	if err != nil {
		s.cancel()
		if cn != nil {
			m.closeConn(cn)
		}
		return Status{}, fmt.Errorf("mcp: add %q: %w", d.Name, err)
	}
	if other := m.servers[d.Name]; other != nil {
		// Set defined it meanwhile.
		s.cancel()
		if cn != nil {
			m.closeConn(cn)
		}
		return m.mergeLocked(other, d)
	}
	m.servers[d.Name] = s
	if err := m.saveLocked(); err != nil {
		delete(m.servers, d.Name)
		s.cancel()
		if cn != nil {
			m.closeConn(cn)
		}
		return Status{}, fmt.Errorf("mcp: add %q: %w", d.Name, err)
	}
	if cn != nil {
		s.adopt(cn)
	}
	m.start(s, cn)
	return s.statusWith(s.sources()), nil
}

// mergeLocked adds d, a run-time definition, to the existing server s.
func (m *Manager) mergeLocked(s *server, d Def) (Status, error) {
	if !sameConfig(s.cfg, d.Config) {
		return Status{}, conflict(d.Name, s.sources())
	}
	old := s.runtime
	add := runtimeContrib(&d)
	if s.runtime != nil {
		add = &contrib{agents: mergeAgents(s.runtime.agents, add.agents), source: s.runtime.source,
			skills: mergeAgents(s.runtime.skills, add.skills)}
		if sameList(add.agents, old.agents) && sameList(add.skills, old.skills) {
			// Nothing new (a skill loaded again): no write.
			return s.statusWith(s.sources()), nil
		}
	}
	s.runtime = add
	if err := m.saveLocked(); err != nil {
		s.runtime = old
		return Status{}, fmt.Errorf("mcp: add %q: %w", d.Name, err)
	}
	s.setView(s.view())
	return s.statusWith(s.sources()), nil
}

// sameList reports whether two lists are equal, nil differing from empty.
func sameList(a, b []string) bool { return slices.Equal(a, b) && (a == nil) == (b == nil) }

// Remove removes a server added at run time (removeMCPServer) and deletes
// it from StatePath. A server defined in a configuration file is removed by
// editing that file: Remove fails with ErrConfigured. Remove returns once
// the server's tools are unregistered and its connection is closed, or when
// ctx ends.
func (m *Manager) Remove(ctx context.Context, name string) error {
	m.mu.Lock()
	s := m.servers[name]
	if s == nil {
		m.mu.Unlock()
		return fmt.Errorf("mcp: remove %q: %w", name, ErrNotFound)
	}
	if s.runtime == nil {
		m.mu.Unlock()
		return fmt.Errorf("mcp: remove %q: %w (%s): edit the file to remove it", name, ErrConfigured, s.sources())
	}
	old := s.runtime
	s.runtime = nil
	if err := m.saveLocked(); err != nil {
		s.runtime = old
		m.mu.Unlock()
		return fmt.Errorf("mcp: remove %q: %w", name, err)
	}
	if s.configured != nil {
		s.setView(s.view())
		m.mu.Unlock()
		return nil
	}
	m.stop(s)
	m.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcp: remove %q: removed, but still stopping: %w", name, ctx.Err())
	}
}

// List returns the status of every server, sorted by name.
func (m *Manager) List() []Status {
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, name := range sortedKeys(m.servers) {
		servers = append(servers, m.servers[name])
	}
	m.mu.Unlock()
	out := make([]Status, len(servers))
	for i, s := range servers {
		out[i] = s.status()
	}
	return out
}

// Status returns the status of the server called name.
func (m *Manager) Status(name string) (Status, bool) {
	s := m.lookup(name)
	if s == nil {
		return Status{}, false
	}
	return s.status(), true
}

// Tools returns the specs of the tools the server called name has
// registered now, sorted by name.
func (m *Manager) Tools(name string) ([]tool.Spec, error) {
	s := m.lookup(name)
	if s == nil {
		return nil, fmt.Errorf("mcp: tools %q: %w", name, ErrNotFound)
	}
	return s.specs(), nil
}

// WaitReady returns when every enabled server known now has connected once
// or failed its first attempt, or when ctx ends.
func (m *Manager) WaitReady(ctx context.Context) {
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	for _, s := range servers {
		select {
		case <-s.ready:
		case <-s.done:
		case <-ctx.Done():
			return
		}
	}
}

// CallTool calls the tool a server calls name (without the <server>__
// prefix), for example from a hook. c supplies the call id, agent, session
// and approval sent in _meta; it may be nil. A server that is not
// connected gives an error result, not an error.
func (m *Manager) CallTool(ctx context.Context, server, name string, args json.RawMessage, c *tool.Call) (tool.Result, error) {
	s := m.lookup(server)
	if s == nil {
		return tool.Result{}, fmt.Errorf("mcp: call %s on %q: %w", name, server, ErrNotFound)
	}
	return s.call(ctx, name, args, c)
}

// Close stops every connection and child process and waits for the
// Manager's goroutines. Servers added at run time stay in StatePath.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.cancel()
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

func (m *Manager) lookup(name string) *server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers[name]
}

// start runs s in the background; cn, if not nil, is its first connection.
// m.mu is held.
func (m *Manager) start(s *server, cn *conn) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		s.run(cn)
		m.stopped(s)
	}()
}

// stop removes s and ends its goroutine, which unregisters its tools and
// closes its connection. m.mu is held.
func (m *Manager) stop(s *server) {
	if m.servers[s.name] == s {
		delete(m.servers, s.name)
	}
	m.stopping[s.name] = s
	s.cancel()
}

// stopped forgets s once its goroutine has ended.
func (m *Manager) stopped(s *server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopping[s.name] == s {
		delete(m.stopping, s.name)
	}
}

// closeConn closes cn in the background, owned by the Manager.
func (m *Manager) closeConn(cn *conn) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		cn.close()
	}()
}

// saveLocked writes the run-time servers to StatePath. m.mu is held.
func (m *Manager) saveLocked() error {
	if m.opts.StatePath == "" {
		return nil
	}
	var defs []Def
	for _, name := range sortedKeys(m.servers) {
		s := m.servers[name]
		// A skill's servers come back when the skill is loaded again.
		if s.runtime != nil && !strings.HasPrefix(s.runtime.source, "skill:") {
			defs = append(defs, Def{Name: name, Config: s.cfg, Agents: s.runtime.agents, Source: s.runtime.source})
		}
	}
	return saveState(m.opts.StatePath, defs)
}

// validateDef checks d and fills in nothing but what it must.
func validateDef(d *Def) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("mcp: server %q: %w: %s", d.Name, ErrInvalid, fmt.Sprintf(format, args...))
	}
	if !agent.ValidServerName(d.Name) {
		return bad("the name must be 1 to 32 letters, digits, '-' or single '_', starting with a letter or digit")
	}
	c := &d.Config
	switch t := c.EffectiveTransport(); t {
	case agent.TransportStdio:
		if c.Command == "" {
			return bad("a stdio server needs a command")
		}
		if c.URL != "" {
			return bad("a stdio server has a command, not a url")
		}
		if len(c.AllowNetworks) > 0 {
			return bad("allow_networks is for an http or sse server")
		}
	case agent.TransportHTTP, agent.TransportSSE:
		if c.URL == "" {
			return bad("a %s server needs a url", t)
		}
		if c.Command != "" {
			return bad("a %s server has a url, not a command", t)
		}
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("url %q is not an http or https URL", c.URL)
		}
		if _, err := allowPrefixes(c.AllowNetworks); err != nil {
			return bad("%v", err)
		}
	case "":
		return bad("set command (stdio) or url (http, sse)")
	default:
		return bad("unknown transport %q: want stdio, http or sse", t)
	}
	if c.Kind != "" && !validKind(c.Kind) {
		return bad("unknown kind %q: want model, context, action, postprocess or server", c.Kind)
	}
	for name, k := range c.Kinds {
		if !validKind(k) {
			return bad("kinds.%s: unknown kind %q", name, k)
		}
	}
	if c.Timeout < 0 {
		return bad("negative timeout")
	}
	for _, a := range d.Agents {
		if a == "" {
			return bad("empty agent id")
		}
	}
	return nil
}

func conflict(name, source string) error {
	return fmt.Errorf("mcp: %w: server %q is already defined by %s with a different configuration", ErrConflict, name, source)
}

// sameConfig reports whether two configurations are the same, treating nil
// and empty lists and maps alike.
func sameConfig(a, b agent.MCPServer) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// mergeAgents is the union of two agent lists; nil (node-wide) wins.
func mergeAgents(a, b []string) []string {
	if a == nil || b == nil {
		return nil
	}
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func joinSources(cs []contrib, rt *contrib) string {
	var src []string
	for _, c := range cs {
		src = append(src, c.source)
	}
	if rt != nil {
		src = append(src, rt.source)
	}
	return strings.Join(src, ",")
}
