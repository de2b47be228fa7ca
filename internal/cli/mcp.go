package cli

import (
	"context"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"agentd/internal/app"
	"agentd/internal/mcpdemo"
	"agentd/internal/mcpserver"
)

// mcpServeCmd serves the facade over stdio.
func (e *env) mcpServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Serve agentd as an MCP server over stdio",
		Long: "Serve agentd as an MCP server on stdin/stdout: every agent is a tool (ask_<agent>: send it a message,\n" +
			"get the reply), plus list_agents, list_sessions and read_session_log. Uses the running daemon,\n" +
			"or runs agentd in process. Configure it in an MCP client as the command `agentd mcp serve --data DIR`.",
		Example: "  agentd mcp serve\n" +
			"  agentd mcp serve --data /srv/agentd",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			s := mcpserver.New(app.FacadeBackend{C: b.Client}, &mcpserver.Options{Name: "agentd", Version: Version, Logger: e.logger("warn")})
			defer s.Close()
			if err := s.Sync(ctx); err != nil {
				return err
			}
			err := s.ServeStdio(ctx, e.stdin, e.stdout)
			if ctx.Err() != nil {
				return nil
			}
			return err
		}),
	}
}

// mcpDemoCmd runs the demo MCP server.
func (e *env) mcpDemoCmd() *cobra.Command {
	var allowCrash bool
	var recordURL string
	cmd := &cobra.Command{
		Use:    "demo",
		Short:  "Run a small MCP server (stdio) with a tool of every lifecycle kind, for trying agentd out",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := &mcpdemo.Options{AllowCrash: allowCrash, Logger: e.logger("warn")}
			if recordURL != "" {
				// Each side effect is reported before its call returns.
				o.Record = func(tool, key string) {
					resp, err := http.Post(recordURL, "text/plain", strings.NewReader(tool+" "+key))
					if err == nil {
						resp.Body.Close()
					}
				}
			}
			s := mcpdemo.New(o)
			err := s.Run(cmd.Context(), &mcp.StdioTransport{})
			if cmd.Context().Err() != nil {
				return nil
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&allowCrash, "allow-crash", false, "offer a crash tool that exits the server (for reconnect tests)")
	cmd.Flags().StringVar(&recordURL, "record-url", "", "POST \"<tool> <key>\" to this URL for every call with a side effect (for durability tests)")
	return cmd
}
