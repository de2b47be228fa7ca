package cli

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/gateway"
	"agentd/internal/mcpdemo"
	"agentd/internal/mcpserver"
)

func (e *env) mcpCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "mcp",
		Short: "Manage MCP servers, or serve agentd as one",
		Long: "MCP servers give agents tools. Servers come from agentd.yaml, agent files, skills,\n" +
			"or `agentd mcp add` at run time; `agentd mcp serve` makes agentd itself an MCP server.",
		Example: "  agentd mcp list\n" +
			"  agentd mcp add files -- npx -y @modelcontextprotocol/server-filesystem /srv/docs",
	}, e.mcpListCmd(), e.mcpToolsCmd(), e.mcpAddCmd(), e.mcpRemoveCmd(), e.mcpServeCmd(), e.mcpDemoCmd())
}

func (e *env) mcpListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List MCP servers and their state",
		Example: "  agentd mcp list\n" +
			"  agentd mcp list --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			settleMCP(ctx, b)
			list, err := b.MCPServers(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []gateway.ServerInfo{}
				}
				return e.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "no MCP servers (define them in agentd.yaml or an agent file, or use agentd mcp add)")
				return nil
			}
			tw := table(e.stdout, "NAME", "TRANSPORT", "STATE", "TOOLS", "RESTARTS", "SOURCE", "LAST ERROR")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.Name, s.Transport, s.State, s.Tools, s.Restarts, s.Source, cell(s.LastError, 80))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) mcpToolsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools <server>",
		Short: "List the tools an MCP server gives agents",
		Long: "List a server's tools as agents see them (<server>__<tool>), with their lifecycle kind\n" +
			"(model, context, action, postprocess, server) and the hints the server declares.",
		Example: "  agentd mcp tools files\n" +
			"  agentd mcp tools files --json",
		Args: cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			settleMCP(ctx, b)
			list, err := b.MCPTools(ctx, args[0])
			if apiStatus(err) == 404 {
				return withCode(ExitNotFound, fmt.Errorf("no MCP server %q (see agentd mcp list)", args[0]))
			}
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []gateway.ToolInfo{}
				}
				return e.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintf(e.stdout, "%s has no tools registered (see agentd mcp list for its state)\n", args[0])
				return nil
			}
			tw := table(e.stdout, "NAME", "KIND", "HINTS", "DESCRIPTION")
			for _, t := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Kind, hints(t), cell(t.Description, 80))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func hints(t gateway.ToolInfo) string {
	var h []string
	if t.ReadOnly {
		h = append(h, "read-only")
	}
	if t.Idempotent {
		h = append(h, "idempotent")
	}
	if t.Destructive {
		h = append(h, "destructive")
	}
	if len(h) == 0 {
		return "-"
	}
	return strings.Join(h, ",")
}

func (e *env) mcpAddCmd() *cobra.Command {
	var s agent.MCPServer
	var headers, headersEnv, envs []string
	var agentID string
	cmd := &cobra.Command{
		Use:   "add <name> [flags] [-- command args...]",
		Short: "Add an MCP server at run time",
		Long: "Connect an MCP server and give its tools to agents (all of them, or --agent's alone). It is\n" +
			"kept across restarts. A stdio server's command and arguments come after --; an HTTP server\n" +
			"is given with --url. The command waits until the server is connected and its tools listed.",
		Example: "  agentd mcp add files -- npx -y @modelcontextprotocol/server-filesystem /srv/docs\n" +
			"  agentd mcp add search --url https://mcp.example.com/mcp --header-env Authorization=SEARCH_TOKEN\n" +
			"  agentd mcp add local --url http://127.0.0.1:8931/mcp --allow-network 127.0.0.1/32\n" +
			"  agentd mcp add tickets --agent support --env TICKETS_DB=/srv/tickets.db -- tickets-mcp",
		Args: func(cmd *cobra.Command, args []string) error {
			switch dash := cmd.ArgsLenAtDash(); {
			case len(args) == 0 || dash == 0:
				return usage("usage: agentd mcp add <name> [flags] [-- command args...]: the name comes first")
			case dash > 1 || (dash < 0 && len(args) > 1):
				return usage("usage: one name, then a stdio server's command after --, as in agentd mcp add %s -- %s", args[0], strings.Join(args[1:], " "))
			}
			return nil
		},
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			name := args[0]
			if len(args) > 1 {
				s.Command, s.Args = args[1], args[2:]
			}
			if s.Command == "" && s.URL == "" {
				return usage("usage: give a stdio server's command after --, or an HTTP server's --url")
			}
			if s.Command != "" && s.URL != "" {
				return usage("usage: give either a command after -- or --url, not both")
			}
			var err error
			if s.Headers, err = pairs("--header", "NAME=VALUE", headers); err != nil {
				return err
			}
			if s.HeadersEnv, err = pairs("--header-env", "HEADER=VARIABLE", headersEnv); err != nil {
				return err
			}
			if s.Env, err = pairs("--env", "NAME=VALUE", envs); err != nil {
				return err
			}
			st, err := b.AddMCPServer(ctx, gateway.AddServerRequest{Name: name, Server: s, Agent: agentID})
			if err != nil {
				return fmt.Errorf("mcp server %s not added: %w", name, err)
			}
			fmt.Fprintf(e.stdout, "%s: %s, %d tools (%s", st.Name, st.State, st.Tools, st.Transport)
			if st.ServerName != "" {
				fmt.Fprintf(e.stdout, ", %s %s", st.ServerName, st.ServerVersion)
			}
			fmt.Fprintln(e.stdout, ")")
			if st.LastError != "" {
				fmt.Fprintf(e.stdout, "last error: %s\n", st.LastError)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&s.URL, "url", "", "the endpoint of an HTTP server")
	f.StringVar(&s.Transport, "transport", "", "stdio, http or sse (default: stdio with a command, http with --url)")
	f.StringArrayVar(&headers, "header", nil, "an HTTP header NAME=VALUE sent with every request (repeatable)")
	f.StringArrayVar(&headersEnv, "header-env", nil, "an HTTP header HEADER=VARIABLE whose value is read from the environment variable (repeatable)")
	f.StringArrayVar(&envs, "env", nil, "an environment variable NAME=VALUE for the server process (repeatable)")
	f.StringArrayVar(&s.PassEnv, "pass-env", nil, "an environment variable of agentd the server process also gets (repeatable)")
	f.StringVar(&s.Dir, "dir", "", "the server process's working directory")
	f.StringVar(&s.Kind, "kind", "", "the lifecycle kind of tools that declare none: model, context, action, postprocess or server")
	f.StringArrayVar(&s.AllowNetworks, "allow-network", nil, "a CIDR range the HTTP server may be in although the SSRF guard blocks it, such as 127.0.0.1/32 for one on this machine (repeatable)")
	f.StringVar(&agentID, "agent", "", "give the tools to this agent alone")
	return cmd
}

// pairs parses repeated NAME=VALUE flags.
func pairs(flag, form string, list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(list))
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usage("usage: %s %q: want %s", flag, kv, form)
		}
		out[k] = v
	}
	return out, nil
}

func (e *env) mcpRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "remove <name>",
		Short:   "Remove an MCP server added with agentd mcp add",
		Long:    "Disconnect an MCP server added at run time and forget it. A server defined in a file is removed by editing the file.",
		Example: "  agentd mcp remove files",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			err := b.RemoveMCPServer(ctx, args[0])
			if apiStatus(err) == 404 {
				return withCode(ExitNotFound, fmt.Errorf("no MCP server %q (see agentd mcp list)", args[0]))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s: removed\n", args[0])
			return nil
		}),
	}
}

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
			s := mcpserver.New(app.FacadeBackend{C: b.Client}, &mcpserver.Options{Name: "agentd", Version: Version, Logger: e.quietLogger()})
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
			o := &mcpdemo.Options{AllowCrash: allowCrash, Logger: e.quietLogger()}
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
