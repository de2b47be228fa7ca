package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/gateway"
)

// tokenCmd is `agentd token` and `agentd token rotate`.
func (e *env) tokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print the token of the API on TCP (making one if there is none)",
		Long: "Print the token every request to the API on TCP needs (Authorization: Bearer <token>, or the\n" +
			"web console's login). It is kept in gateway.token in the data directory (mode 0600), made on\n" +
			"first use; " + gateway.TokenEnv + ", when set, is the token instead. `agentd token rotate` replaces it.",
		Example: "  agentd token\n" +
			"  curl -H \"Authorization: Bearer $(agentd token)\" http://127.0.0.1:7420/v1/agents",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			dir := e.dataDir()
			if v := os.Getenv(gateway.TokenEnv); v != "" {
				if err := gateway.CheckToken(v); err != nil {
					return fmt.Errorf("%s: %w", gateway.TokenEnv, err)
				}
				fmt.Fprintf(e.stderr, "(the token is %s, which is set)\n", gateway.TokenEnv)
				fmt.Fprintln(e.stdout, v)
				return nil
			}
			// A token made in a mistyped directory would be one no agentd knows.
			if err := e.needData(); err != nil {
				return err
			}
			t, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true})
			if errors.Is(err, gateway.ErrWeakToken) {
				return fmt.Errorf("%w (agentd token rotate writes a strong one)", err)
			}
			if err != nil {
				return err
			}
			tok, err := t.Token()
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, tok)
			return nil
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "rotate",
		Short: "Replace the token; the old one stops working at once",
		Long: "Write a new token to gateway.token and print it. A running agentd uses it from its next\n" +
			"request, without a restart: the old token and every console login made with it stop working.",
		Example: "  agentd token rotate",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if os.Getenv(gateway.TokenEnv) != "" {
				return fmt.Errorf("%w: set the variable to a new value (at least %d random characters) and restart agentd", gateway.ErrFixedToken, gateway.MinTokenLen)
			}
			if err := e.needData(); err != nil {
				return err
			}
			tok, err := gateway.RotateToken(e.dataDir())
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stderr, "new token written; a running agentd uses it from its next request, and the old one no longer works")
			fmt.Fprintln(e.stdout, tok)
			return nil
		},
	})
	return cmd
}

// remoteFlags adds --remote and --token to a command that talks to agentd.
func (e *env) remoteFlags(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().StringVar(&e.remote, "remote", "", "talk to agentd serve on another host at this URL (http://host:7420), with --token or "+gateway.TokenEnv)
	cmd.Flags().StringVar(&e.remoteToken, "token", "", "the remote gateway's token (default $"+gateway.TokenEnv+"; a flag is visible to other users in the process list)")
	return cmd
}

// remoteBackend is a client of the gateway at e.remote.
func (e *env) remoteBackend() (*backend, error) {
	tok := e.remoteToken
	if tok == "" {
		tok = os.Getenv(gateway.TokenEnv)
	}
	if tok == "" {
		return nil, usage("usage: --remote needs the gateway's token: --token, or set %s (agentd token prints it on the gateway's host)", gateway.TokenEnv)
	}
	c, err := gateway.NewRemoteClient(e.remote, tok)
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	if u, err := url.Parse(e.remote); err == nil && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		fmt.Fprintf(e.stderr, "warning: %s is plain http: the token crosses the network unencrypted; use https\n", e.remote)
	}
	return &backend{Client: c, close: func() error { return nil }, remote: true}, nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// apiHint explains an API refusal the user can act on, or returns "".
func apiHint(err error) string {
	var ae *gateway.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	switch {
	case ae.Status == 401:
		return "the gateway refused the token: pass --token or set " + gateway.TokenEnv + " to what `agentd token` prints on the gateway's host (after `agentd token rotate`, the new one)"
	case ae.Status == 403 && ae.Code == "forbidden":
		return "the gateway refused the request's Host or Origin: add the name you reach it by to gateway.allowed_hosts in its agentd.yaml"
	case ae.Status == 429:
		return "too many failed attempts from this address: wait a few seconds"
	case ae.Code == "session_closed":
		return "agentd reopen <agent>/<key> reopens it; send --reopen reopens it and sends"
	}
	return ""
}

// tcpServer is the API on TCP as `agentd serve` runs it.
type tcpServer struct {
	addr   string // host:port; "" when off
	from   string // where addr comes from: --listen, agentd.yaml, or the default
	tokens *gateway.Tokens
	opts   gateway.TCPOptions
}

// Where a TCP address comes from.
const (
	fromFlag    = "--listen"
	fromConfig  = "gateway.listen in agentd.yaml"
	fromDefault = "the default address"
)

// gatewayTCP resolves the TCP address from --listen (if set) and the
// config, and opens the token. It fails without a strong token.
func (e *env) gatewayTCP(dir string, cfg *agent.Config, listen *string, log *slog.Logger) (*tcpServer, error) {
	g := cfg.Gateway
	s := &tcpServer{addr: g.Listen, from: fromConfig}
	if g.Listen == agent.DefaultGatewayListen {
		s.from = fromDefault
	}
	if listen != nil {
		s.addr, s.from = *listen, fromFlag
		if s.addr == "" {
			s.addr = agent.GatewayOff
		}
		if s.addr != agent.GatewayOff {
			if err := agent.CheckListen(s.addr); err != nil {
				return nil, usage("usage: --listen: %v", err)
			}
		}
	}
	if s.addr == agent.GatewayOff {
		s.addr = ""
		return s, nil
	}
	t, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Fixed: os.Getenv(gateway.TokenEnv), Create: true,
		OffLoopback: !gateway.IsLoopback(s.addr), Logger: log})
	if err != nil {
		where := "loopback"
		if !gateway.IsLoopback(s.addr) {
			where = "not loopback: other machines can reach it"
		}
		return nil, fmt.Errorf("refusing to serve the API on %s (%s) without a strong token: %w", s.addr, where, err)
	}
	if err := gateway.CheckBind(s.addr, t); err != nil {
		return nil, err
	}
	s.tokens = t
	s.opts = gateway.TCPOptions{
		Auth: gateway.AuthOptions{Tokens: t, AllowedHosts: g.AllowedHosts, CORSOrigins: g.CORSOrigins, MaxBody: int64(g.MaxBody),
			RemoteAdmin: g.RemoteAdmin},
		TLSCert: dataPath(dir, g.TLSCert), TLSKey: dataPath(dir, g.TLSKey),
	}
	return s, nil
}

// dataPath is p relative to the data directory (absolute paths as they are).
func dataPath(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// lockedWriter serializes writes from the servers' goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}

// serveAPI serves srv on the unix socket and, if tcp has an address, on
// TCP, until ctx is done or one of them fails. A default TCP address that
// is taken (another agentd on this machine) is skipped with a warning.
func serveAPI(ctx context.Context, srv *gateway.Server, sock string, tcp *tcpServer, out *lockedWriter, unixReady func()) error {
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	run := func(f func() error) {
		wg.Go(func() {
			if err := f(); err != nil && ctx.Err() == nil {
				once.Do(func() { first = err })
				stop()
			}
		})
	}
	run(func() error { return srv.ServeUnix(sctx, sock, unixReady) })
	if tcp != nil && tcp.addr != "" {
		run(func() error {
			err := srv.ServeTCP(sctx, tcp.addr, &tcp.opts, func(a net.Addr) {
				scheme := "http"
				if tcp.opts.TLSCert != "" {
					scheme = "https"
				}
				where := "agentd token"
				if tcp.tokens.Fixed() {
					where = "$" + gateway.TokenEnv
				}
				out.printf("listening on %s://%s (API and web console; token: %s)\n", scheme, a, where)
				if scheme == "http" && !gateway.IsLoopback(tcp.addr) {
					out.printf("warning: %s is reachable from other machines over plain http: the token crosses the network unencrypted; set gateway.tls_cert and tls_key, or put a TLS proxy in front\n", tcp.addr)
				}
			})
			if errors.Is(err, gateway.ErrAddrInUse) {
				// Not a quiet fallback: whatever holds the port would get the
				// console's logins and the clients' tokens.
				return fmt.Errorf("%w: %s (from %s) is held by another process (another agentd, or a program that would receive the token of clients expecting agentd); "+
					"choose another address with --listen HOST:PORT or gateway.listen in agentd.yaml, or serve only the local socket with --listen off", gateway.ErrAddrInUse, tcp.addr, tcp.from)
			}
			return err
		})
	}
	wg.Wait()
	return first
}
