package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// contextsCmd is `agentd contexts`: the context types (`context`
// extension rows) a message may be sent to with send --context.
func (e *env) contextsCmd() *cobra.Command {
	list := e.contextsListCmd()
	e.remoteFlags(list)
	return group(&cobra.Command{
		Use:   "contexts",
		Short: "Context types: the kinds of conversation an agent has one of per args",
		Long: "Context types are `context` extension rows (agentd ext put): an agent, the args that name an\n" +
			"instance and a key template; send to an instance with agentd send --context TYPE --args '{…}'.",
		Example: "  agentd contexts list",
	}, list)
}

func (e *env) contextsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the context types with their agent and key template",
		Example: "  agentd contexts list\n  agentd contexts list --json",
		Args:    cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			l, err := b.Contexts(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				for _, c := range l.Contexts {
					enc.Encode(c)
				}
				return nil
			}
			tw := tabwriter.NewWriter(shown(e.stdout), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tAGENT\tKEY\tDESCRIPTION")
			for _, c := range l.Contexts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Agent, c.Key, c.Description)
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per type: name, agent, key, description")
	return cmd
}
