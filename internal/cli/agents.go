package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/gateway"
)

func (e *env) agentsCmd() *cobra.Command {
	var asJSON, tree bool
	var q gateway.AgentQuery
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List agents: their definitions, and the dynamic agents made at run time",
		Example: "  agentd agents\n" +
			"  agentd agents --type subagent --parent p0a1b2c3d4e5f6g7h8i9j0k1\n" +
			"  agentd agents --tree\n" +
			"  agentd agents --all --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			if tree {
				t, err := b.AgentTree(ctx, q.Parent)
				if err != nil {
					return err
				}
				if asJSON {
					return json.NewEncoder(e.stdout).Encode(t)
				}
				return writeAgentTree(e.stdout, t.Nodes)
			}
			list, err := allAgents(ctx, b, q)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(list)
			}
			return writeAgents(e.stdout, list)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: the API's array (with --tree, its tree)")
	cmd.Flags().BoolVar(&tree, "tree", false, "print the dynamic agents as a forest, each with its state and the cost of its subtree")
	cmd.Flags().StringVar(&q.Type, "type", "", "only agents of this type (user, swarm, permanent, background, subagent, cron, system)")
	cmd.Flags().StringVar(&q.Parent, "parent", "", "only the agents this agent started (with --tree: its tree)")
	cmd.Flags().StringVar(&q.State, "state", "", "only agents in this state (starting, running, idle, done, failed, stopped; ready or invalid for a definition)")
	cmd.Flags().BoolVar(&q.All, "all", false, "the dynamic agents that ended too")
	cmd.AddCommand(e.agentsStartCmd(), e.agentsStopCmd(), e.agentsShowCmd())
	return cmd
}

// allAgents lists the agents q selects, every page of them.
func allAgents(ctx context.Context, b *backend, q gateway.AgentQuery) ([]gateway.AgentInfo, error) {
	var out []gateway.AgentInfo
	for {
		list, next, err := b.ListAgents(ctx, q)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
		if next == "" || len(list) == 0 {
			return out, nil
		}
		q.Before = next
	}
}

func (e *env) agentsStartCmd() *cobra.Command {
	var name, key string
	cmd := &cobra.Command{
		Use:   "start TEMPLATE PROMPT",
		Short: "Start a background agent of a definition with a task; it runs on while the command returns",
		Example: "  agentd agents start researcher \"Compare the three offers in offers/\" --name offers\n" +
			"  agentd agents start researcher \"Nightly report\" --key nightly-2026-11-26",
		Args: cobra.MinimumNArgs(2),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			res, err := b.StartAgent(ctx, args[0], key, gateway.StartAgentRequest{Prompt: strings.Join(args[1:], " "), Name: name})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "started %s: its log is agentd log %s\n", res.ID, res.Session)
			return nil
		}),
	}
	cmd.Flags().StringVar(&name, "name", "", "a label for the agent")
	cmd.Flags().StringVar(&key, "key", "", "an idempotency key: the same key starts the agent once")
	return cmd
}

func (e *env) agentsStopCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:     "stop ID",
		Short:   "Stop a dynamic agent and the agents below it",
		Example: "  agentd agents stop p0a1b2c3d4e5f6g7h8i9j0k1 --reason \"not needed any more\"",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			stopped, err := b.StopAgent(ctx, args[0], reason)
			if err != nil {
				return err
			}
			if len(stopped) == 0 {
				fmt.Fprintf(e.stdout, "%s had ended: nothing to stop\n", args[0])
			}
			for _, id := range stopped {
				fmt.Fprintf(e.stdout, "stopped %s\n", id)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for its log and its parent's report")
	return cmd
}

func (e *env) agentsShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show ID",
		Short:   "Show a dynamic agent: its state, lineage, costs, live children and last result",
		Example: "  agentd agents show p0a1b2c3d4e5f6g7h8i9j0k1",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			d, err := b.AgentStatus(ctx, args[0])
			if err != nil {
				return err
			}
			if d.Instance == nil {
				return withCode(ExitNotFound, fmt.Errorf("%s is an agent definition, not a dynamic agent: agentd agents lists it", args[0]))
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(d.Instance)
			}
			return writeAgentStatus(e.stdout, *d.Instance)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the agent's state as the API's JSON")
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
