package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/store"
)

func (e *env) sessionsCmd() *cobra.Command {
	var f store.SessionFilter
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions, most recently active first",
		Long:  "List sessions, most recently active first. --state is one of: " + strings.Join(store.States(), ", ") + ".",
		Example: "  agentd sessions\n" +
			"  agentd sessions --agent assistant --state active\n" +
			"  agentd sessions --limit 10 --json",
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if f.State != "" && !slices.Contains(store.States(), f.State) {
				return usage("--state %q is not a session state; the states are %s", f.State, strings.Join(store.States(), ", "))
			}
			return nil
		},
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Sessions(ctx, f)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(list)
			}
			return writeSessions(e.stdout, list)
		}),
	}
	cmd.Flags().StringVar(&f.Agent, "agent", "", "only this agent's sessions")
	cmd.Flags().StringVar(&f.State, "state", "", "only sessions in this state")
	cmd.Flags().IntVar(&f.Limit, "limit", 100, "at most this many")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// writeSessions prints the sessions' table. DELIVERY counts the replies
// a chat connector finally failed to deliver that no person has seen
// (agentd connectors status shows them).
func writeSessions(w io.Writer, list []gateway.SessionInfo) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATE\tEVENTS\tUPDATED\tDELIVERY\tTITLE")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", s.Address, s.State, s.LastSeq, s.UpdatedAt.Local().Format(time.DateTime),
			delivery(s.Undelivered), titleCell(s.Title))
	}
	return tw.Flush()
}

// delivery is a session's DELIVERY cell: "-", or "2 failed".
func delivery(undelivered int) string {
	if undelivered == 0 {
		return "-"
	}
	return fmt.Sprintf("%d failed", undelivered)
}

// titleCell is a session's title as a table shows it: at most 40
// characters (titles are one line without control characters).
func titleCell(t string) string {
	if r := []rune(t); len(r) > 40 {
		return string(r[:39]) + "…"
	}
	return t
}

func (e *env) logCmd() *cobra.Command {
	var asJSON, follow bool
	var after int64
	cmd := &cobra.Command{
		Use:   "log <agent>[/<key>]",
		Short: "Print a session's event log",
		Long: "Print every event of a session's log in order. --follow keeps waiting for new events.\n" +
			"An agent alone names the session send and chat use by default (" + defaultKeyHelp + ").",
		Example: "  agentd log assistant\n" +
			"  agentd log assistant/cli:alice\n" +
			"  agentd log assistant/ticket-42 --follow\n" +
			"  agentd log assistant/ticket-42 --after 120 --json",
		Args: cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			addr := sessionArg(args[0])
			enc, out := json.NewEncoder(e.stdout), shown(e.stdout)
			var marks heartbeatMarks
			for {
				wait := time.Duration(0)
				if follow {
					wait = 30 * time.Second
				}
				page, err := b.Events(ctx, addr, after, 1000, wait)
				if err != nil {
					if follow && ctx.Err() != nil {
						return nil
					}
					return err
				}
				for _, ev := range page.Events {
					if asJSON {
						enc.Encode(ev)
					} else {
						fmt.Fprintln(out, FormatEvent(ev)+marks.of(ev))
					}
				}
				after = page.Next
				if len(page.Events) == 0 && !follow {
					return nil
				}
			}
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print events as JSON lines")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events")
	cmd.Flags().Int64Var(&after, "after", 0, "start after this sequence number")
	return cmd
}

// heartbeatMarks follows a log as it is printed, to mark the end of a
// heartbeat's turn that had nothing to do: the log shows every turn,
// and says which ones the model's context and the console's chat leave
// out. A turn's events are contiguous, so the last heartbeat's turn is
// all it keeps.
type heartbeatMarks struct{ beat int64 }

// of returns the mark of ev, "" if none.
func (m *heartbeatMarks) of(ev event.Event) string {
	switch ev.Kind {
	case event.Input:
		var d event.InputData
		if ev.Decode(&d) == nil && d.Heartbeat() {
			m.beat = ev.Turn
		}
	case event.TurnEnd:
		var d event.TurnEndData
		if m.beat != 0 && ev.Turn == m.beat && ev.Decode(&d) == nil && d.NothingToDo() {
			return " (heartbeat: nothing to do; left out of the context and the chat)"
		}
	}
	return ""
}

// FormatEvent renders one event on one line for a person.
func FormatEvent(ev event.Event) string {
	head := fmt.Sprintf("%5d  %s  t%-5d %-14s", ev.Seq, ev.Time.Local().Format("15:04:05.000"), ev.Turn, ev.Kind)
	var body string
	switch ev.Kind {
	case event.Input, event.SystemMessage:
		var d event.InputData
		ev.Decode(&d)
		body = d.Text
		if d.Origin != "" {
			body = "[" + d.Origin + "] " + body
		}
		if d.Silent {
			body += " (silent)"
		}
		if d.Heartbeat() {
			body += " (heartbeat)"
		}
	case event.Text, event.Thought:
		var d event.TextData
		ev.Decode(&d)
		body = d.Text
	case event.ToolCall:
		var d event.ToolCallData
		ev.Decode(&d)
		body = fmt.Sprintf("%s %s  [%s]", d.Name, d.Args, d.ID)
	case event.ToolResult:
		var d event.ToolResultData
		ev.Decode(&d)
		st := "ok"
		switch {
		case d.Interrupted:
			st = "interrupted"
		case d.IsError:
			st = "error"
		}
		body = fmt.Sprintf("%s %s (%d ms): %s", d.Name, st, d.DurationMS, d.Output)
	case event.ModelCall:
		var d event.ModelCallData
		ev.Decode(&d)
		body = fmt.Sprintf("%s/%s step %d attempt %d %.1f ms in=%d out=%d $%.6f", d.Provider, d.Model, d.Step, d.Attempt, d.LatencyMS, d.InputTokens, d.OutputTokens, d.CostUSD)
		if d.Error != "" {
			body += " error: " + d.Error
		}
	case event.TurnEnd:
		var d event.TurnEndData
		ev.Decode(&d)
		body = fmt.Sprintf("%s steps=%d %.1f ms", d.Status, d.Steps, d.DurationMS)
		if d.Budget != "" {
			body += " budget=" + d.Budget
		}
		if d.Reason != "" {
			body += ": " + d.Reason
		}
	case event.Reset, event.Marker:
		var d event.MarkerData
		ev.Decode(&d)
		body = d.Name
		if d.Reason != "" {
			body += ": " + d.Reason
		}
	case event.Error:
		var d event.ErrorData
		ev.Decode(&d)
		body = d.Kind + ": " + d.Message
	case event.WorkingMemory:
		var d event.WorkingMemoryData
		ev.Decode(&d)
		body = d.Key + " = " + string(d.Value)
		if d.Deleted {
			body = d.Key + " deleted"
		}
	case event.Summary:
		var d event.SummaryData
		ev.Decode(&d)
		kind := "summary"
		if d.Pruned {
			kind = "pruned"
		}
		body = fmt.Sprintf("%s of %d messages through seq %d (%d → %d tokens): %s", kind, d.Folded, d.Through, d.FoldedTokens, d.Tokens, d.Text)
	case event.ContextWarning:
		var d event.ContextData
		ev.Decode(&d)
		body = fmt.Sprintf("%s: %d of %d tokens", d.Action, d.Tokens, d.Window)
	case event.Lifecycle:
		var d event.LifecycleData
		ev.Decode(&d)
		switch {
		case len(d.Start) > 0:
			body = d.Phase + " starting " + strings.Join(d.Start, ", ")
		case d.Phase == event.PhaseApproval:
			body = "approval signed"
		default:
			body = fmt.Sprintf("%s %s", d.Phase, d.Tool)
			if d.Target != "" {
				body += " → " + d.Target
			}
			if d.IsError {
				body += " error"
			}
			body += ": " + d.Output
		}
	case event.ApprovalRequested:
		var d event.ApprovalRequestData
		ev.Decode(&d)
		body = fmt.Sprintf("%s %s %s (id %s): %s", d.Tool, d.Args, "waits for approval", d.ID, d.Reason)
	case event.ApprovalResolved:
		var d event.ApprovalResolvedData
		ev.Decode(&d)
		switch {
		case d.Granted:
			body = fmt.Sprintf("%s granted by %s (id %s)", d.Tool, d.By, d.ID)
		case d.Expired:
			body = fmt.Sprintf("%s expired (id %s)", d.Tool, d.ID)
		default:
			body = fmt.Sprintf("%s denied by %s (id %s): %s", d.Tool, d.By, d.ID, d.Reason)
		}
	case event.Delivery:
		var d event.DeliveryData
		ev.Decode(&d)
		body = deliveryLine(d, string(ev.Data))
	default:
		body = string(ev.Data)
	}
	return head + " " + clip(strings.ReplaceAll(body, "\n", "⏎"), 300)
}

// deliveryLine says what became of a reply a connector was to deliver;
// raw (the payload) for an op it does not know.
func deliveryLine(d event.DeliveryData, raw string) string {
	what := "reply"
	if d.Turn == 0 {
		what = "notice"
	}
	to := d.Platform + " " + d.Connector
	switch d.Op {
	case event.DeliveryFailed:
		tries := "tries"
		if d.Tries == 1 {
			tries = "try"
		}
		line := fmt.Sprintf("✗ %s not delivered to %s after %d %s", what, to, d.Tries, tries)
		if d.Error != "" {
			line += ": " + d.Error
		}
		return line
	case event.DeliveryInDoubt:
		return fmt.Sprintf("? %s to %s may show twice (agentd stopped while sending)", what, to)
	case event.DeliveryRetried:
		return fmt.Sprintf("↻ delivery of the %s to %s retried", what, to)
	}
	return raw
}
