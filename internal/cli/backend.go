package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/app"
	"agentd/internal/gateway"
)

// backend is a client of the daemon, or of agentd run in process.
type backend struct {
	*gateway.Client
	close  func() error
	remote bool
	// notRunning says, for agentd run in process, that the daemon is not
	// running and what was looked at: "agentd is not running on DIR (no
	// socket there)".
	notRunning string
}

// connect returns a client of the gateway named by --remote, else of the
// running daemon, else starts agentd in process on the data directory.
// Unless mayMake, a directory with no agentd data is refused (noData)
// rather than made.
func (e *env) connect(ctx context.Context, mayMake, watch bool) (*backend, error) {
	if e.remote != "" {
		return e.remoteBackend()
	}
	dir := e.dataDir()
	c, why := e.daemon(ctx)
	if c != nil {
		return &backend{Client: c, close: func() error { return nil }, remote: true}, nil
	}
	// In process: quiet unless asked, so a command's output stays its own.
	log, cfg := e.quietLoggerConfig()
	a, err := app.Open(ctx, dir, &app.Options{Logger: log, Config: cfg, Version: Version, Existing: !mayMake, ReadOnce: !watch, Store: e.store()})
	if err != nil {
		switch {
		case errors.Is(err, app.ErrLocked):
			return nil, withCode(ExitUnavailable, fmt.Errorf("%w, and its socket does not answer", err))
		case errors.Is(err, app.ErrNoData):
			return nil, e.noData()
		}
		return nil, err
	}
	if err := a.Start(ctx); err != nil {
		a.Close(context.Background())
		return nil, err
	}
	api, err := a.CommandAPI(ctx)
	if err != nil {
		a.Close(context.Background())
		return nil, err
	}
	pc, stop := gateway.Pipe(api)
	return &backend{Client: pc, notRunning: fmt.Sprintf("agentd is not running on %s (%s)", e.absDataDir(), why),
		close: func() error {
			stop()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return a.Close(ctx)
		}}, nil
}

// daemon returns a client of the agentd serving the data directory, or
// why there is none: "no socket there", "its socket does not answer".
func (e *env) daemon(ctx context.Context) (*gateway.Client, string) {
	sock := filepath.Join(e.dataDir(), app.SocketFile)
	if _, err := os.Stat(sock); err != nil {
		return nil, "no socket there"
	}
	c := gateway.NewUnixClient(sock)
	if err := c.Ping(ctx); err != nil {
		return nil, "its socket does not answer"
	}
	return c, ""
}

// withBackend makes a command's RunE that is given a client of the daemon,
// or of agentd run in process, and closes it afterwards.
func (e *env) withBackend(fn func(ctx context.Context, b *backend, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		b, err := e.connect(ctx, cmd.Annotations[makesData] != "", cmd.Annotations[watchesFiles] != "")
		if err != nil {
			return err
		}
		defer b.close()
		return fn(ctx, b, args)
	}
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

// settleMCP waits, when agentd runs in process, until no MCP server is
// still making its first connection attempt (bounded by each server's
// connect timeout), so that a command sees the servers and their tools as
// a running daemon would. A daemon has long since connected them.
func settleMCP(ctx context.Context, b *backend) {
	if b.remote {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		list, err := b.MCPServers(ctx)
		if err != nil || !slices.ContainsFunc(list, func(s gateway.ServerInfo) bool { return s.State == "connecting" }) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
