package mcpserver

import (
	"agentd/internal/gateway"
	"agentd/internal/hostheader"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HandlerOptions configure the streamable HTTP handler. The zero value
// serves loopback clients only.
type HandlerOptions struct {
	// AllowedHosts lists the Host header values accepted. An entry without
	// a port ("localhost", "127.0.0.1", "[::1]", "agentd.example.com")
	// matches that host with any port; an entry with a port matches only
	// that port; the entry "" matches a request without a host (one made
	// over a unix socket). Matching ignores case. Nil means localhost,
	// 127.0.0.1 and [::1] with any port, and "".
	AllowedHosts []string
	// AllowedOrigins lists the Origin header values accepted, such as
	// "https://console.example.com" (scheme, host and port, no path).
	// Requests without an Origin header are not affected. Nil means none:
	// any request that carries an Origin header, which browsers add to
	// cross-site requests, is refused.
	AllowedOrigins []string
	// SessionTimeout closes an MCP session that has sent no request for
	// this long; its client starts a new one. Zero means one hour; a
	// negative value keeps sessions until the client ends them or Close.
	SessionTimeout time.Duration
}

const defaultSessionTimeout = time.Hour

// Handler returns an http.Handler serving MCP over streamable HTTP, in
// stateful mode: each client gets a session (the Mcp-Session-Id header),
// which is what lets the server push notifications/tools/list_changed on the
// client's event stream when Sync changes the tools. Host and Origin are
// checked first; a request failing either check gets 403 Forbidden.
func (s *Server) Handler(o *HandlerOptions) http.Handler {
	var opts HandlerOptions
	if o != nil {
		opts = *o
	}
	timeout := opts.SessionTimeout
	switch {
	case timeout == 0:
		timeout = defaultSessionTimeout
	case timeout < 0:
		timeout = 0
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		if s.ctx.Err() != nil {
			return nil // closed: the SDK answers 400
		}
		return s.mcp
	}, &mcp.StreamableHTTPOptions{
		Logger:         slog.New(minLevel{h: s.log.Handler(), min: slog.LevelWarn}),
		SessionTimeout: timeout,
		// The guard below checks Host with the configured allow-list; the
		// SDK's own loopback check would override a deliberate
		// AllowedHosts entry.
		DisableLocalhostProtection: true,
	})
	return newGuard(h, opts.AllowedHosts, opts.AllowedOrigins, s.log)
}

// Guard wraps next in the Host and Origin guard of o (nil: loopback
// hosts, no origins), for other MCP servers agentd serves over HTTP.
func Guard(next http.Handler, o *HandlerOptions, log *slog.Logger) http.Handler {
	if o == nil {
		o = &HandlerOptions{}
	}
	return newGuard(next, o.AllowedHosts, o.AllowedOrigins, log)
}

// Why the guard refuses a request: 403 forbidden, as the gateway's table
// of errors says it.
var (
	errHost   = fmt.Errorf("%w: Host not allowed", gateway.ErrForbidden)
	errOrigin = fmt.Errorf("%w: Origin not allowed", gateway.ErrForbidden)
)

// guard refuses requests whose Host or Origin is not allowed: the defense
// against DNS rebinding, where a web page on evil.example resolves its own
// name to 127.0.0.1 and so reaches a local server with Host: evil.example.
type guard struct {
	next    http.Handler
	hosts   []hostRule
	origins map[string]bool
}

// hostRule matches a Host header: host (lowercase, IPv6 in brackets) and,
// if port is not "", exactly that port.
type hostRule struct {
	host, port string
}

func newGuard(next http.Handler, hosts, origins []string, log *slog.Logger) *guard {
	if hosts == nil {
		hosts = []string{"localhost", "127.0.0.1", "[::1]", ""} // loopback only
	}
	g := &guard{next: next, origins: make(map[string]bool, len(origins))}
	for _, h := range hosts {
		host, port, ok := hostheader.Split(h)
		if !ok {
			log.Warn("mcp: ignoring an allowed host that is not host or host:port", "host", h)
			continue
		}
		g.hosts = append(g.hosts, hostRule{host: host, port: port})
	}
	for _, o := range origins {
		g.origins[hostheader.NormalizeOrigin(o)] = true
	}
	return g
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hostAllowed(r.Host) {
		gateway.WriteError(w, errHost)
		return
	}
	if vals, ok := r.Header["Origin"]; ok {
		for _, v := range vals {
			if !g.originAllowed(v) {
				gateway.WriteError(w, errOrigin)
				return
			}
		}
	}
	g.next.ServeHTTP(w, r)
}

func (g *guard) hostAllowed(h string) bool {
	host, port, ok := hostheader.Split(h)
	if !ok {
		return false
	}
	for _, rule := range g.hosts {
		if rule.host == host && (rule.port == "" || rule.port == port) {
			return true
		}
	}
	return false
}

func (g *guard) originAllowed(o string) bool {
	return o != "" && g.origins[hostheader.NormalizeOrigin(o)]
}
