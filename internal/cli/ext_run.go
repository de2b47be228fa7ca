package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// extRunCmd is `agentd ext run job/NAME`: a job's run, now (a
// subcommand of extCmd, which adds --remote and --token).
func (e *env) extRunCmd() *cobra.Command {
	return e.jobRunCmd("run job/<name>", func(arg string) (string, error) {
		typ, n, ok := strings.Cut(arg, "/")
		if !ok || typ != "job" || n == "" {
			return "", usage("usage: agentd ext run job/<name>: only jobs run, not %q", arg)
		}
		return n, nil
	})
}

// jobRunCmd is a job's run now, the job named by its argument as name
// reads it: `agentd ext run job/NAME`, `agentd jobs run NAME`.
func (e *env) jobRunCmd(use string, nameOf func(arg string) (string, error)) *cobra.Command {
	var vars []string
	var payload map[string]string
	var name string
	var asJSON, noWait bool
	cmd := &cobra.Command{
		Use:   use,
		Short: "Run a job now and print its answer",
		Long: "Run a job extension now: its prompt, filled with the --var values ({{payload.KEY}}), the time\n" +
			"({{fired_at}}) and the job's previous output ({{previous_output}}), goes to its agent in a fresh\n" +
			"session job:<name>:<run> (or the job's named session) under the job's budget. agentd waits for the\n" +
			"run's end, delivers its output where the job says, and prints it. Exit code 4 means the run\n" +
			"failed (a budget, an error, a cancel); 3 that no job of that name is active.",
		Example: "  agentd ext run job/morning-brief\n" +
			"  agentd ext run job/summarise --var path=notes/today.md --var tone=short\n" +
			"  agentd ext run job/nightly --no-wait",
		Args: cobra.ExactArgs(1),
		PreRunE: func(_ *cobra.Command, args []string) error {
			n, err := nameOf(args[0])
			if err != nil {
				return err
			}
			name = n
			for _, v := range vars {
				k, val, ok := strings.Cut(v, "=")
				if !ok || k == "" {
					return usage("usage: --var %q: want KEY=VALUE", v)
				}
				if payload == nil {
					payload = map[string]string{}
				}
				payload[k] = val
			}
			return nil
		},
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			res, err := b.RunJob(ctx, name, payload, !noWait)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				json.NewEncoder(e.stdout).Encode(res)
			case noWait:
				fmt.Fprintf(e.stdout, "job %s run %s %s in %s\n", res.Job, res.Run, res.Status, res.Session)
			case res.Output != "":
				fmt.Fprintln(shown(e.stdout), res.Output)
			}
			if res.DeliveryError != "" {
				fmt.Fprintf(e.stderr, "agentd: job %s run %s: not delivered: %s\n", res.Job, res.Run, res.DeliveryError)
			}
			if res.Failed() {
				return withCode(ExitTurn, fmt.Errorf("job %s run %s failed: %s (its session: %s)", res.Job, res.Run, res.Error, res.Session))
			}
			return nil
		}),
	}
	cmd.Flags().StringArrayVar(&vars, "var", nil, "a payload value KEY=VALUE, the prompt's {{payload.KEY}} (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the run as JSON: job, run, trigger, session, turn, status, scheduled, started, ended, figures, output, error")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the run has started")
	return cmd
}
