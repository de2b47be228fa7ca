package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"agentd/internal/agent"
	"agentd/internal/tool"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits on what a server may send.
const (
	maxToolPages = 1000
	maxTools     = 10000
	// pingTimeout bounds a health check.
	pingTimeout = 10 * time.Second
	// pingInterval is how often an HTTP server is checked while idle; a
	// stdio server's death is seen when its process exits.
	pingInterval = 30 * time.Second
)

// server is one server name: its definitions, its current connection and
// the goroutine that keeps it connected.
type server struct {
	m    *Manager
	name string
	cfg  agent.MCPServer
	log  *slog.Logger

	ctx       context.Context // ends when the server is stopped
	cancel    context.CancelFunc
	done      chan struct{} // closed when run returns
	ready     chan struct{} // closed after the first connection attempt
	readyOnce sync.Once
	prev      *server // a server of the same name that must stop first

	listChanged chan struct{} // the server's tool list changed
	suspect     chan struct{} // a call failed in a way that may mean the connection is dead

	// Guarded by m.mu.
	configured []contrib // from Set
	runtime    *contrib  // from Add

	conn atomic.Pointer[conn] // nil unless connected

	mu       sync.Mutex
	scope    []string // the agents that see its tools; nil: every agent
	skills   []string // the skills whose loading sessions alone see them; nil: not gated
	state    string
	since    time.Time
	lastErr  string
	connects int
	restarts int
	pid      int
	info     *sdk.Implementation
	tools    map[string]*remoteTool // registered tools, by the server's own name
	caps     *sdk.ServerCapabilities
}

// newServer returns a server, not yet started. m.mu is held.
func (m *Manager) newServer(name string, cfg agent.MCPServer) *server {
	s := &server{
		m:           m,
		name:        name,
		cfg:         cfg,
		log:         m.log.With("server", name),
		done:        make(chan struct{}),
		ready:       make(chan struct{}),
		listChanged: make(chan struct{}, 1),
		suspect:     make(chan struct{}, 1),
		state:       StateConnecting,
		since:       time.Now(),
		tools:       map[string]*remoteTool{},
	}
	if cfg.Disabled {
		s.state = StateDisabled
	}
	s.ctx, s.cancel = context.WithCancel(m.ctx)
	// A server of the same name still stopping must be gone before this
	// one registers tools.
	s.prev = m.stopping[name]
	return s
}

func (s *server) timeout() time.Duration {
	if d := s.cfg.Timeout.D(); d > 0 {
		return d
	}
	return DefaultTimeout
}

// view is who sees the server's tools: the union of the definitions'
// agents, and the skills that alone make them visible (only when every
// definition is a skill's). m.mu is held.
func (s *server) view() (agents, skills []string) {
	if len(s.configured) == 0 && s.runtime != nil {
		skills = slices.Clone(s.runtime.skills)
	}
	return s.effectiveAgents(), skills
}

// effectiveAgents is the union of the definitions' agents. m.mu is held.
func (s *server) effectiveAgents() []string {
	var out []string
	first := true
	add := func(a []string) {
		if first {
			out, first = slices.Clone(a), false
			if out != nil {
				slices.Sort(out)
				out = slices.Compact(out)
			}
			return
		}
		out = mergeAgents(out, a)
	}
	for _, c := range s.configured {
		add(c.agents)
	}
	if s.runtime != nil {
		add(s.runtime.agents)
	}
	return out
}

// sources names where the server is defined. m.mu is held.
func (s *server) sources() string { return joinSources(s.configured, s.runtime) }

func (s *server) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

// run keeps the server connected until it is stopped; first, if not nil, is
// a connection already made (and adopted) by Add.
func (s *server) run(first *conn) {
	defer close(s.done)
	defer s.markReady()
	if s.prev != nil {
		select {
		case <-s.prev.done:
		case <-s.ctx.Done():
			return
		}
	}
	if s.cfg.Disabled {
		s.markReady()
		<-s.ctx.Done()
		return
	}
	cn := first
	attempt := 0
	for {
		if cn == nil {
			ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
			c, err := s.connect(ctx)
			cancel()
			if err != nil {
				if s.ctx.Err() != nil {
					return
				}
				s.setDown(err.Error())
				s.log.Warn("mcp: connecting failed", "error", err)
				s.markReady()
				attempt++
				if !sleep(s.ctx, s.m.backoff(attempt)) {
					return
				}
				continue
			}
			cn = c
			s.adopt(cn)
		}
		s.markReady()
		reason := s.serve(cn)
		s.drop(cn, reason)
		cn = nil
		if s.ctx.Err() != nil {
			return
		}
		attempt = 1
		if !sleep(s.ctx, s.m.backoff(attempt)) {
			return
		}
	}
}

// serve watches a live connection until it dies or the server is stopped,
// following tool list changes; it returns why the connection ended.
func (s *server) serve(cn *conn) string {
	var tick <-chan time.Time
	if cn.proc == nil {
		t := time.NewTicker(pingInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-s.ctx.Done():
			return "stopped"
		case <-cn.dead:
			return cn.deathReason()
		case <-s.listChanged:
			ctx, cancel := context.WithTimeout(s.ctx, s.timeout())
			tools, err := listTools(ctx, cn.cs)
			cancel()
			if err != nil {
				if s.ctx.Err() != nil {
					return "stopped"
				}
				if !isConnErr(err) && s.ping(cn) == nil {
					s.log.Warn("mcp: listing changed tools failed", "error", err)
					continue
				}
				return fmt.Sprintf("listing tools failed: %v", err)
			}
			s.mu.Lock()
			s.syncLocked(tools)
			s.mu.Unlock()
		case <-s.suspect:
			if err := s.ping(cn); err != nil {
				return s.pingFailed(cn, err)
			}
		case <-tick:
			if err := s.ping(cn); err != nil {
				return s.pingFailed(cn, err)
			}
		}
	}
}

// pingFailed says why a connection whose ping failed is given up: if the
// session is ending anyway (a process that exited), its own reason.
func (s *server) pingFailed(cn *conn, err error) string {
	if isConnErr(err) {
		select {
		case <-cn.dead:
			return cn.deathReason()
		case <-time.After(time.Second):
		}
	}
	return fmt.Sprintf("server stopped answering: %v", err)
}

func (s *server) ping(cn *conn) error {
	ctx, cancel := context.WithTimeout(s.ctx, pingTimeout)
	defer cancel()
	return cn.cs.Ping(ctx, nil)
}

// adopt makes cn the server's connection and registers its tools.
func (s *server) adopt(cn *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connects++
	if s.connects > 1 {
		s.restarts++
	}
	s.state, s.since = StateConnected, time.Now()
	s.pid = cn.pid()
	s.info, s.caps = nil, nil
	if r := cn.cs.InitializeResult(); r != nil {
		s.info, s.caps = r.ServerInfo, r.Capabilities
	}
	s.conn.Store(cn)
	s.syncLocked(cn.tools)
	s.log.Info("mcp: connected", "tools", len(s.tools), "pid", s.pid, "restarts", s.restarts)
}

// drop unregisters the tools of a connection that ended and closes it.
func (s *server) drop(cn *conn, reason string) {
	s.mu.Lock()
	s.conn.Store(nil)
	s.unregisterAllLocked()
	s.pid = 0
	stopped := s.ctx.Err() != nil
	if !stopped {
		s.state, s.since, s.lastErr = StateDown, time.Now(), reason
	}
	s.mu.Unlock()
	if !stopped {
		s.log.Warn("mcp: connection lost; reconnecting", "reason", reason)
	}
	cn.close()
}

func (s *server) setDown(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateDown {
		s.since = time.Now()
	}
	s.state, s.lastErr = StateDown, reason
}

// setView re-registers the tools if the agents or skills that see them
// changed. m.mu is held.
func (s *server) setView(scope, skills []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sameList(scope, s.scope) && sameList(skills, s.skills) {
		return
	}
	s.scope, s.skills = scope, skills
	if cn := s.conn.Load(); cn != nil {
		s.unregisterAllLocked()
		s.syncLocked(cn.tools)
	}
}

// syncLocked registers list's tools, unregisters the ones that are gone and
// re-registers the ones that changed. s.mu is held.
func (s *server) syncLocked(list []*sdk.Tool) {
	if cn := s.conn.Load(); cn != nil {
		cn.tools = list
	}
	want := s.remoteTools(list)
	for remote, old := range s.tools {
		if nt, ok := want[remote]; ok && sameSpec(old.spec, nt.spec) {
			delete(want, remote)
			continue
		}
		s.m.opts.Tools.Unregister(old.spec.Name)
		delete(s.tools, remote)
	}
	for _, remote := range sortedKeys(want) {
		t := want[remote]
		if err := s.m.opts.Tools.Register(t); err != nil {
			s.log.Warn("mcp: tool skipped", "tool", remote, "error", err)
			continue
		}
		s.tools[remote] = t
	}
}

func (s *server) unregisterAllLocked() {
	for remote, t := range s.tools {
		s.m.opts.Tools.Unregister(t.spec.Name)
		delete(s.tools, remote)
	}
}

func (s *server) status() Status {
	s.m.mu.Lock()
	src := s.sources()
	s.m.mu.Unlock()
	return s.statusWith(src)
}

// statusWith is the status, given the sources (read under m.mu).
func (s *server) statusWith(src string) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		Name:      s.name,
		Transport: s.cfg.EffectiveTransport(),
		Source:    src,
		State:     s.state,
		Agents:    slices.Clone(s.scope),
		Skills:    slices.Clone(s.skills),
		Tools:     len(s.tools),
		Restarts:  s.restarts,
		LastError: s.lastErr,
		PID:       s.pid,
		Since:     s.since,
	}
	if s.info != nil && s.state == StateConnected {
		st.ServerName, st.ServerVersion = s.info.Name, s.info.Version
	}
	return st
}

func (s *server) specs() []tool.Spec {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]tool.Spec, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t.spec)
	}
	slices.SortFunc(out, func(a, b tool.Spec) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// session returns the live session, or an error saying why there is none.
func (s *server) session() (*conn, error) {
	if cn := s.conn.Load(); cn != nil {
		return cn, nil
	}
	s.mu.Lock()
	disabled := s.state == StateDisabled
	s.mu.Unlock()
	return nil, &notConnectedError{name: s.name, disabled: disabled}
}

// notConnectedError says a server is not connected; it is ErrNotConnected.
type notConnectedError struct {
	name     string
	disabled bool
}

func (e *notConnectedError) Error() string {
	if e.disabled {
		return fmt.Sprintf("server %s is disabled", e.name)
	}
	return fmt.Sprintf("server %s is not connected; reconnecting", e.name)
}

func (e *notConnectedError) Is(target error) bool { return target == ErrNotConnected }

// call calls the server's tool remote.
func (s *server) call(ctx context.Context, remote string, args json.RawMessage, c *tool.Call) (tool.Result, error) {
	cn, err := s.session()
	if err != nil {
		return tool.Result{Output: err.Error(), IsError: true}, nil
	}
	params := &sdk.CallToolParams{Name: remote, Arguments: callArgs(args)}
	if c != nil {
		meta, err := callMeta(c, audience(s.name, s.cfg), remote, callArgs(args))
		if err != nil {
			return tool.Result{}, fmt.Errorf("mcp: %s: call %s: %w", s.name, remote, err)
		}
		params.Meta = meta
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(cn.ctx, cancel)
	defer stop()
	res, err := cn.cs.CallTool(ctx, params)
	if err != nil {
		if ctx.Err() == nil && !isRPCError(err) {
			s.suspectConn()
		}
		if cn.ctx.Err() != nil || isConnErr(err) {
			return tool.Result{Output: fmt.Sprintf("server %s disconnected during the call; reconnecting", s.name), IsError: true}, nil
		}
		return tool.Result{}, fmt.Errorf("mcp: %s: call %s: %w", s.name, remote, err)
	}
	return convertResult(res), nil
}

func (s *server) suspectConn() {
	select {
	case s.suspect <- struct{}{}:
	default:
	}
}

// callArgs is the arguments to send: an object, {} when empty.
func callArgs(args json.RawMessage) json.RawMessage {
	if len(args) == 0 || string(args) == "null" {
		return json.RawMessage("{}")
	}
	return args
}

// Keys of the _meta agentd sends with every tool call.
const (
	MetaApproval = "agentd/approval"
	MetaAgent    = "agentd/agent"
	MetaSession  = "agentd/session"
	MetaCallID   = "agentd/call_id"
	// MetaKind in a tool's _meta declares its lifecycle kind.
	MetaKind = "agentd/kind"
)

// callMeta is the _meta of a call: its approval (an object, signed for
// this call: the server's audience, its own name for the tool and the
// arguments as sent), agent, session and id, each when present.
func callMeta(c *tool.Call, audience, remote string, args json.RawMessage) (sdk.Meta, error) {
	meta := make(sdk.Meta, 4)
	if c.Approval != nil {
		a, err := c.Approval.Approve(audience, remote, args)
		if err != nil {
			return nil, fmt.Errorf("approval: %w", err)
		}
		if a = trimSpace(a); len(a) > 0 && string(a) != "null" {
			obj, err := approvalObject(a)
			if err != nil {
				return nil, err
			}
			meta[MetaApproval] = obj
		}
	}
	if c.Agent != "" {
		meta[MetaAgent] = c.Agent
	}
	if c.Session != "" {
		meta[MetaSession] = c.Session
	}
	if c.ID != "" {
		meta[MetaCallID] = c.ID
	}
	return meta, nil
}

// audience is what approvals sent to a server name it by: the URL of an
// http or sse server without its query and fragment (which may hold
// secrets), or the name of a stdio server.
func audience(name string, cfg agent.MCPServer) string {
	if cfg.URL == "" {
		return name
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return cfg.URL
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// approvalObject returns the approval as a JSON object. It may arrive as
// an object or as a string holding one.
func approvalObject(a []byte) (json.RawMessage, error) {
	if a[0] == '"' {
		var s string
		if err := json.Unmarshal(a, &s); err != nil {
			return nil, fmt.Errorf("approval is not valid JSON: %v", err)
		}
		a = trimSpace([]byte(s))
	}
	if len(a) == 0 || a[0] != '{' || !json.Valid(a) {
		return nil, errors.New("approval is not a JSON object")
	}
	return json.RawMessage(a), nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// listTools lists every tool, following pagination cursors.
func listTools(ctx context.Context, cs *sdk.ClientSession) ([]*sdk.Tool, error) {
	var out []*sdk.Tool
	params := &sdk.ListToolsParams{}
	seen := map[string]bool{}
	for range maxToolPages {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		out = append(out, res.Tools...)
		if len(out) > maxTools {
			return nil, fmt.Errorf("listing tools: more than %d tools", maxTools)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("listing tools: the server repeated cursor %q", res.NextCursor)
		}
		seen[res.NextCursor] = true
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
	return nil, fmt.Errorf("listing tools: more than %d pages", maxToolPages)
}

// backoff is the delay before reconnection attempt n (1, 2, ...):
// exponential, capped, with full jitter.
func (m *Manager) backoff(n int) time.Duration {
	d := m.opts.MinBackoff
	for i := 1; i < n && d < m.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, m.opts.MaxBackoff)
	return rand.N(d) + 1
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// isConnErr reports whether err means the connection is gone.
func isConnErr(err error) bool {
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
