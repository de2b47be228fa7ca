package agent

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Gateway configures the HTTP API on TCP (agentd.yaml `gateway:`). The
// unix socket in the data directory is served whatever this says.
type Gateway struct {
	// Listen is the TCP address of the API, host:port (default
	// 127.0.0.1:7420). "off" (or "") serves no TCP.
	Listen string `yaml:"listen" json:"listen,omitempty"`
	// AllowedHosts are host names (or IP addresses) accepted in the Host
	// header besides localhost, 127.0.0.1, [::1] and the listen host: the
	// names clients use to reach this agentd, such as agentd.example.com.
	AllowedHosts []string `yaml:"allowed_hosts" json:"allowed_hosts,omitempty"`
	// CORSOrigins are the web origins (scheme://host[:port]) of pages on
	// other sites that may call the API from a browser. Empty: none.
	CORSOrigins []string `yaml:"cors_origins" json:"cors_origins,omitempty"`
	// MaxBody bounds a request body in bytes (default and most 1 MiB).
	MaxBody int `yaml:"max_body" json:"max_body,omitempty"`
	// TLSCert and TLSKey are PEM files (relative to the data directory, or
	// absolute); with both set the API is served over HTTPS.
	TLSCert string `yaml:"tls_cert" json:"tls_cert,omitempty"`
	TLSKey  string `yaml:"tls_key" json:"tls_key,omitempty"`
	// RemoteAdmin lets requests over TCP change what runs on this machine:
	// write agent definitions, add or remove MCP servers (which start
	// commands), generate or import agents' keys. Off by default: over
	// TCP the token then chats, approves, reads and resets; the local
	// socket and the files do the rest.
	RemoteAdmin bool `yaml:"remote_admin" json:"remote_admin,omitempty"`
}

// Gateway settings.
const (
	// DefaultGatewayListen is the TCP address of the API when agentd.yaml
	// names none: loopback only.
	DefaultGatewayListen = "127.0.0.1:7420"
	// GatewayOff as gateway.listen serves no TCP.
	GatewayOff = "off"
	// MaxGatewayBody is the default and largest gateway.max_body: the
	// API's own limit.
	MaxGatewayBody = 1 << 20
	// minGatewayBody is the smallest gateway.max_body.
	minGatewayBody = 1 << 10
)

// TCPOff reports whether the gateway serves no TCP.
func (g *Gateway) TCPOff() bool { return g.Listen == GatewayOff }

func applyGatewayDefaults(g *Gateway) {
	if g.Listen == "" {
		g.Listen = DefaultGatewayListen
	}
	if g.MaxBody == 0 {
		g.MaxBody = MaxGatewayBody
	}
}

// gateway checks the gateway section.
func (c *checker) gateway(g *Gateway) {
	if g.Listen != "" && g.Listen != GatewayOff {
		if err := CheckListen(g.Listen); err != nil {
			c.add("gateway.listen", "%v", err)
		}
	}
	for i, h := range g.AllowedHosts {
		if _, err := NormalizeHost(h); err != nil {
			c.add(fmt.Sprintf("gateway.allowed_hosts[%d]", i), "%v", err)
		}
	}
	for i, o := range g.CORSOrigins {
		if _, err := NormalizeOrigin(o); err != nil {
			c.add(fmt.Sprintf("gateway.cors_origins[%d]", i), "%v", err)
		}
	}
	if g.MaxBody != 0 || c.has("gateway.max_body") {
		if g.MaxBody < minGatewayBody || g.MaxBody > MaxGatewayBody {
			c.add("gateway.max_body", "must be between %d and %d bytes, got %d", minGatewayBody, MaxGatewayBody, g.MaxBody)
		}
	}
	switch {
	case g.TLSCert != "" && g.TLSKey == "":
		c.add("gateway.tls_cert", "needs tls_key too: the certificate's private key (PEM)")
	case g.TLSKey != "" && g.TLSCert == "":
		c.add("gateway.tls_key", "needs tls_cert too: the certificate chain (PEM)")
	}
}

// CheckListen reports why addr cannot be a gateway listen address:
// host:port, the host a name or an IP address (IPv6 in brackets) or empty
// for every interface, the port a number up to 65535 (0: any free port).
func CheckListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("must be host:port such as %s (or off), got %q", DefaultGatewayListen, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port must be a number from 0 to 65535, got %q", port)
	}
	if host != "" {
		if _, err := NormalizeHost(host); err != nil {
			return err
		}
	}
	return nil
}

// NormalizeHost returns host as the Host check compares it: lowercase, an
// IPv6 address in brackets. It refuses ports, schemes, wildcards and
// anything else that is not a host name or an IP address.
func NormalizeHost(host string) (string, error) {
	h := strings.ToLower(host)
	inner, bracketed := h, false
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		inner, bracketed = h[1:len(h)-1], true
	}
	if a, err := netip.ParseAddr(inner); err == nil {
		switch {
		case a.Zone() != "":
			return "", fmt.Errorf("must be a host name or an IP address without a zone, got %q", host)
		case a.Is6():
			return "[" + inner + "]", nil
		case bracketed:
			return "", fmt.Errorf("must be a host name or an IP address, got %q", host)
		}
		return inner, nil
	}
	if h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return "", fmt.Errorf("must be a host name such as agentd.example.com (no port, no scheme), got %q", host)
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return "", fmt.Errorf("must be a host name such as agentd.example.com (no port, no scheme), got %q", host)
		}
	}
	return h, nil
}

// NormalizeOrigin returns a web origin as browsers send it in the Origin
// header: lowercase scheme://host[:port], the port left out when it is the
// scheme's default. It refuses "*", paths, queries and user names.
func NormalizeOrigin(origin string) (string, error) {
	bad := fmt.Errorf("must be a web origin such as https://console.example.com (scheme, host, optional port), got %q", origin)
	u, err := url.Parse(strings.TrimSuffix(origin, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(origin, "?#") {
		return "", bad
	}
	hostport := strings.ToLower(u.Host)
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", bad
		}
	} else if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		host = hostport[1 : len(hostport)-1]
	}
	nh, err := NormalizeHost(host)
	if err != nil {
		return "", bad
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	out := u.Scheme + "://" + nh
	if port != "" {
		out += ":" + port
	}
	return out, nil
}
