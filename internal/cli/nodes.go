package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func (e *env) nodesCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "nodes",
		Short: "List the agentd nodes sharing the store",
		Long: "List the agentd nodes on the store's database, oldest first: live, or dead once their heartbeat\n" +
			"is older than the lease TTL, with the sessions whose turns each runs (the live leases it holds);\n" +
			"* marks the node that answers. With SQLite, the node alone.",
		Example: "  agentd nodes\n" +
			"  agentd nodes --remote https://agentd.example.com --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Nodes(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(list)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NODE\tNAME\tSTATE\tSESSIONS\tADDR\tVERSION\tSTARTED\tHEARTBEAT")
			for _, n := range list {
				id := n.ID
				if n.Self {
					id += " *"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s ago\n", id, n.Name, n.State, n.Sessions, n.Addr, n.Version,
					n.StartedAt.Local().Format(time.DateTime), time.Since(n.HeartbeatAt).Round(time.Second))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return e.remoteFlags(cmd)
}
