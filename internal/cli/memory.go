package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"agentd/internal/gateway"
)

// historyCmd searches conversations.
func (e *env) historyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "history", Short: "Search conversations (every message is kept at full fidelity)",
		Example: "  agentd history search invoice 5521"}
	var agents []string
	var limit int
	var asJSON bool
	var cursor string
	search := &cobra.Command{
		Use:   "search <query>...",
		Short: "Full-text search over sessions' messages, best match first",
		Long: "Search every message of every session (or of --agent's) with BM25 ranking. All words must occur;\n" +
			"a word ending in * matches words starting with it. Matches are shown «like this».",
		Example: "  agentd history search invoice 5521\n" +
			"  agentd history search refund* --agent support --limit 5\n" +
			"  agentd history search \"error budget\" --json",
		Args: cobra.MinimumNArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			page, err := b.SearchHistory(ctx, strings.Join(args, " "), agents, limit, cursor)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(page)
			}
			if len(page.Hits) == 0 {
				fmt.Fprintln(e.stdout, "no matches")
				return nil
			}
			for _, h := range page.Hits {
				fmt.Fprintf(e.stdout, "%s #%d  %s  %s\n    %s\n", h.Session, h.Seq, h.Time, h.Kind, h.Snippet)
			}
			if page.Next != "" {
				fmt.Fprintf(e.stdout, "(more: --cursor %s)\n", page.Next)
			}
			return nil
		}),
	}
	search.Flags().StringSliceVar(&agents, "agent", nil, "only these agents' sessions")
	search.Flags().IntVar(&limit, "limit", 20, "results per page (at most 100)")
	search.Flags().StringVar(&cursor, "cursor", "", "the next page of an earlier search")
	search.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return group(cmd, search)
}

// memoryCmd reads and edits agents' long-term memory. The agent is each
// command's first argument, as with send and keys; it may be left out
// where that is unambiguous and there is only one agent. --agent is the
// older spelling, still taken (with a notice) for one release.
func (e *env) memoryCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "memory", Short: "An agent's long-term memory: search, list, show, forget",
		Example: "  agentd memory search assistant tea\n  agentd memory show assistant \"Ada Lovelace\""}
	var agentFlag string
	var limit int
	var asJSON bool
	// pick returns the agent and the arguments after it. Where the agent
	// may be left out, fewer arguments than full mean it was.
	pick := func(ctx context.Context, b *backend, path string, args []string, full int) (string, []string, error) {
		if agentFlag != "" {
			fmt.Fprintf(e.stderr, "agentd: --agent is deprecated and goes away in the next release: name the agent first, as in %s %s\n",
				path, strings.Join(append([]string{agentFlag}, args...), " "))
			id, err := agentArg(ctx, b, []string{agentFlag})
			return id, args, err
		}
		if len(args) < full {
			id, err := agentArg(ctx, b, nil)
			return id, args, err
		}
		id, err := agentArg(ctx, b, args[:1])
		if err != nil && full > 1 {
			err = fmt.Errorf("%w; the agent comes first: %s <agent> %s", err, path, strings.Join(args, " "))
		}
		return id, args[1:], err
	}
	// memArgs checks a command's arguments: n after the agent (at least n
	// when more), the agent required or not.
	memArgs := func(n int, more, agentRequired bool) cobra.PositionalArgs {
		return func(cmd *cobra.Command, args []string) error {
			lo, hi, want := n, n+1, strings.TrimPrefix(cmd.Use, cmd.Name()+" ")
			if agentFlag != "" {
				hi, want = n, strings.TrimSpace(strings.NewReplacer("<agent>", "", "[agent]", "").Replace(want))+" (with --agent)"
			} else if agentRequired {
				lo = n + 1
			}
			if len(args) < lo || (!more && len(args) > hi) {
				got := fmt.Sprintf("%d arguments", len(args))
				if len(args) == 1 {
					got = "1 argument"
				}
				return usage("%s; want %s", got, want)
			}
			return nil
		}
	}
	printItems := func(page gateway.MemoryPage) error {
		if asJSON {
			return json.NewEncoder(e.stdout).Encode(page)
		}
		if len(page.Items) == 0 {
			fmt.Fprintln(e.stdout, "no memories")
		}
		for _, it := range page.Items {
			text := it.Text
			if it.Snippet != "" {
				text = it.Snippet
			}
			if it.Entity != "" && it.Kind != "entity" {
				text = it.Entity + ": " + text
			}
			fmt.Fprintf(e.stdout, "%-11s %-6d %s  %s\n", it.Kind, it.ID, it.Created.Format("2006-01-02"), clip(text, 200))
		}
		if page.Degraded {
			fmt.Fprintf(e.stdout, "(keyword search only: %s)\n", page.Reason)
		}
		return nil
	}
	search := &cobra.Command{
		Use:   "search <agent> <query>...",
		Short: "Recall memories: keyword and vector search, best first",
		Example: "  agentd memory search assistant green tea\n" +
			"  agentd memory search assistant lighthouse --limit 5 --json",
		Args: memArgs(1, true, true),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, query, err := pick(ctx, b, "agentd memory search", args, 2)
			if err != nil {
				return err
			}
			page, err := b.Memories(ctx, id, strings.Join(query, " "), limit)
			if err != nil {
				return err
			}
			return printItems(page)
		}),
	}
	list := &cobra.Command{
		Use:   "list [agent]",
		Short: "The newest memories",
		Example: "  agentd memory list assistant\n" +
			"  agentd memory list --limit 50 --json",
		Args: memArgs(0, false, false),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, _, err := pick(ctx, b, "agentd memory list", args, 1)
			if err != nil {
				return err
			}
			page, err := b.Memories(ctx, id, "", limit)
			if err != nil {
				return err
			}
			return printItems(page)
		}),
	}
	show := &cobra.Command{
		Use:   "show [agent] <entity>",
		Short: "An entity with its observations and relations",
		Example: "  agentd memory show assistant \"Ada Lovelace\"\n" +
			"  agentd memory show \"Ada Lovelace\" --json",
		Args: memArgs(1, false, false),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, rest, err := pick(ctx, b, "agentd memory show", args, 2)
			if err != nil {
				return err
			}
			ent, err := b.MemoryEntity(ctx, id, rest[0])
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(ent)
			}
			fmt.Fprintf(e.stdout, "%s (%s), entity %d\n", ent.Name, ent.Type, ent.ID)
			for _, o := range ent.Observations {
				fmt.Fprintf(e.stdout, "  observation %-6d %s  %s\n", o.ID, o.Created.Format("2006-01-02"), o.Text)
			}
			for _, r := range ent.Relations {
				fmt.Fprintf(e.stdout, "  relation    %-6d %s %s %s\n", r.ID, r.From, r.Type, r.To)
			}
			return nil
		}),
	}
	var req gateway.ForgetRequest
	forget := &cobra.Command{
		Use:   "forget [agent]",
		Short: "Remove memories: entities (with their observations and relations), observations, relations or insights",
		Example: "  agentd memory forget assistant --entity \"Ada Lovelace\"\n" +
			"  agentd memory forget assistant --observation 12,13 --insight 4",
		Args: memArgs(0, false, false),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			if len(req.Entities)+len(req.Observations)+len(req.Relations)+len(req.Insights) == 0 {
				return usage("usage: name what to forget with --entity, --observation, --relation or --insight")
			}
			id, _, err := pick(ctx, b, "agentd memory forget", args, 1)
			if err != nil {
				return err
			}
			req.Agent = id
			n, err := b.Forget(ctx, req)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "forgot %d\n", n)
			return nil
		}),
	}
	forget.Flags().StringSliceVar(&req.Entities, "entity", nil, "entity names")
	forget.Flags().Int64SliceVar(&req.Observations, "observation", nil, "observation ids")
	forget.Flags().Int64SliceVar(&req.Relations, "relation", nil, "relation ids")
	forget.Flags().Int64SliceVar(&req.Insights, "insight", nil, "insight ids")
	for _, c := range []*cobra.Command{search, list, show, forget} {
		c.Flags().StringVar(&agentFlag, "agent", "", "deprecated: name the agent as the first argument")
		c.Flags().MarkHidden("agent")
		cmd.AddCommand(c)
	}
	for _, c := range []*cobra.Command{search, list} {
		c.Flags().IntVar(&limit, "limit", 20, "how many")
	}
	for _, c := range []*cobra.Command{search, list, show} {
		c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	}
	return group(cmd)
}
