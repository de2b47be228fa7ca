package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"agentd/internal/agent"
	"agentd/internal/gateway"
)

// mcp checks the MCP servers: their state in the running agentd, or else
// that each one's command is found or its host answers (agentd mcp list
// connects them).
func (d *doctor) mcp(ctx context.Context, cfg *agent.Config, defs []*agent.Definition) {
	const area = "mcp"
	if d.status != nil {
		list, err := d.o.Daemon.MCPServers(ctx)
		if err != nil {
			d.r.add(area, "servers", Fail, "the running agentd did not list them: "+err.Error(), "")
			return
		}
		for _, s := range list {
			switch s.State {
			case "connected":
				d.r.add(area, s.Name, OK, fmt.Sprintf("connected, %d tools (%s)", s.Tools, s.Transport), "")
			case "disabled":
				d.r.add(area, s.Name, Skip, "disabled", "")
			default:
				d.r.add(area, s.Name, Fail, s.State+": "+s.LastError,
					"agentd mcp list shows every server's state; check the server's command or URL, and its own log")
			}
		}
		return
	}
	servers := map[string]agent.MCPServer{}
	for name, s := range cfg.MCPServers {
		servers[name] = s
	}
	for _, def := range defs {
		for name, s := range def.MCPServers {
			servers[name] = s
		}
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		d.server(ctx, name, servers[name])
	}
}

// server checks an MCP server without connecting to it.
func (d *doctor) server(ctx context.Context, name string, s agent.MCPServer) {
	const area = "mcp"
	switch {
	case s.Disabled:
		d.r.add(area, name, Skip, "disabled", "")
	case s.EffectiveTransport() == agent.TransportStdio:
		cmd := s.Command
		if s.Dir != "" && !filepath.IsAbs(cmd) && filepath.Base(cmd) != cmd {
			cmd = filepath.Join(s.Dir, cmd)
		}
		if p, err := d.o.LookPath(cmd); err != nil {
			d.r.add(area, name, Fail, "its command "+s.Command+" is not found", "install it, or give its full path in mcp_servers."+name+".command")
		} else {
			d.r.add(area, name, OK, "command "+p+" (agentd is not running; agentd mcp list connects it)", "")
		}
	default:
		host, err := urlHost(s.URL)
		if err != nil {
			d.r.add(area, name, Fail, err.Error(), "fix mcp_servers."+name+".url")
			return
		}
		dctx, cancel := context.WithTimeout(ctx, d.o.Timeout)
		defer cancel()
		c, err := d.o.Dial(dctx, "tcp", host)
		if err != nil {
			d.r.add(area, name, Fail, fmt.Sprintf("%s does not answer: %v", host, err), "check mcp_servers."+name+".url and that the server runs")
			return
		}
		c.Close()
		d.r.add(area, name, OK, host+" answers (agentd is not running; agentd mcp list connects it)", "")
	}
}

// gateway checks the API on TCP: its address, its token and its TLS files.
func (d *doctor) gateway(cfg *agent.Config) {
	const area = "gateway"
	g := cfg.Gateway
	if g.Listen == agent.GatewayOff {
		d.r.add(area, "address", OK, "off: the local socket only", "")
		return
	}
	d.address(g.Listen)
	if !gateway.IsLoopback(g.Listen) && g.TLSCert == "" {
		d.r.add(area, "encryption", Warn, g.Listen+" is reachable from other machines over plain http: the token crosses the network unencrypted",
			"set gateway.tls_cert and gateway.tls_key, or put a TLS proxy in front")
	}
	d.token(!gateway.IsLoopback(g.Listen))
	if g.TLSCert != "" || g.TLSKey != "" {
		d.tls(dataPath(d.dir, g.TLSCert), dataPath(d.dir, g.TLSKey))
	}
}

// address checks that the gateway's address is agentd's, or free for it.
func (d *doctor) address(addr string) {
	const area, name = "gateway", "address"
	if d.status != nil {
		for _, l := range d.status.Listening {
			if l == "http://"+addr || l == "https://"+addr {
				d.r.add(area, name, OK, "served by the running agentd at "+l, "")
				return
			}
		}
		d.r.add(area, name, Warn, fmt.Sprintf("the running agentd does not serve %s (it serves %v): it was started with another --listen, or before agentd.yaml changed", addr, d.status.Listening),
			"restart agentd serve to serve gateway.listen")
		return
	}
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		d.r.add(area, name, Fail, addr+" is held by another process",
			"choose another address in gateway.listen (or --listen), stop what holds it, or serve only the local socket with gateway.listen: off")
	case err != nil:
		d.r.add(area, name, Fail, err.Error(), "fix gateway.listen")
	default:
		ln.Close()
		d.r.add(area, name, OK, addr+" is free for agentd serve", "")
	}
}

// token checks the gateway's token: from AGENTD_TOKEN, or the token file;
// offLoopback holds it to the rule for an address other machines reach.
func (d *doctor) token(offLoopback bool) {
	const area, name = "gateway", "token"
	fixed := d.o.Env(gateway.TokenEnv)
	if _, err := os.Stat(filepath.Join(d.dir, gateway.TokenFile)); fixed == "" && errors.Is(err, fs.ErrNotExist) {
		d.r.add(area, name, OK, "none yet: agentd serve makes one (agentd token prints it)", "")
		return
	}
	t, err := gateway.OpenTokens(d.dir, &gateway.TokenOptions{Fixed: fixed, OffLoopback: offLoopback})
	switch {
	case err == nil && t.Fixed():
		d.r.add(area, name, OK, "strong, from $"+gateway.TokenEnv, "")
	case err == nil:
		d.r.add(area, name, OK, "strong, in "+t.Path()+" (mode 0600)", "")
	case fixed != "":
		d.r.add(area, name, Fail, err.Error(), "set "+gateway.TokenEnv+" to the output of `openssl rand -base64 32`, or unset it to use the token file")
	default:
		d.r.add(area, name, Fail, err.Error(), "agentd token rotate writes a new, strong one")
	}
}

// tls checks the certificate and key files.
func (d *doctor) tls(cert, key string) {
	const area, name = "gateway", "tls"
	if cert == "" || key == "" {
		d.r.add(area, name, Fail, "only one of gateway.tls_cert and gateway.tls_key is set", "set both, or neither")
		return
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		d.r.add(area, name, Fail, err.Error(), "check gateway.tls_cert and gateway.tls_key: PEM files, the key matching the certificate")
		return
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		d.r.add(area, name, Fail, err.Error(), "")
		return
	}
	left := time.Until(leaf.NotAfter)
	switch {
	case left <= 0:
		d.r.add(area, name, Fail, "the certificate expired on "+leaf.NotAfter.Format(time.DateOnly), "renew it (agentd reads it at start: restart after)")
	case left < 14*24*time.Hour:
		d.r.add(area, name, Warn, "the certificate expires on "+leaf.NotAfter.Format(time.DateOnly), "renew it soon (agentd reads it at start: restart after)")
	default:
		d.r.add(area, name, OK, "certificate valid until "+leaf.NotAfter.Format(time.DateOnly), "")
	}
}

// dataPath is p relative to the data directory (absolute paths as they are).
func dataPath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
