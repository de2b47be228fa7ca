package cli

// agentd pairing: the codes strangers got from a connector's bot, and a
// person's decision on one. Names come from chat platforms' users: they
// go through termSafe.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/gateway"
)

// pairingCmd is `agentd pairing`.
func (e *env) pairingCmd() *cobra.Command {
	subs := []*cobra.Command{e.pairingListCmd(), e.pairingDecideCmd(true), e.pairingDecideCmd(false), e.pairingRevokeCmd()}
	for _, c := range subs {
		e.remoteFlags(c)
	}
	return group(&cobra.Command{
		Use:   "pairing",
		Short: "Who may talk to a chat connector's agent: pending codes, approve, deny, revoke",
		Long: "Under the dm_policy pairing (the default), a stranger who writes to a connector's bot gets a one-time\n" +
			"code and nothing else; their message is not kept. Approve the code and they may talk to the agent\n" +
			"(they are told so); deny it and they are ignored. Codes expire after an hour; a connector keeps at\n" +
			"most 3 pending. Codes are accepted with or without the dash, in any case.",
		Example: "  agentd pairing list\n" +
			"  agentd pairing approve K7PQ-M2XD\n" +
			"  agentd pairing revoke tg-main 123456789",
	}, subs...)
}

func (e *env) pairingListCmd() *cobra.Command {
	var asJSON, all bool
	var conn string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the pending pairing codes (--all: decided and expired ones too)",
		Example: "  agentd pairing list\n  agentd pairing list --connector tg-main --all",
		Args:    cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Pairings(ctx, conn, all)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				for _, p := range list {
					enc.Encode(p)
				}
				return nil
			}
			return writePairings(e.stdout, list, all, time.Now())
		}),
	}
	cmd.Flags().StringVar(&conn, "connector", "", "only this connector's")
	cmd.Flags().BoolVar(&all, "all", false, "approved, denied and expired pairings too, with who decided")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per pairing: connector, user_id, name, code, state, created_at, expires_at, decided_at, decided_by")
	return cmd
}

func (e *env) pairingDecideCmd(approve bool) *cobra.Command {
	use, short := "deny", "Deny a pairing code: its user's messages are ignored"
	if approve {
		use, short = "approve", "Approve a pairing code: its user may talk to the agent"
	}
	var asJSON bool
	cmd := &cobra.Command{
		Use:     use + " CODE",
		Short:   short,
		Example: "  agentd pairing " + use + " K7PQ-M2XD",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			p, err := b.DecidePairing(ctx, args[0], approve)
			if err != nil {
				return extErr("pairing "+args[0], err)
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(p)
			}
			who := fmt.Sprintf("%s (%s)", termSafe(p.Name), termSafe(p.UserID))
			if p.Name == "" {
				who = termSafe(p.UserID)
			}
			if approve {
				fmt.Fprintf(e.stdout, "approved %s: %s may talk to %s's agent now\n", showCode(p.Code), who, termSafe(p.Connector))
			} else {
				fmt.Fprintf(e.stdout, "denied %s: %s is ignored on %s\n", showCode(p.Code), who, termSafe(p.Connector))
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the pairing as JSON")
	return cmd
}

func (e *env) pairingRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "revoke CONNECTOR USER",
		Short:   "Remove a user's pairing: they pair again to talk",
		Example: "  agentd pairing revoke tg-main 123456789",
		Args:    cobra.ExactArgs(2),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			if err := b.RevokePairing(ctx, args[0], args[1]); err != nil {
				return extErr("pairing of "+args[1]+" on "+args[0], err)
			}
			fmt.Fprintf(e.stdout, "revoked %s's pairing on %s: they pair again to talk\n", termSafe(args[1]), termSafe(args[0]))
			return nil
		}),
	}
}

// writePairings prints the pairings' table (all: with their state and
// who decided), expiry from now.
func writePairings(w io.Writer, list []gateway.PairingInfo, all bool, now time.Time) error {
	if len(list) == 0 {
		what := "no pending pairing codes"
		if all {
			what = "no pairings"
		}
		_, err := fmt.Fprintln(w, what)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if all {
		fmt.Fprintln(tw, "CODE\tCONNECTOR\tUSER\tNAME\tSTATE\tEXPIRES\tDECIDED")
	} else {
		fmt.Fprintln(tw, "CODE\tCONNECTOR\tUSER\tNAME\tEXPIRES")
	}
	for _, p := range list {
		cells := []any{showCode(p.Code), termSafe(p.Connector), termSafe(p.UserID), dash(oneLine(termSafe(p.Name), 40))}
		if all {
			cells = append(cells, termSafe(p.State), pairingExpires(now, p), decided(now, p))
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cells...)
		} else {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", append(cells, pairingExpires(now, p))...)
		}
	}
	return tw.Flush()
}

// showCode is a code as its user got it: XXXX-XXXX.
func showCode(c string) string {
	c = termSafe(c)
	if len(c) == 8 {
		return c[:4] + "-" + c[4:]
	}
	return c
}

// pairingExpires says when a pending code expires, from now.
func pairingExpires(now time.Time, p gateway.PairingInfo) string {
	if p.State != "pending" {
		return "-"
	}
	return expires(p.ExpiresAt, now)
}

// decided says who decided a pairing, and when.
func decided(now time.Time, p gateway.PairingInfo) string {
	if p.DecidedAt.IsZero() {
		return "-"
	}
	return termSafe(p.DecidedBy) + " " + age(now, p.DecidedAt)
}
