package cli

// agentd connectors: the chat connectors' states, and a person's decision
// on a reply one of them failed to deliver. Names, errors and chat ids
// come from chat platforms and their users: they go through termSafe
// wherever they are printed.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/gateway"
)

// connectorsCmd is `agentd connectors`.
func (e *env) connectorsCmd() *cobra.Command {
	subs := []*cobra.Command{e.connectorsListCmd(), e.connectorsStatusCmd(), e.connectorsRetryCmd()}
	for _, c := range subs {
		e.remoteFlags(c)
	}
	return group(&cobra.Command{
		Use:   "connectors",
		Short: "Chat connectors (Telegram, Discord, Slack): their state, queue and failed replies; retry one",
		Long: "A chat connector is an `integration` extension row with a platform (agentd ext put; docs/connectors.md).\n" +
			"agentd serve runs it: it receives the platform's messages, submits them to the row's agent, and\n" +
			"delivers the replies through a durable outbox. A reply it finally fails to deliver is a delivery event\n" +
			"in the session's log and is listed by `agentd connectors status NAME` until a person retries or\n" +
			"dismisses it.",
		Example: "  agentd connectors list\n" +
			"  agentd connectors status tg-main\n" +
			"  agentd connectors retry tg-main 41",
	}, subs...)
}

func (e *env) connectorsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the chat connectors: state, queue, failed replies, last error",
		Example: "  agentd connectors list\n  agentd connectors list --json",
		Args:    cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Connectors(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				for _, c := range list {
					enc.Encode(c)
				}
				return nil
			}
			return writeConnectors(e.stdout, list)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per connector (GET /v1/connectors' fields)")
	return cmd
}

func (e *env) connectorsStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "status NAME",
		Short:   "Show a connector: its state, counters, refused chats and the replies it failed to deliver",
		Example: "  agentd connectors status tg-main\n  agentd connectors status tg-main --json",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			d, err := b.Connector(ctx, args[0])
			if err != nil {
				return extErr("connector "+args[0], err)
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(d)
			}
			return writeConnectorStatus(e.stdout, d, time.Now())
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the connector as JSON, with its undelivered replies")
	return cmd
}

func (e *env) connectorsRetryCmd() *cobra.Command {
	var asJSON, dismiss bool
	cmd := &cobra.Command{
		Use:   "retry NAME OUTBOX-ID",
		Short: "Deliver a failed reply again (or, with --dismiss, leave it undelivered and stop showing it)",
		Long: "Deliver a reply the connector gave up on again, from its first undelivered part; the outbox ids are\n" +
			"listed by agentd connectors status NAME and in the session's delivery events (agentd log). --dismiss\n" +
			"leaves it undelivered and stops showing it. Either is written to the session's log.",
		Example: "  agentd connectors retry tg-main 41\n  agentd connectors retry tg-main 41 --dismiss",
		Args:    cobra.ExactArgs(2),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || id <= 0 {
				return usage("OUTBOX-ID %q is not an outbox id (a positive number: agentd connectors status %s lists them)", args[1], args[0])
			}
			it, err := b.RetryDelivery(ctx, args[0], id, dismiss)
			if err != nil {
				return extErr("connector "+args[0], err)
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(it)
			}
			if dismiss {
				fmt.Fprintf(e.stdout, "dismissed reply %d of %s: it stays undelivered\n", it.ID, termSafe(it.Connector))
			} else {
				fmt.Fprintf(e.stdout, "reply %d of %s is %s again: the connector delivers it shortly\n", it.ID, termSafe(it.Connector), it.State)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&dismiss, "dismiss", false, "leave the reply undelivered and stop showing it")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outbox row as JSON")
	return cmd
}

// writeConnectors prints the connectors' table.
func writeConnectors(w io.Writer, list []gateway.ConnectorState) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no chat connectors: add one with agentd ext put (docs/connectors.md)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPLATFORM\tAGENT\tMODE\tSTATE\tQUEUE\tFAILED\tLAST ERROR")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", termSafe(c.Name), termSafe(c.Platform), termSafe(c.Agent), dash(termSafe(c.Mode)),
			termSafe(c.State), c.Queue, c.Failed, dash(oneLine(termSafe(c.LastError), 60)))
	}
	return tw.Flush()
}

// writeConnectorStatus prints one connector, its ages from now.
func writeConnectorStatus(w io.Writer, d gateway.ConnectorDetail, now time.Time) error {
	c := d.ConnectorState
	fmt.Fprintf(w, "connector %s (%s, %s) for agent %s\n", termSafe(c.Name), termSafe(c.Platform), dash(termSafe(c.Mode)), termSafe(c.Agent))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) {
		fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{k}, args...)...)
	}
	row("state", "%s %s", termSafe(c.State), ago(now, c.Since, "since"))
	if c.Bot != "" {
		row("bot", "%s", termSafe(c.Bot))
	}
	row("dm policy", "%s", termSafe(c.DMPolicy))
	if c.PairingsPending > 0 {
		row("pairings", "%d pending: agentd pairing list --connector %s", c.PairingsPending, termSafe(c.Name))
	}
	row("queue", "%s", strings.TrimSpace(fmt.Sprintf("%d %s", c.Queue, ago(now, c.Oldest, "oldest"))))
	row("failed", "%d not seen", c.Failed)
	if !c.RateLimitedUntil.IsZero() && c.RateLimitedUntil.After(now) {
		row("paused", "rate limited for %s more", c.RateLimitedUntil.Sub(now).Round(time.Second))
	}
	if c.LastError != "" {
		row("last error", "%s %s", oneLine(termSafe(c.LastError), 200), ago(now, c.LastErrorAt, ""))
	}
	row("counters", "received %d, delivered %d, retried %d, failed %d, edits %d", c.Received, c.Delivered, c.Retried, c.FailedTotal, c.Edits)
	if len(c.Refused) > 0 {
		var parts []string
		for _, reason := range slices.Sorted(maps.Keys(c.Refused)) {
			parts = append(parts, fmt.Sprintf("%s %d", termSafe(reason), c.Refused[reason]))
		}
		row("refused", "%s", strings.Join(parts, ", "))
	}
	if len(c.RefusedChats) > 0 {
		row("refused chats", "%s (allow one in groups.allow)", termSafe(strings.Join(c.RefusedChats, ", ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Undelivered) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nreplies it failed to deliver (agentd connectors retry %s ID [--dismiss]):\n", termSafe(c.Name))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCHAT\tSESSION\tTURN\tTRIES\tFAILED\tERROR")
	for _, it := range d.Undelivered {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%s\t%s\n", it.ID, termSafe(it.Chat), it.SessionID, it.Turn, it.Tries,
			age(now, it.UpdatedAt), dash(oneLine(termSafe(it.Error), 80)))
	}
	return tw.Flush()
}

// ago is "(word 2026-11-26 08:00:00 UTC, 3h0m0s ago)" for t from now, or
// "" for no time.
func ago(now, t time.Time, word string) string {
	if t.IsZero() {
		return ""
	}
	if word != "" {
		word += " "
	}
	return fmt.Sprintf("(%s%s, %s)", word, t.UTC().Format("2006-01-02 15:04:05 MST"), age(now, t))
}

// age is "3h0m0s ago" for t from now, "-" for no time.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}
