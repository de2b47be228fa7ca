package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/gateway"
)

func (e *env) agentsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List agents",
		Example: "  agentd agents\n" +
			"  agentd agents --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Agents(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(list)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tTYPE\tMODEL\tSTATE")
			for _, a := range list {
				m := a.Provider + " " + a.Model
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Type, strings.TrimSpace(m), a.State)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, a := range list {
				if len(a.Problems) == 0 {
					continue
				}
				if a.State == gateway.AgentInvalid {
					fmt.Fprintf(e.stdout, "\n%s: invalid, not loaded:\n", a.ID)
				} else {
					fmt.Fprintf(e.stdout, "\n%s: its file does not load; the last good definition stays in use:\n", a.ID)
				}
				for _, p := range a.Problems {
					fmt.Fprintf(e.stdout, "  %s\n", problemText(p))
				}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// problemText formats a problem as agentd reports config errors:
// file:line: field: message.
func problemText(p gateway.Problem) string {
	if p.File == "" {
		return p.Message
	}
	return agent.FieldError{File: p.File, Line: p.Line, Field: p.Field, Msg: p.Message}.Error()
}

// agentArg returns the agent a command names, or the only agent there is
// (a system agent, such as the memory keeper, is named, never picked).
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
	if own, _ := pickable(list); len(own) == 1 {
		return own[0].ID, nil
	}
	return "", usage("usage: name the agent, one of: %s", strings.Join(ids, ", "))
}

// pickable splits agents into those a command may pick when none is named
// (agent.Pickable) and the system agents, each in list's order.
func pickable(list []gateway.AgentInfo) (own, system []gateway.AgentInfo) {
	for _, a := range list {
		if agent.Pickable(a.Type) {
			own = append(own, a)
		} else {
			system = append(system, a)
		}
	}
	return own, system
}
