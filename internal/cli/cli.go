// Package cli is agentd's command line. Commands talk to a running daemon
// through its local API socket when there is one, and otherwise run agentd
// in process on the same data directory, with the same results; chat and
// send talk to a gateway on another host with --remote.
//
// Exit codes a script can rely on:
//
//	0  success
//	1  an error (the message says what)
//	2  bad usage: unknown command, flag or argument
//	3  not found: no such agent or session, or no agentd data in the data directory
//	4  the turn ended without completing (budget, error, cancelled)
//	5  unavailable: agentd is not running (status), the data directory is
//	   locked by a process that does not answer, or agentd refused the
//	   request for now (503: shutting down, a full disk, too busy; the
//	   message says when to send it again)
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitNotFound    = 3
	ExitTurn        = 4
	ExitUnavailable = 5
)

// Version is agentd's version, set at build time with -ldflags "-X agentd/internal/cli.Version=...".
var Version = "dev"

// exitError carries an exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// usage is a bad-usage error (exit code 2).
func usage(format string, args ...any) error {
	return withCode(ExitUsage, fmt.Errorf(format, args...))
}

// env is what every command shares.
type env struct {
	ctx       context.Context
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	dataFlag  string
	logLevel  string
	storeFlag string

	// remote and remoteToken are --remote and --token (chat, send).
	remote      string
	remoteToken string
}

// Main runs the command line and returns the exit code. ctx is cancelled
// when the process is asked to stop (main handles the signals).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	root := e.root()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	if !errors.As(err, new(silent)) {
		fmt.Fprintln(stderr, "agentd:", err)
	}
	if hint := apiHint(err); hint != "" {
		fmt.Fprintln(stderr, "agentd:", hint)
	}
	code := exitCode(err)
	if code == ExitUsage && cmd != nil {
		printUsage(stderr, cmd)
	}
	return code
}

// printUsage says, after a usage error, how cmd is used and where its help is.
func printUsage(w io.Writer, cmd *cobra.Command) {
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "usage: %s <command>\n", cmd.CommandPath())
		fmt.Fprintf(w, "run '%s --help' for the commands\n", cmd.CommandPath())
		return
	}
	fmt.Fprintf(w, "usage: %s\n", cmd.UseLine())
	fmt.Fprintf(w, "run '%s --help' for its flags and examples\n", cmd.CommandPath())
}

// exitCode maps an error to the exit code a script sees.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case isUsage(err):
		return ExitUsage
	case errors.Is(err, runtime.ErrUnknownAgent), errors.Is(err, store.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, runtime.ErrBadAddress):
		return ExitUsage
	}
	var ae *gateway.APIError
	if errors.As(err, &ae) {
		switch ae.Status {
		case 400:
			return ExitUsage
		case 404:
			return ExitNotFound
		case 503:
			return ExitUnavailable
		}
	}
	return ExitError
}

func isUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "unknown flag") ||
		strings.HasPrefix(s, "unknown shorthand flag") || strings.Contains(s, "arg(s)") ||
		strings.HasPrefix(s, "invalid argument") || strings.HasPrefix(s, "flag needs an argument") ||
		strings.HasPrefix(s, "usage:")
}

// apiStatus returns the HTTP status of an API error, or 0.
func apiStatus(err error) int {
	var ae *gateway.APIError
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// apiHint explains an API refusal the user can act on, or returns "".
func apiHint(err error) string {
	var ae *gateway.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	switch {
	case ae.Status == 401:
		return "the gateway refused the token: pass --token or set " + gateway.TokenEnv + " to what `agentd token` prints on the gateway's host (after `agentd token rotate`, the new one)"
	case ae.Status == 403 && ae.Code == "forbidden" && !strings.Contains(ae.Msg, "remote_admin"):
		return "the gateway refused the request's Host or Origin: add the name you reach it by to gateway.allowed_hosts in its agentd.yaml"
	case ae.Status == 429:
		return "too many failed attempts from this address: wait a few seconds"
	case ae.Code == "session_closed":
		return "agentd reopen <agent>/<key> reopens it; send --reopen reopens it and sends"
	}
	return ""
}

func (e *env) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "agentd",
		Short: "agentd runs LLM agents as a long-lived service",
		Long:  "agentd runs LLM agents as a long-lived service: sessions are append-only event logs,\nturns survive restarts, and everything runs from one binary.",
		Example: "  agentd init && agentd serve\n" +
			"  agentd send assistant \"hello\"\n" +
			"  agentd chat assistant\n" +
			"  agentd status\n" +
			"  agentd doctor",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	root.PersistentFlags().StringVar(&e.dataFlag, "data", "", "data directory (default $AGENTD_HOME or ./agentd-data)")
	root.PersistentFlags().StringVar(&e.storeFlag, "store", "", "the store: sqlite or a postgres:// URL (default $"+app.StoreEnv+", else agentd.yaml's store.url, else sqlite)")
	root.PersistentFlags().StringVar(&e.logLevel, "log-level", "", "log level: debug, info, warn, error (default from agentd.yaml, else info)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(ExitUsage, err) })
	root.AddCommand(
		e.serveCmd(), mayMakeData(e.remoteFlags(e.chatCmd())), mayMakeData(e.remoteFlags(e.withContext(e.withLifecycle(e.sendCmd())))), e.tokenCmd(), e.agentsCmd(), e.sessionsCmd(), e.logCmd(),
		e.resetCmd(), e.compactCmd(), e.historyCmd(), e.memoryCmd(), e.cancelCmd(), e.closeCmd(), e.reopenCmd(), e.versionCmd(), e.initCmd(), e.fakellmCmd(), e.fakechatCmd(), e.benchCmd(),
		e.approvalsCmd(), e.approveCmd(), e.denyCmd(), e.grantsCmd(), e.mcpCmd(), e.keysCmd(), e.skillsCmd(),
		e.statusCmd(), e.doctorCmd(), e.serviceCmd(), e.storeCmd(), e.nodesCmd(), e.secretCmd(), e.extCmd(), e.jobsCmd(), e.contextsCmd(), e.connectorsCmd(), e.pairingCmd(), e.identityServerCmd(),
	)
	return root
}

// group makes cmd a command that only holds subcommands: alone it prints
// its help; with an argument it is an unknown command.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	cmd.AddCommand(subs...)
	return cmd
}

func (e *env) dataDir() string { return agent.DataDir(e.dataFlag) }

// store is the store --store or $AGENTD_STORE selects, "" for agentd.yaml's.
func (e *env) store() string {
	if e.storeFlag != "" {
		return e.storeFlag
	}
	return os.Getenv(app.StoreEnv)
}
