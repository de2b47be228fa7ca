package cli

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"agentd/internal/event"
)

// address builds a session address from an agent (or a full address) and
// a --session key.
func address(agentOrAddr, key string) string {
	if strings.Contains(agentOrAddr, "/") {
		return agentOrAddr
	}
	return agentOrAddr + "/" + key
}

// defaultKey is the session key the CLI uses when none is given:
// cli:<user>, the user from $USER, else the account running agentd, else
// "local".
func defaultKey() string {
	u := os.Getenv("USER")
	if u == "" {
		if cur, err := user.Current(); err == nil {
			u = cur.Username
		}
	}
	if u == "" {
		u = "local"
	}
	return "cli:" + u
}

// defaultKeyHelp says what defaultKey is, for help texts.
const defaultKeyHelp = "cli:$USER"

// sessionArg is the session a command's argument names: <agent>/<key>,
// or <agent> alone for the session send and chat use by default.
func sessionArg(arg string) string { return address(arg, defaultKey()) }

// sessionCmd is a command that does one thing to one session.
func (e *env) sessionCmd(name, short, done string, do func(context.Context, *backend, string) error) *cobra.Command {
	return &cobra.Command{
		Use:     name + " <agent>[/<key>]",
		Short:   short,
		Long:    short + ".\nAn agent alone names the session send and chat use by default (" + defaultKeyHelp + ").",
		Example: "  agentd " + name + " assistant\n  agentd " + name + " assistant/cli:alice\n  agentd " + name + " support/ticket-42",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			addr := sessionArg(args[0])
			if err := do(ctx, b, addr); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s: %s\n", addr, done)
			return nil
		}),
	}
}

func (e *env) resetCmd() *cobra.Command {
	return e.sessionCmd("reset", "Restart a session's context (the log keeps everything)", "context reset",
		func(ctx context.Context, b *backend, addr string) error { return b.Reset(ctx, addr) })
}

func (e *env) compactCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compact <agent>[/<key>] [focus]...",
		Short: "Fold a session's older turns into a summary now (the log keeps everything)",
		Long: "Ask the model to summarise the session's turns before the most recent ones (memory.recent_turns),\n" +
			"keeping the focus words in particular. Identifiers the summary leaves out are added back to it.",
		Example: "  agentd compact assistant/ticket-42\n" +
			"  agentd compact assistant/ticket-42 the customer's order numbers",
		Args: cobra.MinimumNArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			addr := sessionArg(args[0])
			res, err := b.Compact(ctx, addr, strings.Join(args[1:], " "))
			if err != nil {
				return err
			}
			if res.End != nil {
				fmt.Fprintf(e.stdout, "%s: %s\n", addr, res.End.Reply)
				if res.End.Status != event.StatusDone {
					return withCode(ExitTurn, fmt.Errorf("compaction %s: %s", res.End.Status, res.End.Reason))
				}
			}
			return nil
		}),
	}
}

func (e *env) cancelCmd() *cobra.Command {
	return e.sessionCmd("cancel", "Cancel a session's running turn", "turn cancelled",
		func(ctx context.Context, b *backend, addr string) error { return b.Cancel(ctx, addr) })
}

func (e *env) closeCmd() *cobra.Command {
	return e.sessionCmd("close", "Close a session: its log stays, new input is refused until it is reopened", "closed",
		func(ctx context.Context, b *backend, addr string) error { return b.CloseSession(ctx, addr) })
}

func (e *env) reopenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "reopen <agent>[/<key>]",
		Short: "Reopen a closed session: it takes input again, its context where it stopped",
		Example: "  agentd reopen assistant/cli:alice\n" +
			"  agentd send assistant --session cli:alice --reopen \"where were we?\"",
		Args: cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			addr := sessionArg(args[0])
			reopened, err := b.Reopen(ctx, addr)
			if err != nil {
				return err
			}
			if reopened {
				fmt.Fprintf(e.stdout, "%s: reopened\n", addr)
			} else {
				fmt.Fprintf(e.stdout, "%s: not closed; nothing to do\n", addr)
			}
			return nil
		}),
	}
}
