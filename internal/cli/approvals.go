package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/permit"
)

func (e *env) approvalsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List tool calls waiting for a person's approval",
		Long: "List the tool calls an agent's policy marks \"ask\" that wait for a person.\n" +
			"Answer one with `agentd approve <id>` or `agentd deny <id> --reason TEXT`;\n" +
			"a call nobody answers before it expires counts as denied.",
		Example: "  agentd approvals\n" +
			"  agentd approvals --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Approvals(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []permit.Request{}
				}
				return e.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "no approvals waiting")
				if b.notRunning != "" {
					fmt.Fprintf(e.stdout, "(%s: calls wait for approval only in `agentd serve`)\n", b.notRunning)
				}
				return nil
			}
			now := time.Now()
			tw := table(e.stdout, "ID", "SESSION", "TOOL", "ARGS", "EXPIRES", "REASON")
			for _, r := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Session, r.Tool, cell(compactJSON(r.Args), 60),
					expires(r.ExpiresAt, now), cell(r.Reason, 80))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// compactJSON returns raw without insignificant spaces.
func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

// expires says in how long t comes.
func expires(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	if d <= 0 {
		return "expired"
	}
	return "in " + d.String()
}

func (e *env) approveCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "approve <id>",
		Short:   "Let a waiting tool call run",
		Long:    "Grant a tool call waiting for approval (see `agentd approvals`); the turn goes on and the tool runs.",
		Example: "  agentd approve 7f3a9c",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			return e.resolve(ctx, b, args[0], true, "")
		}),
	}
}

func (e *env) denyCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "deny <id>",
		Short: "Refuse a waiting tool call",
		Long: "Deny a tool call waiting for approval (see `agentd approvals`). The tool does not run;\n" +
			"the model is told it was denied, with --reason if given, and the turn goes on.",
		Example: "  agentd deny 7f3a9c --reason \"not on a Friday\"",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			return e.resolve(ctx, b, args[0], false, reason)
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, as the model is told")
	return cmd
}

func (e *env) resolve(ctx context.Context, b *backend, id string, grant bool, reason string) error {
	if strings.TrimSpace(id) == "" {
		return usage("usage: an approval id is required (see agentd approvals)")
	}
	// The request, to say what was answered.
	var what string
	if list, err := b.Approvals(ctx); err == nil {
		for _, r := range list {
			if r.ID == id {
				what = fmt.Sprintf(" (%s in %s)", r.Tool, r.Session)
			}
		}
	}
	d, err := b.Resolve(ctx, id, grant, reason)
	if apiStatus(err) == 404 {
		msg := fmt.Sprintf("no approval %q is waiting: it was answered, it expired, or there never was one", id)
		if b.notRunning != "" {
			msg += " (" + b.notRunning + ": calls wait for approval only in `agentd serve`)"
		}
		return withCode(ExitNotFound, errors.New(msg))
	}
	if err != nil {
		return err
	}
	if d.Granted {
		fmt.Fprintf(e.stdout, "approved %s%s\n", id, what)
		return nil
	}
	fmt.Fprintf(e.stdout, "denied %s%s", id, what)
	if d.Reason != "" {
		fmt.Fprintf(e.stdout, ": %s", d.Reason)
	}
	fmt.Fprintln(e.stdout)
	return nil
}
