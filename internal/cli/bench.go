package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"agentd/internal/bench"
)

func (e *env) benchCmd() *cobra.Command {
	var asJSON bool
	var o bench.Options
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure agentd end to end against the fake model and print a table",
		Long: "Run agentd against fakellm over loopback with instant replies and report turn overhead,\n" +
			"throughput, start-up time and memory. --quick runs smaller counts (for CI);\n" +
			"the figures in docs/performance.md come from a full run.",
		Example: "  agentd bench\n" +
			"  agentd bench --quick --json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Version = Version
			res, err := bench.Run(cmd.Context(), &o)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(res)
			}
			return res.WriteTable(e.stdout)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&o.Quick, "quick", false, "smaller counts, for CI")
	cmd.Flags().BoolVar(&o.InProcessOnly, "in-process-only", false, "skip the figures that start agentd serve as a child process")
	cmd.Flags().StringVar(&o.Synchronous, "synchronous", "full", "the store's synchronous mode: full (the default, durable on power loss) or normal, to see what durability costs")
	return cmd
}
