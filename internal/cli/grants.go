package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"agentd/internal/gateway"
)

func (e *env) grantsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "grants",
		Short: "List or revoke the standing grants given with approvals",
		Long: "A grant is what `agentd approve --session` or `--always` (or the console's \"Allow for this\n" +
			"session\" and \"Always allow this exact command\") keeps: a tool's calls in one session, or\n" +
			"one exact call in every session of an agent, run without asking. Revoking one makes them\n" +
			"ask again.",
		Example: "  agentd grants\n" +
			"  agentd grants list --agent coder\n" +
			"  agentd grants revoke 3f9a1c2b7d4e",
		Args: cobra.NoArgs,
	}
	list := e.remoteFlags(e.grantsListCmd())
	cmd.RunE = list.RunE
	cmd.Flags().AddFlagSet(list.Flags())
	cmd.AddCommand(list, e.remoteFlags(e.grantsRevokeCmd()))
	return cmd
}

func (e *env) grantsListCmd() *cobra.Command {
	var agentID string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the grants, oldest first",
		Example: "  agentd grants list\n" +
			"  agentd grants list --agent coder --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Grants(ctx, agentID)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []gateway.GrantInfo{}
				}
				return e.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "no grants")
				return nil
			}
			tw := table(e.stdout, "ID", "AGENT", "TOOL", "SESSION", "CALL", "BY", "SINCE")
			for _, g := range list {
				session := g.Session
				if session == "" {
					session = "every"
				}
				call := "any"
				if g.Exact != "" {
					call = cell(termSafe(strings.ReplaceAll(g.Exact, "\x00", " · ")), 60)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.ID, g.Agent, termSafe(g.Tool), session, call, cell(g.By, 20),
					g.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().StringVar(&agentID, "agent", "", "only this agent's grants")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) grantsRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "revoke <id>",
		Short:   "Revoke a grant: the calls it let run ask again",
		Example: "  agentd grants revoke 3f9a1c2b7d4e",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			if strings.TrimSpace(args[0]) == "" {
				return usage("usage: a grant id is required (see agentd grants)")
			}
			err := b.RevokeGrant(ctx, args[0])
			if apiStatus(err) == 404 {
				return withCode(ExitNotFound, errors.New("no grant "+args[0]+" (see agentd grants)"))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "revoked grant %s: its calls ask again\n", args[0])
			return nil
		}),
	}
}
