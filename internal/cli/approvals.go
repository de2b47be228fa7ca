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
		Long: "List the tool calls an agent's policy marks \"ask\" that wait for a person, and below\n" +
			"the table what each will do when its tool says: the command with its directory and\n" +
			"sandbox, the diff of the files it changes, or the URL it fetches.\n" +
			"Answer one with `agentd approve <id>` (--session, --always to keep the answer as a grant)\n" +
			"or `agentd deny <id> --reason TEXT`; a call nobody answers before it expires counts as denied.",
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
			if err := tw.Flush(); err != nil {
				return err
			}
			for i := range list {
				writeCard(e.stdout, &list[i])
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return e.remoteFlags(cmd)
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
	var session, always bool
	cmd := &cobra.Command{
		Use:   "approve <id>",
		Short: "Let a waiting tool call run",
		Long: "Grant a tool call waiting for approval (see `agentd approvals`); the turn goes on and the tool runs.\n" +
			"--session lets every call of the tool in that session run without asking; --always lets this\n" +
			"exact call (the same command in the same directory, the same URL) run in every session of the\n" +
			"agent, offered only when the call's card names one. Both are kept as grants: see `agentd grants`.",
		Example: "  agentd approve 7f3a9c\n" +
			"  agentd approve 7f3a9c --session\n" +
			"  agentd approve 7f3a9c --always",
		Args: cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			scope := ""
			switch {
			case session && always:
				return usage("usage: --session and --always cannot go together")
			case session:
				scope = permit.ScopeSession
			case always:
				scope = permit.ScopeAlways
			}
			return e.resolve(ctx, b, args[0], true, "", scope)
		}),
	}
	cmd.Flags().BoolVar(&session, "session", false, "allow every call of the tool in this session")
	cmd.Flags().BoolVar(&always, "always", false, "always allow this exact call, in every session of the agent")
	return e.remoteFlags(cmd)
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
			return e.resolve(ctx, b, args[0], false, reason, "")
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, as the model is told")
	return e.remoteFlags(cmd)
}

func (e *env) resolve(ctx context.Context, b *backend, id string, grant bool, reason, scope string) error {
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
	var d permit.Decision
	var err error
	if grant && scope != "" {
		d, err = b.Approve(ctx, id, scope)
	} else {
		d, err = b.Resolve(ctx, id, grant, reason)
	}
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
		fmt.Fprintf(e.stdout, "approved %s%s%s\n", id, what, scopeWords[d.Scope])
		return nil
	}
	fmt.Fprintf(e.stdout, "denied %s%s", id, what)
	if d.Reason != "" {
		fmt.Fprintf(e.stdout, ": %s", d.Reason)
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// scopeWords say what an approval's scope keeps.
var scopeWords = map[string]string{
	permit.ScopeSession: "; its tool's calls in this session run without asking now (agentd grants)",
	permit.ScopeAlways:  "; this exact call runs without asking from now on (agentd grants)",
}
