// Package netguard keeps agentd's outbound connections away from the
// machine it runs on and the networks behind it (server-side request
// forgery): HTTP fetched by tools, webhooks, MCP servers over HTTP and
// attachments all dial through a Guard.
//
// The check happens at the dialer, on the IP address actually being
// connected to, after name resolution: a host name that resolves (or is
// re-bound) to a private address, an IP written in an unusual form
// (http://2130706433/, http://0x7f.1/) and every hop of a redirect chain
// are all checked the same way. Loopback, private, link-local, cloud
// metadata, CGNAT, multicast, broadcast and other special-purpose ranges are
// blocked, in IPv4 and in every IPv6 form that embeds an IPv4 address.
// Ranges a deployment trusts (a local MCP server, a test server) are
// allowed explicitly with Options.AllowPrefixes.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Errors.
var (
	// ErrBlocked is wrapped by the error a Guard returns for a destination
	// in a blocked range.
	ErrBlocked = errors.New("destination not allowed")
	// ErrBadURL is wrapped by CheckURL's errors.
	ErrBadURL = errors.New("url not allowed")
	// ErrTooManyRedirects is wrapped by CheckRedirect's error for the
	// redirect after MaxRedirects.
	ErrTooManyRedirects = errors.New("too many redirects")
)

// MaxRedirects is how many redirects a Client follows.
const MaxRedirects = 5

// Options configures a Guard. The zero value blocks every special range.
type Options struct {
	// AllowPrefixes are ranges that may be reached even though they are
	// blocked by default, such as 127.0.0.1/32 for a local server. Give
	// IPv4 ranges in IPv4 form: addresses are unmapped before matching.
	AllowPrefixes []netip.Prefix
	// DialTimeout bounds establishing one connection; default 30s.
	DialTimeout time.Duration
}

// Guard decides which IP addresses outbound connections may reach. It is
// immutable and safe for concurrent use.
type Guard struct {
	allow       []netip.Prefix
	dialTimeout time.Duration
}

// New returns a Guard. opts may be nil.
func New(opts *Options) *Guard {
	var o Options
	if opts != nil {
		o = *opts
	}
	g := &Guard{dialTimeout: o.DialTimeout}
	for _, p := range o.AllowPrefixes {
		if p.IsValid() {
			g.allow = append(g.allow, p.Masked())
		}
	}
	if g.dialTimeout <= 0 {
		g.dialTimeout = 30 * time.Second
	}
	return g
}

// Check returns nil if ip may be connected to, or an error wrapping
// ErrBlocked that names the range it is in.
func (g *Guard) Check(ip netip.Addr) error {
	ip = ip.WithZone("").Unmap()
	for _, p := range g.allow {
		if p.Contains(ip) {
			return nil
		}
	}
	if what, blocked := Blocked(ip); blocked {
		return fmt.Errorf("%w: %s is %s", ErrBlocked, ip, what)
	}
	return nil
}

// Control is a net.Dialer Control function: it runs after name resolution,
// before each connection, and refuses addresses Check refuses. An address
// that is not an IP and port (a Unix socket path) is refused too.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s address %q is not an IP address and port", ErrBlocked, network, address)
	}
	return g.Check(ap.Addr())
}

// Dialer returns a new net.Dialer whose every connection is checked.
func (g *Guard) Dialer() *net.Dialer {
	return &net.Dialer{
		Timeout:   g.dialTimeout,
		KeepAlive: 30 * time.Second,
		Control:   g.Control,
	}
}

// Transport returns a new http.Transport that dials through the Guard and
// uses no proxy: a proxy would make the connection the guard sees the
// proxy's, so proxy environment variables (HTTP_PROXY, HTTPS_PROXY,
// ALL_PROXY) are deliberately ignored.
func (g *Guard) Transport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           g.Dialer().DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Client returns a new http.Client that uses Transport, follows at most
// MaxRedirects redirects and only to http and https URLs without
// credentials (see CheckRedirect), and gives up on a whole exchange after
// timeout (none if zero).
func (g *Guard) Client(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport:     g.Transport(),
		CheckRedirect: CheckRedirect,
		Timeout:       timeout,
	}
}

// CheckRedirect is an http.Client CheckRedirect function: it stops after
// MaxRedirects redirects and applies CheckURL to each target. The address
// each target resolves to is checked at the dialer like any other.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("%w: stopped after %d", ErrTooManyRedirects, MaxRedirects)
	}
	if err := CheckURL(req.URL); err != nil {
		return fmt.Errorf("redirect: %w", err)
	}
	return nil
}

// CheckURL accepts only absolute http and https URLs with a host and no
// user name or password (credentials would end up in logs and events, and
// "http://trusted@evil/" misleads people reading it).
func CheckURL(u *url.URL) error {
	switch {
	case u == nil:
		return fmt.Errorf("%w: no URL", ErrBadURL)
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" {
			return fmt.Errorf("%w: %q has no scheme; use http:// or https://", ErrBadURL, u.Redacted())
		}
		return fmt.Errorf("%w: scheme %q is not supported; use http or https", ErrBadURL, u.Scheme)
	case u.User != nil:
		return fmt.Errorf("%w: user names and passwords in URLs are not allowed", ErrBadURL)
	case u.Hostname() == "":
		return fmt.Errorf("%w: %q has no host", ErrBadURL, u.String())
	}
	return nil
}
