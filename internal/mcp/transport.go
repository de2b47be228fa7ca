package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"agentd/internal/agent"

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
		hc, err := m.httpClientFor(cfg)
		if err != nil {
			return nil, nil, err
		}
		return &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: m.limitBodies(hc)}, nil, nil
	case agent.TransportSSE:
		hc, err := m.httpClientFor(cfg)
		if err != nil {
			return nil, nil, err
		}
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

// newHTTPClient is the base client for the http and sse transports.
func newHTTPClient(hc *http.Client) *http.Client {
	if hc != nil {
		c := *hc
		c.Timeout = 0
		return &c
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: tr}
}

// httpClientFor is the client for one server: the base client sending its
// headers.
func (m *Manager) httpClientFor(cfg agent.MCPServer) (*http.Client, error) {
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
	c := *m.http
	if len(h) > 0 {
		base := c.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		c.Transport = &headerTransport{base: base, h: h}
	}
	return &c, nil
}

// headerTransport adds fixed headers to every request. The values are
// secrets as often as not: they are never logged.
type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
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
