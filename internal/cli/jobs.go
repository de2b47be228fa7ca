package cli

import (
	"agentd/internal/store"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/gateway"
	"agentd/internal/job"
)

// jobsCmd is `agentd jobs`: the jobs, their next fires and their run
// history, run now, pause and resume.
func (e *env) jobsCmd() *cobra.Command {
	subs := []*cobra.Command{e.jobsListCmd(), e.jobsShowCmd(), e.jobsRunsCmd(),
		e.jobRunCmd("run NAME", func(arg string) (string, error) { return arg, nil }),
		e.jobsPauseCmd(true), e.jobsPauseCmd(false)}
	for _, c := range subs {
		e.remoteFlags(c)
	}
	return group(&cobra.Command{
		Use:   "jobs",
		Short: "Jobs: when they fire next, what each run did; run, pause, resume",
		Long: "Jobs are `job` extension rows (agentd ext put): an agent, a prompt and triggers. agentd serve fires\n" +
			"their cron, every, at and heartbeat triggers, each scheduled time once, their watch triggers on file\n" +
			"changes, their webhooks on signed requests and their chains after another job's run, and keeps every\n" +
			"run's history. A paused job is a disabled row: nothing fires it; resumed, it catches up per its\n" +
			"triggers' catch_up policy.",
		Example: "  agentd jobs list\n" +
			"  agentd jobs runs morning-brief --json\n" +
			"  agentd jobs pause morning-brief",
	}, subs...)
}

func (e *env) jobsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the jobs with their next fire time and last run",
		Example: "  agentd jobs list\n  agentd jobs list --json",
		Args:    cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			jobs, err := b.Jobs(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				for _, j := range jobs {
					enc.Encode(j)
				}
				return nil
			}
			tw := tabwriter.NewWriter(shown(e.stdout), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tAGENT\tSTATE\tNEXT\tLAST RUN")
			for _, j := range jobs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.Name, j.Agent, jobState(j), when(j.Next), lastRun(j.Last))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per job: name, agent, enabled, triggers, next, last")
	return cmd
}

func (e *env) jobsShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show NAME",
		Short:   "Show a job: its triggers, next fires and last run",
		Example: "  agentd jobs show morning-brief",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			j, err := b.Job(ctx, args[0])
			if err != nil {
				return extErr("job "+args[0], err)
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(j)
			}
			fmt.Fprintf(e.stdout, "job %s (agent %s): %s\n", j.Name, j.Agent, jobState(j))
			if j.Description != "" {
				fmt.Fprintf(e.stdout, "  %s\n", j.Description)
			}
			for _, t := range j.Triggers {
				b, _ := json.Marshal(t)
				fmt.Fprintf(e.stdout, "  trigger %s\n", b)
			}
			fmt.Fprintf(e.stdout, "  next    %s\n", when(j.Next))
			for _, t := range j.NextFires {
				if t.After(j.Next) {
					fmt.Fprintf(e.stdout, "  then    %s\n", when(t))
				}
			}
			fmt.Fprintf(e.stdout, "  last    %s\n", lastRun(j.Last))
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the job as JSON")
	return cmd
}

func (e *env) jobsRunsCmd() *cobra.Command {
	var asJSON bool
	var limit int
	var before string
	cmd := &cobra.Command{
		Use:     "runs NAME",
		Short:   "List a job's runs, newest first: status, times, cost, output, error",
		Example: "  agentd jobs runs morning-brief\n  agentd jobs runs morning-brief --json --limit 10",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			page, err := b.JobRuns(ctx, args[0], before, limit)
			if err != nil {
				return extErr("job "+args[0], err)
			}
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				for _, r := range page.Runs {
					enc.Encode(r)
				}
				return nil
			}
			tw := tabwriter.NewWriter(shown(e.stdout), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tTRIGGER\tSTATUS\tSTARTED\tTOOK\tCOST\tDELIVERED\tOUTPUT")
			for _, r := range page.Runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t$%.4f\t%s\t%s\n", r.Run, r.Trigger, r.Status, when(r.Started), took(r),
					r.CostUSD, delivered(r), oneLine(firstOf(r.Error, r.Output), 60))
			}
			if page.Next != "" {
				fmt.Fprintf(tw, "(more: --before %s)\n", page.Next)
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per run: run, trigger, status, scheduled, started, ended, steps, tokens_in, tokens_out, cost_usd, output, error, delivered_at, delivery_error")
	cmd.Flags().IntVar(&limit, "limit", 0, "how many runs (default 50, at most 1000)")
	cmd.Flags().StringVar(&before, "before", "", "the runs before this run id (the next page)")
	return cmd
}

func (e *env) jobsPauseCmd(pause bool) *cobra.Command {
	use, short := "resume", "Resume a job: it fires again, catching up per its catch_up policy"
	if pause {
		use, short = "pause", "Pause a job: nothing fires it until it is resumed"
	}
	var asJSON bool
	cmd := &cobra.Command{
		Use:     use + " NAME",
		Short:   short,
		Example: "  agentd jobs " + use + " morning-brief",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			j, err := b.PauseJob(ctx, args[0], pause)
			if err != nil {
				return extErr("job "+args[0], err)
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(j)
			}
			fmt.Fprintf(e.stdout, "job %s: %s\n", j.Name, jobState(j))
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the job as JSON")
	return cmd
}

// jobState says whether a job fires.
func jobState(j gateway.JobInfo) string {
	switch {
	case !j.Enabled:
		return "paused"
	case j.Error != "":
		return "error: " + j.Error
	}
	return "active"
}

// when prints a time in the viewer's zone, "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST")
}

func lastRun(r *job.Result) string {
	if r == nil {
		return "-"
	}
	return r.Run + " " + r.Status
}

func took(r job.Result) string {
	if r.Ended.IsZero() {
		return "-"
	}
	return r.Ended.Sub(r.Started).Round(time.Millisecond).String()
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// oneLine is s on one line, cut to n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// delivered says in a word where a run's delivery stands: "quiet" (a
// heartbeat with nothing to say), "yes", "failed" (given up; --json says
// why), "pending" (to be made, after a crash at the next start), "-" (an
// open or cancelled run has none).
func delivered(r job.Result) string {
	switch {
	case r.Quiet:
		return "quiet"
	case !r.Delivered.IsZero() && r.DeliveryError != "":
		return "failed"
	case !r.Delivered.IsZero():
		return "yes"
	case slices.Contains(store.DeliveryStatuses(), r.Status):
		return "pending"
	}
	return "-"
}
