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
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

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

// env is what every command shares.
type env struct {
	ctx      context.Context
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	dataFlag string
	logLevel string

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
	root.PersistentFlags().StringVar(&e.logLevel, "log-level", "", "log level: debug, info, warn, error (default from agentd.yaml, else info)")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(ExitUsage, err) })
	root.AddCommand(
		e.serveCmd(), mayMakeData(e.remoteFlags(e.chatCmd())), mayMakeData(e.remoteFlags(e.withLifecycle(e.sendCmd()))), e.tokenCmd(), e.agentsCmd(), e.sessionsCmd(), e.logCmd(),
		e.resetCmd(), e.compactCmd(), e.historyCmd(), e.memoryCmd(), e.cancelCmd(), e.closeCmd(), e.reopenCmd(), e.versionCmd(), e.initCmd(), e.fakellmCmd(), e.benchCmd(),
		e.approvalsCmd(), e.approveCmd(), e.denyCmd(), e.mcpCmd(), e.keysCmd(), e.skillsCmd(),
		e.statusCmd(), e.doctorCmd(), e.serviceCmd(),
	)
	return root
}

func (e *env) dataDir() string { return agent.DataDir(e.dataFlag) }

func (e *env) logger(cfgLevel string) *slog.Logger {
	lvl := e.logLevel
	if lvl == "" {
		lvl = cfgLevel
	}
	var l slog.Level
	switch lvl {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: l}))
}

// backend is a client of the daemon, or of agentd run in process.
type backend struct {
	*gateway.Client
	close  func() error
	remote bool
	// notRunning says, for agentd run in process, that the daemon is not
	// running and what was looked at: "agentd is not running on DIR (no
	// socket there)".
	notRunning string
}

// connect returns a client of the gateway named by --remote, else of the
// running daemon, else starts agentd in process on the data directory.
// Unless mayMake, a directory with no agentd data is refused (noData)
// rather than made.
func (e *env) connect(ctx context.Context, mayMake bool) (*backend, error) {
	if e.remote != "" {
		return e.remoteBackend()
	}
	dir := e.dataDir()
	c, why := e.daemon(ctx)
	if c != nil {
		return &backend{Client: c, close: func() error { return nil }, remote: true}, nil
	}
	// In process: quiet unless asked, so a command's output stays its own.
	a, err := app.Open(ctx, dir, &app.Options{Logger: e.logger("warn"), Version: Version, Existing: !mayMake})
	if err != nil {
		switch {
		case errors.Is(err, app.ErrLocked):
			return nil, withCode(ExitUnavailable, fmt.Errorf("%w, and its socket does not answer", err))
		case errors.Is(err, app.ErrNoData):
			return nil, e.noData()
		}
		return nil, err
	}
	if err := a.Start(ctx); err != nil {
		a.Close(context.Background())
		return nil, err
	}
	api, err := a.API(ctx)
	if err != nil {
		a.Close(context.Background())
		return nil, err
	}
	pc, stop := gateway.Pipe(api)
	return &backend{Client: pc, notRunning: fmt.Sprintf("agentd is not running on %s (%s)", e.absDataDir(), why),
		close: func() error {
			stop()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return a.Close(ctx)
		}}, nil
}

// daemon returns a client of the agentd serving the data directory, or
// why there is none: "no socket there", "its socket does not answer".
func (e *env) daemon(ctx context.Context) (*gateway.Client, string) {
	sock := filepath.Join(e.dataDir(), app.SocketFile)
	if _, err := os.Stat(sock); err != nil {
		return nil, "no socket there"
	}
	c := gateway.NewUnixClient(sock)
	if err := c.Ping(ctx); err != nil {
		return nil, "its socket does not answer"
	}
	return c, ""
}
