package cli

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/spf13/cobra"

	"agentd/internal/app"
)

func (e *env) identityServerCmd() *cobra.Command {
	var listen string
	var hosts, audience []string
	cmd := &cobra.Command{
		Use:   "identity-server",
		Short: "Run an identity server: agents' character files and lifecycle logs, shared by agentd nodes",
		Long: "Run agentd's identity server, an MCP server over streamable HTTP at /mcp. Agents whose\n" +
			"definition names it (identity_server: URL) register their character file there at start\n" +
			"and log every message lifecycle; only the holder of an agent's key writes its character and\n" +
			"log. It keeps them in the store (--store: sqlite in the data directory, or a postgres:// URL\n" +
			"that many servers may share). The tool contract is in docs/identity-server.md.\n\n" +
			"It listens on loopback unless told otherwise; a non-loopback --listen needs --allow-host\n" +
			"with the name clients reach it by.",
		Example: "  agentd identity-server --data ./identity-data\n" +
			"  agentd identity-server --listen 0.0.0.0:7400 --allow-host id.example.com --audience https://id.example.com/mcp --store postgres://…",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkIdentityListen(listen, hosts); err != nil {
				return withCode(ExitUsage, err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			return app.ServeIdentity(cmd.Context(), ln, app.IdentityServerOptions{
				Dir: e.dataDir(), Store: e.store(), Audience: audience, AllowedHosts: hosts, Version: Version, Logger: e.quietLogger(),
				Ready: func(addr string) { fmt.Fprintf(e.stdout, "identity server listening on http://%s/mcp\n", addr) },
			})
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7400", "address to listen on (loopback unless --allow-host is given)")
	cmd.Flags().StringSliceVar(&hosts, "allow-host", nil, "a Host header to accept beside loopback ones (repeatable); needed to listen beyond loopback")
	cmd.Flags().StringSliceVar(&audience, "audience", nil, "the URL agents name this server by, which their approvals are for (repeatable; default http://LISTEN/mcp)")
	return cmd
}

// checkIdentityListen refuses a listener beyond loopback without an
// allowed host: the operator must say who may reach it.
func checkIdentityListen(listen string, hosts []string) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %v", listen, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	if len(hosts) == 0 {
		return fmt.Errorf("--listen %s is beyond loopback: give --allow-host with the name clients reach it by", listen)
	}
	return nil
}
