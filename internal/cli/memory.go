package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
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
