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
	cmd := &cobra.Command{Use: "history", Short: "Search conversations (every message is kept at full fidelity)"}
	var agents []string
	var limit int
	var asJSON bool
	var cursor string
	search := &cobra.Command{
		Use:   "search <query>...",
		Short: "Full-text search over sessions' messages, best match first",
		Long: "Search every message of every session (or of --agent's) with BM25 ranking. All words must occur;\n" +
			"a word ending in * matches words starting with it. Matches are shown «like this».",
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
	cmd.AddCommand(search)
	return cmd
}

// memoryCmd reads and edits agents' long-term memory.
func (e *env) memoryCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "memory", Short: "An agent's long-term memory: search, list, show, forget"}
	var agentFlag string
	var limit int
	var asJSON bool
	pick := func(ctx context.Context, b *backend) (string, error) {
		if agentFlag != "" {
			return agentArg(ctx, b, []string{agentFlag})
		}
		return agentArg(ctx, b, nil)
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
		Use:   "search <query>...",
		Short: "Recall memories: keyword and vector search, best first",
		Args:  cobra.MinimumNArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, err := pick(ctx, b)
			if err != nil {
				return err
			}
			page, err := b.Memories(ctx, id, strings.Join(args, " "), limit)
			if err != nil {
				return err
			}
			return printItems(page)
		}),
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "The newest memories",
		Args:  cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			id, err := pick(ctx, b)
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
		Use:   "show <entity>",
		Short: "An entity with its observations and relations",
		Args:  cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, err := pick(ctx, b)
			if err != nil {
				return err
			}
			ent, err := b.MemoryEntity(ctx, id, args[0])
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
		Use:   "forget",
		Short: "Remove memories: entities (with their observations and relations), observations, relations or insights",
		Args:  cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			id, err := pick(ctx, b)
			if err != nil {
				return err
			}
			if len(req.Entities)+len(req.Observations)+len(req.Relations)+len(req.Insights) == 0 {
				return usage("usage: name what to forget with --entity, --observation, --relation or --insight")
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
		c.Flags().StringVar(&agentFlag, "agent", "", "whose memory (default: the only agent)")
		cmd.AddCommand(c)
	}
	for _, c := range []*cobra.Command{search, list} {
		c.Flags().IntVar(&limit, "limit", 20, "how many")
	}
	for _, c := range []*cobra.Command{search, list, show} {
		c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	}
	return cmd
}
