package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/doctor"
	"agentd/internal/model"
	"agentd/internal/sandbox"
)

func (e *env) doctorCmd() *cobra.Command {
	var asJSON, probe bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the data directory, agents, models, MCP servers and gateway, and say what to fix",
		Long: "Check what agentd needs: the data directory (its modes, its lock, its database's schema),\n" +
			"every agent file, every model (its API key is set, its host answers; with --probe, a\n" +
			"one-token call), every MCP server (its state in the running agentd, else that its command\n" +
			"is found or its host answers) and the gateway (its address, its token, its TLS files).\n" +
			"Each failure says what to do. doctor writes nothing; it exits 1 when a check fails.",
		Example: "  agentd doctor\n" +
			"  agentd doctor --probe\n" +
			"  agentd doctor --data /srv/agentd --json | jq '.checks[] | select(.status == \"fail\")'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			o := &doctor.Options{Store: func(ctx context.Context, c agent.StoreConfig) (doctor.StoreSchema, bool, error) {
				where, have, want, ok, err := app.StoreSchema(ctx, e.store(), c)
				return doctor.StoreSchema{Where: where, Have: have, Want: want}, ok, err
			}, Sandbox: sandbox.New(nil)}
			if c, _ := e.daemon(ctx); c != nil {
				o.Daemon = c
			}
			if probe {
				o.Prober = modelProber{app.NewModels(nil)}
			}
			r := doctor.Run(ctx, e.absDataDir(), doctor.Layout{DB: app.DBFile, Lock: app.LockFile, Socket: app.SocketFile, HasData: app.HasData}, o)
			if asJSON {
				if err := e.printJSON(r); err != nil {
					return err
				}
			} else {
				printDoctor(e, r)
			}
			if r.Failed() {
				return withCode(ExitError, silent{fmt.Errorf("%d checks failed", r.Count(doctor.Fail))})
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the checks as JSON")
	cmd.Flags().BoolVar(&probe, "probe", false, "make a one-token call to every model (it costs a token each)")
	return cmd
}

func printDoctor(e *env, r *doctor.Report) {
	running := "agentd is not running"
	if r.Running {
		running = fmt.Sprintf("agentd is running, pid %d", r.PID)
	}
	fmt.Fprintf(e.stdout, "agentd doctor: %s (%s)\n", r.Data, running)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", strings.ToUpper(string(c.Status)), c.Area, c.Name, c.Detail)
		if c.Fix != "" && c.Status != doctor.OK {
			fmt.Fprintf(tw, "  \t\t\t→ %s\n", c.Fix)
		}
	}
	tw.Flush()
	fails, warns := r.Count(doctor.Fail), r.Count(doctor.Warn)
	switch {
	case fails > 0:
		fmt.Fprintf(e.stdout, "%d failed, %d to look at: each → says what to do\n", fails, warns)
	case warns > 0:
		fmt.Fprintf(e.stdout, "nothing failed; %d to look at\n", warns)
	default:
		fmt.Fprintln(e.stdout, "everything checked is fine")
	}
}

// modelProber makes a one-token call through agentd's own model clients.
type modelProber struct{ ms *app.Models }

func (p modelProber) Probe(ctx context.Context, m agent.Model) error {
	prov, err := p.ms.Provider(m)
	if err != nil {
		return err
	}
	_, err = prov.Stream(ctx, &model.Request{Model: m.Name, MaxTokens: 1,
		Messages: []model.Message{{Role: model.RoleUser, Content: "Reply with the word ok."}}}, nil)
	return err
}
