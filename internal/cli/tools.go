package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/permit"
)

// The commands of the tool layer: approvals, MCP servers, identity keys,
// skills, and the message lifecycle (send --lifecycle).

// usage is a bad-usage error (exit code 2).
func usage(format string, args ...any) error {
	return withCode(ExitUsage, fmt.Errorf(format, args...))
}

// apiStatus returns the HTTP status of an API error, or 0.
func apiStatus(err error) int {
	var ae *gateway.APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// table starts a table on w with the given header columns.
func table(w io.Writer, header ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	return tw
}

// cell makes s fit on one line of a table, at most n characters long.
func cell(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// printJSON writes v as one line of JSON.
func (e *env) printJSON(v any) error { return json.NewEncoder(e.stdout).Encode(v) }

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

// group makes cmd a command that only holds subcommands: alone it prints
// its help; with an argument it is an unknown command.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	cmd.AddCommand(subs...)
	return cmd
}

// --- approvals ---

func (e *env) approvalsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List tool calls waiting for a person's approval",
		Long: "List the tool calls an agent's policy marks \"ask\" that wait for a person.\n" +
			"Answer one with `agentd approve <id>` or `agentd deny <id> --reason TEXT`;\n" +
			"a call nobody answers before it expires counts as denied.",
		Example: "  agentd approvals\n" +
			"  agentd approvals --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Approvals(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []permit.Request{}
				}
				return e.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "no approvals waiting")
				if b.notRunning != "" {
					fmt.Fprintf(e.stdout, "(%s: calls wait for approval only in `agentd serve`)\n", b.notRunning)
				}
				return nil
			}
			now := time.Now()
			tw := table(e.stdout, "ID", "SESSION", "TOOL", "ARGS", "EXPIRES", "REASON")
			for _, r := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Session, r.Tool, cell(compactJSON(r.Args), 60),
					expires(r.ExpiresAt, now), cell(r.Reason, 80))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// compactJSON returns raw without insignificant spaces.
func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// expires says in how long t comes.
func expires(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	if d <= 0 {
		return "expired"
	}
	return "in " + d.String()
}

func (e *env) approveCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "approve <id>",
		Short:   "Let a waiting tool call run",
		Long:    "Grant a tool call waiting for approval (see `agentd approvals`); the turn goes on and the tool runs.",
		Example: "  agentd approve 7f3a9c",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			return e.resolve(ctx, b, args[0], true, "")
		}),
	}
}

func (e *env) denyCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "deny <id>",
		Short: "Refuse a waiting tool call",
		Long: "Deny a tool call waiting for approval (see `agentd approvals`). The tool does not run;\n" +
			"the model is told it was denied, with --reason if given, and the turn goes on.",
		Example: "  agentd deny 7f3a9c --reason \"not on a Friday\"",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			return e.resolve(ctx, b, args[0], false, reason)
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, as the model is told")
	return cmd
}

func (e *env) resolve(ctx context.Context, b *backend, id string, grant bool, reason string) error {
	if strings.TrimSpace(id) == "" {
		return usage("usage: an approval id is required (see agentd approvals)")
	}
	// The request, to say what was answered.
	var what string
	if list, err := b.Approvals(ctx); err == nil {
		for _, r := range list {
			if r.ID == id {
				what = fmt.Sprintf(" (%s in %s)", r.Tool, r.Session)
			}
		}
	}
	d, err := b.Resolve(ctx, id, grant, reason)
	if apiStatus(err) == 404 {
		msg := fmt.Sprintf("no approval %q is waiting: it was answered, it expired, or there never was one", id)
		if b.notRunning != "" {
			msg += " (" + b.notRunning + ": calls wait for approval only in `agentd serve`)"
		}
		return withCode(ExitNotFound, errors.New(msg))
	}
	if err != nil {
		return err
	}
	if d.Granted {
		fmt.Fprintf(e.stdout, "approved %s%s\n", id, what)
		return nil
	}
	fmt.Fprintf(e.stdout, "denied %s%s", id, what)
	if d.Reason != "" {
		fmt.Fprintf(e.stdout, ": %s", d.Reason)
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// --- mcp ---

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

// --- keys ---

func (e *env) keysCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "keys",
		Short: "Show, generate or import agents' identity keys",
		Long: "Each agent has an ed25519 key. It signs the approval sent with every tool-server call;\n" +
			"its public key is shown in base58 (the Solana format). A key is made on first use, or\n" +
			"with agentd keys generate; a Solana keypair file can be imported. The agent may be left\n" +
			"out when there is only one.",
		Example: "  agentd keys show assistant\n" +
			"  agentd keys generate assistant",
	}, e.keysShowCmd(), e.keysGenerateCmd(), e.keysImportCmd())
}

// agentArg returns the agent a command names, or the only agent there is.
func agentArg(ctx context.Context, b *backend, args []string) (string, error) {
	list, err := b.Agents(ctx)
	if err != nil {
		return "", err
	}
	ids := make([]string, len(list))
	for i, a := range list {
		ids[i] = a.ID
	}
	if len(args) > 0 {
		if !slices.Contains(ids, args[0]) {
			return "", withCode(ExitNotFound, fmt.Errorf("unknown agent %q (agents: %s)", args[0], strings.Join(ids, ", ")))
		}
		return args[0], nil
	}
	if len(ids) == 1 {
		return ids[0], nil
	}
	return "", usage("usage: name the agent, one of: %s", strings.Join(ids, ", "))
}

func (e *env) keysShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show [agent]",
		Short: "Print an agent's public key (base58)",
		Example: "  agentd keys show\n" +
			"  agentd keys show assistant",
		Args: cobra.MaximumNArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, err := agentArg(ctx, b, args)
			if err != nil {
				return err
			}
			k, err := b.Key(ctx, id)
			if err != nil {
				return err
			}
			if !k.Exists {
				return withCode(ExitNotFound, fmt.Errorf("agent %s has no key yet: create one with `agentd keys generate %s`, "+
					"or import one with `agentd keys import <file> %s` (one is also made when it first signs)", id, id, id))
			}
			fmt.Fprintln(e.stdout, k.Pubkey)
			return nil
		}),
	}
}

func (e *env) keysGenerateCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "generate [agent]",
		Short: "Make a new key for an agent",
		Long:  "Make a new ed25519 key for an agent and print its public key. An existing key is kept unless --force.",
		Example: "  agentd keys generate assistant\n" +
			"  agentd keys generate assistant --force",
		Args: cobra.MaximumNArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, err := agentArg(ctx, b, args)
			if err != nil {
				return err
			}
			k, err := b.GenerateKey(ctx, id, force)
			if apiStatus(err) == 409 {
				return fmt.Errorf("agent %s already has a key; --force replaces it (the old one is lost)", id)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s: new key %s\n", id, k.Pubkey)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing key")
	return cmd
}

// maxKeypairFile bounds a keypair file: 64 numbers with spaces fit in far less.
const maxKeypairFile = 64 << 10

func (e *env) keysImportCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "import <file> [agent]",
		Short: "Give an agent the key in a Solana keypair file",
		Long: "Import a Solana keypair file (a JSON array of 64 numbers: the seed, then the public key,\n" +
			"as solana-keygen writes) as an agent's key. An existing key is kept unless --force.",
		Example: "  agentd keys import ~/.config/solana/id.json assistant",
		Args:    cobra.RangeArgs(1, 2),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, err := agentArg(ctx, b, args[1:])
			if err != nil {
				return err
			}
			data, err := readSmall(args[0], maxKeypairFile)
			if err != nil {
				return err
			}
			if !json.Valid(data) {
				return fmt.Errorf("%s: not a Solana keypair file: want a JSON array of 64 numbers", args[0])
			}
			k, err := b.ImportKey(ctx, id, data, force)
			if apiStatus(err) == 409 {
				return fmt.Errorf("agent %s already has a key; --force replaces it (the old one is lost)", id)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			fmt.Fprintf(e.stdout, "%s: imported key %s\n", id, k.Pubkey)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing key")
	return cmd
}

// readSmall reads a file of at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes; a keypair file is a JSON array of 64 numbers", path, max)
	}
	return data, nil
}

// --- skills ---

func (e *env) skillsCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "skills",
		Short: "List skills and show their instructions",
		Long: "A skill is a folder with a SKILL.md file (under <data>/skills by default). Agents see each\n" +
			"available skill's name and description and load its instructions when they need them.",
		Example: "  agentd skills list\n" +
			"  agentd skills show pdf-forms",
	}, e.skillsListCmd(), e.skillsShowCmd())
}

func (e *env) skillsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List skills and whether they are available",
		Example: "  agentd skills list\n" +
			"  agentd skills list --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Skills(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []gateway.SkillInfo{}
				}
				return e.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "no skills (a skill is a folder with a SKILL.md file, under <data>/skills by default)")
				return nil
			}
			tw := table(e.stdout, "NAME", "STATUS", "DESCRIPTION")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, cell(skillStatus(s), 70), cell(s.Description, 80))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// skillStatus says whether a skill is available, and if not why.
func skillStatus(s gateway.SkillInfo) string {
	switch {
	case s.Error != "":
		return "invalid: " + s.Error
	case s.Available:
		return "available"
	case len(s.Missing) > 0:
		return "missing: " + strings.Join(s.Missing, "; ")
	}
	return "unavailable"
}

func (e *env) skillsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "show <name>",
		Short:   "Print a skill's instructions",
		Example: "  agentd skills show pdf-forms",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			s, err := b.Skill(ctx, args[0])
			if apiStatus(err) == 404 {
				return withCode(ExitNotFound, fmt.Errorf("no skill %q (see agentd skills list)", args[0]))
			}
			if err != nil {
				return err
			}
			if s.Error != "" {
				return fmt.Errorf("skill %s (%s) is invalid: %s", s.Name, s.Dir, s.Error)
			}
			if !s.Available {
				fmt.Fprintf(e.stderr, "note: skill %s is not available to agents: %s\n", s.Name, skillStatus(s.SkillInfo))
			}
			fmt.Fprint(e.stdout, s.Body)
			if !strings.HasSuffix(s.Body, "\n") {
				fmt.Fprintln(e.stdout)
			}
			return nil
		}),
	}
}

// --- send --lifecycle ---

// lifecycleFlags are send's flags for the message lifecycle.
type lifecycleFlags struct {
	on                                  bool
	channel, toolArgs                   string
	noContext, noActions, noPostprocess bool
}

// withLifecycle adds --lifecycle to the send command: the message then runs
// through the Daemon message lifecycle and the lifecycle object is printed.
func (e *env) withLifecycle(send *cobra.Command) *cobra.Command {
	var lf lifecycleFlags
	f := send.Flags()
	f.BoolVar(&lf.on, "lifecycle", false, "run the Daemon message lifecycle and print its object as JSON")
	f.StringVar(&lf.channel, "channel", "", "with --lifecycle: the message's channel id (default: the session address)")
	f.BoolVar(&lf.noContext, "no-context", false, "with --lifecycle: skip the context tools")
	f.BoolVar(&lf.noActions, "no-actions", false, "with --lifecycle: skip the action tools (and so their hooks)")
	f.BoolVar(&lf.noPostprocess, "no-postprocess", false, "with --lifecycle: skip the post-process tools")
	f.StringVar(&lf.toolArgs, "tool-args", "", `with --lifecycle: extra arguments per tool, a JSON object keyed "<server>-<tool>"`)
	send.Long += "\n\nWith --lifecycle the message runs through the Daemon message lifecycle (context tools, the\n" +
		"model, action tools and their hooks, post-process tools) and the lifecycle object is printed\n" +
		"as JSON. The session is --session, else the --channel id, else \"lifecycle\"."
	plain := send.RunE
	send.RunE = func(cmd *cobra.Command, args []string) error {
		if !lf.on {
			for _, name := range []string{"channel", "no-context", "no-actions", "no-postprocess", "tool-args"} {
				if cmd.Flags().Changed(name) {
					return usage("usage: --%s needs --lifecycle", name)
				}
			}
			return plain(cmd, args)
		}
		for _, name := range []string{"system", "silent", "origin", "json"} {
			if cmd.Flags().Changed(name) {
				return usage("usage: --%s does not go with --lifecycle", name)
			}
		}
		req, err := lf.request(cmd, args)
		if err != nil {
			return err
		}
		return e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			return e.sendLifecycle(ctx, b, args[0], req)
		})(cmd, args)
	}
	return send
}

// request builds the lifecycle call from send's flags and arguments.
func (lf *lifecycleFlags) request(cmd *cobra.Command, args []string) (gateway.LifecycleRequest, error) {
	if strings.Contains(args[0], "/") {
		return gateway.LifecycleRequest{}, usage("usage: with --lifecycle the first argument is an agent id; pick the session with --session")
	}
	req := gateway.LifecycleRequest{Message: strings.Join(args[1:], " ")}
	if cmd.Flags().Changed("session") {
		req.Session, _ = cmd.Flags().GetString("session")
	}
	req.IdempotencyKey, _ = cmd.Flags().GetString("idempotency-key")
	off := func(b bool) *bool {
		if !b {
			return nil
		}
		v := false
		return &v
	}
	o := &engine.LifecycleOptions{ChannelID: lf.channel, Context: off(lf.noContext), Actions: off(lf.noActions), PostProcess: off(lf.noPostprocess)}
	if lf.toolArgs != "" {
		if err := json.Unmarshal([]byte(lf.toolArgs), &o.ToolArgs); err != nil {
			return req, usage(`usage: --tool-args: want a JSON object such as {"server-tool": {"arg": 1}}: %v`, err)
		}
		for k, v := range o.ToolArgs {
			var m map[string]any
			if json.Unmarshal(v, &m) != nil || m == nil {
				return req, usage("usage: --tool-args: %q must be a JSON object of arguments", k)
			}
		}
	}
	req.Opts = o
	return req, nil
}

func (e *env) sendLifecycle(ctx context.Context, b *backend, agentID string, req gateway.LifecycleRequest) error {
	settleMCP(ctx, b)
	resp, err := b.Lifecycle(ctx, agentID, req)
	if err != nil {
		return err
	}
	obj := resp.Lifecycle
	if obj == nil {
		return fmt.Errorf("turn %d: the lifecycle object is missing from the answer", resp.Turn)
	}
	out, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s\n", out)
	if obj.Status != event.StatusDone {
		return withCode(ExitTurn, fmt.Errorf("turn %d %s: %s", resp.Turn, obj.Status, obj.Reason))
	}
	return nil
}
