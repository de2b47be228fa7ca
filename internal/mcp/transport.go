package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"agentd/internal/agent"
	"agentd/internal/netguard"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn is one live session with a server.
type conn struct {
	cs     *sdk.ClientSession
	ctx    context.Context // ends when the connection is closed
	cancel context.CancelFunc
	proc   *process      // the child process of a stdio server
	dead   chan struct{} // closed when the session has ended
	// waitErr is why the session ended; set before dead is closed.
	waitErr error
	grace   time.Duration
	// tools is the server's last tool list; guarded by the server's mu
	// once the connection is adopted.
	tools []*sdk.Tool

	closeOnce sync.Once
}

func (c *conn) pid() int {
	if c.proc == nil {
		return 0
	}
	return c.proc.pid
}

// close ends the session: a stdio server gets its stdin closed, then
// StopGrace to exit before it is terminated. It returns once the session
// has ended and the child is reaped.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		if c.proc != nil {
			c.proc.stop(c.grace)
		}
		_ = c.cs.Close()
		<-c.dead
		if c.proc != nil {
			c.proc.drainStderr()
		}
	})
}

// deathReason says why a session ended by itself.
func (c *conn) deathReason() string {
	if c.proc != nil {
		return c.proc.exitReason()
	}
	if c.waitErr != nil {
		return fmt.Sprintf("connection closed: %v", c.waitErr)
	}
	return "connection closed by the server"
}

// connect opens a session with the server, initializes it and lists its
// tools. ctx bounds the whole; the session itself lives until it is closed
// or the server is stopped.
func (s *server) connect(ctx context.Context) (*conn, error) {
	life, cancel := context.WithCancel(s.ctx)
	t, proc, err := s.m.transport(life, s.name, s.cfg)
	if err != nil {
		cancel()
		return nil, err
	}
	fail := func(err error) error {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("no answer within %s: %w", s.timeout(), err)
		}
		if proc != nil {
			proc.stop(s.m.opts.StopGrace)
			proc.drainStderr()
			err = proc.explain(err)
		}
		return err
	}
	client := sdk.NewClient(s.m.impl, &sdk.ClientOptions{
		Logger:       s.log,
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case s.listChanged <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &lifeTransport{t: t, life: life, abort: cancel},
		&sdk.ClientSessionOptions{ProtocolVersion: s.m.opts.ProtocolVersion})
	if err != nil {
		cancel()
		return nil, fail(fmt.Errorf("initializing: %w", err))
	}
	cn := &conn{cs: cs, ctx: life, cancel: cancel, proc: proc, dead: make(chan struct{}), grace: s.m.opts.StopGrace}
	s.m.wg.Add(1)
	go func() {
		defer s.m.wg.Done()
		cn.waitErr = cs.Wait()
		close(cn.dead)
	}()
	tools, err := listTools(ctx, cs)
	if err != nil {
		err = fail(err)
		cn.close()
		return nil, err
	}
	cn.tools = tools
	return cn, nil
}

// transport returns the transport for cfg; for stdio it starts the process.
// life is the connection's lifetime.
func (m *Manager) transport(life context.Context, name string, cfg agent.MCPServer) (sdk.Transport, *process, error) {
	if m.opts.dial != nil {
		t, err := m.opts.dial(life, name, cfg)
		return t, nil, err
	}
	switch cfg.EffectiveTransport() {
	case agent.TransportStdio:
		p, err := startProcess(name, cfg, m.log.With("server", name))
		if err != nil {
			return nil, nil, err
		}
		return &sdk.IOTransport{Reader: newLimitReader(p.stdout, framedLines, m.limits), Writer: p.stdin}, p, nil
	case agent.TransportHTTP:
		hc, err := httpClientFor(name, cfg)
		if err != nil {
			return nil, nil, err
		}
		context.AfterFunc(life, hc.CloseIdleConnections)
		return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: m.limitBodies(hc)}, nil, nil
	case agent.TransportSSE:
		hc, err := httpClientFor(name, cfg)
		if err != nil {
			return nil, nil, err
		}
		context.AfterFunc(life, hc.CloseIdleConnections)
		return &sdk.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: m.limitBodies(hc)}, nil, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown transport %q", ErrInvalid, cfg.EffectiveTransport())
}

// lifeTransport connects its transport with the connection's lifetime
// rather than the connect deadline (a legacy SSE stream is tied to the
// context it was opened with), aborting it if the deadline passes first.
type lifeTransport struct {
	t     sdk.Transport
	life  context.Context
	abort context.CancelFunc
}

func (l *lifeTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stop := context.AfterFunc(ctx, l.abort)
	defer stop()
	return l.t.Connect(l.life)
}

// httpClientFor is the client of one http or sse server: it dials through
// an SSRF guard that lets it reach only public addresses and the ranges
// cfg.AllowNetworks opens, on every connection and redirect; it talks only
// to the origin of cfg.URL (see originTransport) and sends cfg's headers
// there. It uses no proxy: the guard must see the address it connects to.
func httpClientFor(name string, cfg agent.MCPServer) (*http.Client, error) {
	allow, err := allowPrefixes(cfg.AllowNetworks)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: url: %v", ErrInvalid, err)
	}
	g := netguard.New(&netguard.Options{AllowPrefixes: allow, DialTimeout: 10 * time.Second})
	d := g.Dialer()
	d.Control = func(network, address string, c syscall.RawConn) error {
		err := g.Control(network, address, c)
		if err == nil {
			return nil
		}
		return fmt.Errorf("%w; if MCP server %s is meant to be there, add to its entry (under mcp_servers in agentd.yaml or the agent file): allow_networks: [%s]",
			err, name, hostPrefix(address))
	}
	tr := g.Transport()
	tr.DialContext = d.DialContext
	tr.MaxIdleConnsPerHost = 16
	h := make(http.Header, len(cfg.Headers)+len(cfg.HeadersEnv))
	for k, v := range cfg.Headers {
		h.Set(k, v)
	}
	for k, env := range cfg.HeadersEnv {
		v, ok := os.LookupEnv(env)
		if !ok {
			return nil, fmt.Errorf("header %s: environment variable %s is not set", k, env)
		}
		h.Set(k, v)
	}
	rt := &originTransport{base: tr, name: name, origin: origin(u), h: h}
	return &http.Client{Transport: rt, CheckRedirect: netguard.CheckRedirect}, nil
}

// allowPrefixes parses a server's allow_networks.
func allowPrefixes(nets []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(nets))
	for _, n := range nets {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return nil, fmt.Errorf("allow_networks: %q is not a CIDR range such as 127.0.0.1/32", n)
		}
		out = append(out, p)
	}
	return out, nil
}

// hostPrefix is the single-address range of an "ip:port" address: what
// allow_networks needs to reach that one address.
func hostPrefix(address string) string {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return address
	}
	a := ap.Addr().WithZone("").Unmap()
	return netip.PrefixFrom(a, a.BitLen()).String()
}

// originTransport confines a server's requests to one origin, its
// configured URL's, and adds the configured headers to them. A request for
// any other origin (another scheme, host or port) is refused before
// anything is sent: a redirect elsewhere, or a legacy SSE server's message
// endpoint on another host, gets neither the headers (secrets as often as
// not; they are never logged) nor the tool arguments and approvals meant
// for this server. Such a server is not followed at all: its url must name
// where it answers.
type originTransport struct {
	base   http.RoundTripper
	name   string
	origin string      // see origin
	h      http.Header // may be empty
}

// CloseIdleConnections closes the base transport's idle connections.
func (t *originTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *originTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if o := origin(r.URL); o != t.origin {
		if r.Body != nil {
			r.Body.Close() // as a RoundTripper must, even on error
		}
		return nil, fmt.Errorf("MCP server %s is at %s; agentd sends it nothing at %s, another origin (a redirect or an SSE message endpoint pointing there is not followed: give the server's url as the address it answers at)",
			t.name, t.origin, o)
	}
	if len(t.h) == 0 {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// origin is the origin of u as browsers compare them: scheme, host and
// port, in lower case, the default port written out.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// isRPCError reports whether err is an error answer from the server, as
// opposed to a failure to reach it.
func isRPCError(err error) bool {
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case codeClientClosing, codeServerClosing, codeRejected:
		return false // raised on this side, not answered by the server
	}
	return true
}

// Codes of the errors the SDK's JSON-RPC layer raises locally.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005 // the transport refused to send the request
)
