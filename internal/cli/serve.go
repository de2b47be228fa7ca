package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/gateway"
	"agentd/internal/store/sqlite"
)

func (e *env) serveCmd() *cobra.Command {
	var grace time.Duration
	var listen string
	var sqliteMem bool
	var prof profiles
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run agentd: the runtime and its API",
		Long: "Run agentd in the foreground. It resumes any turn a previous run left unfinished,\n" +
			"serves the local API on a unix socket in the data directory (mode 0600) and on TCP\n" +
			"(--listen, default gateway.listen in agentd.yaml, else " + agent.DefaultGatewayListen + ") behind a token\n" +
			"(agentd token), and on SIGINT/SIGTERM stops accepting input, lets running turns finish\n" +
			"for --grace, and exits. It refuses to start without a strong token.",
		Example: "  agentd serve\n" +
			"  agentd serve --data /srv/agentd --listen 127.0.0.1:7420\n" +
			"  agentd serve --listen off --grace 30s",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			start := time.Now()
			ctx := cmd.Context()
			dir := e.dataDir()
			if err := prof.start(); err != nil {
				return err
			}
			defer func() {
				if perr := prof.stop(); perr != nil && err == nil {
					err = perr
				}
			}()
			if sqliteMem {
				// Before anything opens a database: SQLite decides at its start.
				if err := sqlite.EnableMemoryStatus(); err != nil {
					return err
				}
			}
			cfg, err := agent.LoadConfig(dir)
			if err != nil {
				return err
			}
			log := e.logger(cfg.Log.Level, cfg.Log.Format)
			var listenFlag *string
			if cmd.Flags().Changed("listen") {
				listenFlag = &listen
			}
			tcp, err := e.gatewayTCP(dir, cfg, listenFlag, log)
			if err != nil {
				return err
			}
			a, err := app.Open(ctx, dir, &app.Options{Logger: log, Config: cfg, Version: Version, Store: e.store()})
			if err != nil {
				if errors.Is(err, app.ErrLocked) {
					return withCode(ExitUnavailable, err)
				}
				return err
			}
			if err := a.Start(ctx); err != nil {
				a.Close(context.Background())
				return err
			}
			srv, err := a.API(ctx)
			if err != nil {
				a.Close(context.Background())
				return err
			}
			a.Bootstrap()
			a.TitleSessions()
			a.ScheduleJobs()
			a.ReclaimMemory()
			abs, _ := filepath.Abs(dir)
			out := e.stdout
			lw := &lockedWriter{w: out}
			fmt.Fprintf(out, "agentd %s: data in %s\n", Version, abs)
			echo := false
			for _, d := range a.Agents.List() {
				fmt.Fprintf(out, "  agent %-16s %s\n", d.ID, describeModel(d.Model))
				echo = echo || d.Model.Provider == agent.ProviderEcho
			}
			errs := a.Agents.Errors()
			for _, id := range slices.Sorted(maps.Keys(errs)) {
				fmt.Fprintf(out, "  agent %-16s invalid, not loaded:\n", id)
				for line := range strings.SplitSeq(errs[id].Error(), "\n") {
					fmt.Fprintf(out, "    %s\n", line)
				}
			}
			if echo {
				fmt.Fprintln(out, agent.ModelHint())
			}
			sock := filepath.Join(dir, app.SocketFile)
			// Ordered shutdown. At the signal the API keeps answering while
			// the runtime drains: new input is refused (503 shutting_down),
			// running turns get the grace period, and clients waiting for a
			// turn get its reply or a retryable 503. Then the servers stop,
			// then the rest (the store last).
			serving, stopServing := context.WithCancel(context.WithoutCancel(ctx))
			defer stopServing()
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				select {
				case <-ctx.Done():
				case <-serving.Done(): // a server failed
					return
				}
				gctx, cancel := context.WithTimeout(context.Background(), grace)
				defer cancel()
				a.Drain(gctx)
				stopServing()
			}()
			serr := serveAPI(serving, srv, sock, tcp, lw, func() {
				lw.printf("listening on %s (ready in %s)\n", sock, time.Since(start).Round(time.Millisecond))
			})
			stopServing()
			<-drained
			sctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			cerr := a.Close(sctx)
			if serr != nil && ctx.Err() == nil {
				return serr
			}
			if cerr != nil {
				return cerr
			}
			fmt.Fprintln(out, "agentd stopped")
			return nil
		},
	}
	cmd.Flags().BoolVar(&sqliteMem, "sqlite-memory-status", false, "count the memory SQLite holds, for agentd_sqlite_memory_bytes in /metrics (each SQLite allocation then takes a lock)")
	cmd.Flags().StringVar(&prof.cpu, "cpuprofile", "", "write a CPU profile of the daemon's run to this file at exit (go tool pprof reads it)")
	cmd.Flags().StringVar(&prof.mem, "memprofile", "", "write an allocation profile of the daemon's run to this file at exit")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long running turns may finish at shutdown")
	cmd.Flags().StringVar(&listen, "listen", "", "TCP address of the API, host:port, or off (default gateway.listen, else "+agent.DefaultGatewayListen+"; port 0: any free port)")
	return cmd
}

func describeModel(m agent.Model) string {
	s := m.Provider
	if m.Provider == agent.ProviderEcho {
		return "echo (built-in offline model)"
	}
	s += " " + m.Name
	if m.BaseURL != "" {
		s += " at " + m.BaseURL
	}
	if m.APIKeyEnv != "" && os.Getenv(m.APIKeyEnv) == "" {
		s += " (warning: " + m.APIKeyEnv + " is not set; its turns will fail)"
	}
	for _, f := range m.Fallbacks {
		s += ", then " + f.Provider + " " + f.Name
	}
	return s
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
// TCP, until ctx is done or one of them fails. A TCP address that is taken,
// the default as much as a chosen one, is an error that says what to do:
// whatever holds it would get the clients' tokens.
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
