package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/user"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/model"
	"agentd/internal/model/fakellm"
	"agentd/internal/store"
)

func (e *env) serveCmd() *cobra.Command {
	var grace time.Duration
	var listen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run agentd: the runtime and its API",
		Long: "Run agentd in the foreground. It resumes any turn a previous run left unfinished,\n" +
			"serves the local API on a unix socket in the data directory (mode 0600) and on TCP\n" +
			"(--listen, default gateway.listen in agentd.yaml, else " + agent.DefaultGatewayListen + ") behind a token\n" +
			"(agentd token), and on SIGINT/SIGTERM stops accepting input, lets running turns finish\n" +
			"for --grace, and exits. It refuses to start without a strong token.",
		Example: "  agentd serve\n" +
			"  agentd serve --data /srv/agentd --listen 127.0.0.1:7420\n" +
			"  agentd serve --listen off --grace 30s",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			ctx := cmd.Context()
			dir := e.dataDir()
			cfg, err := agent.LoadConfig(dir)
			if err != nil {
				return err
			}
			log := e.logger(cfg.Log.Level)
			var listenFlag *string
			if cmd.Flags().Changed("listen") {
				listenFlag = &listen
			}
			tcp, err := e.gatewayTCP(dir, cfg, listenFlag, log)
			if err != nil {
				return err
			}
			a, err := app.Open(ctx, dir, &app.Options{Logger: log, Version: Version})
			if err != nil {
				if errors.Is(err, app.ErrLocked) {
					return withCode(ExitUnavailable, err)
				}
				return err
			}
			if err := a.Start(ctx); err != nil {
				a.Close(context.Background())
				return err
			}
			srv, err := a.API(ctx)
			if err != nil {
				a.Close(context.Background())
				return err
			}
			a.Bootstrap()
			a.TitleSessions()
			abs, _ := filepath.Abs(dir)
			out := e.stdout
			lw := &lockedWriter{w: out}
			fmt.Fprintf(out, "agentd %s: data in %s\n", Version, abs)
			echo := false
			for _, d := range a.Agents.List() {
				fmt.Fprintf(out, "  agent %-16s %s\n", d.ID, describeModel(d.Model))
				echo = echo || d.Model.Provider == agent.ProviderEcho
			}
			errs := a.Agents.Errors()
			for _, id := range slices.Sorted(maps.Keys(errs)) {
				fmt.Fprintf(out, "  agent %-16s invalid, not loaded:\n", id)
				for line := range strings.SplitSeq(errs[id].Error(), "\n") {
					fmt.Fprintf(out, "    %s\n", line)
				}
			}
			if echo {
				fmt.Fprintln(out, agent.ModelHint())
			}
			sock := filepath.Join(dir, app.SocketFile)
			// Ordered shutdown. At the signal the API keeps answering while
			// the runtime drains: new input is refused (503 shutting_down),
			// running turns get the grace period, and clients waiting for a
			// turn get its reply or a retryable 503. Then the servers stop,
			// then the rest (the store last).
			serving, stopServing := context.WithCancel(context.WithoutCancel(ctx))
			defer stopServing()
			drained := make(chan struct{})
			go func() {
				defer close(drained)
				select {
				case <-ctx.Done():
				case <-serving.Done(): // a server failed
					return
				}
				gctx, cancel := context.WithTimeout(context.Background(), grace)
				defer cancel()
				a.Drain(gctx)
				stopServing()
			}()
			serr := serveAPI(serving, srv, sock, tcp, lw, func() {
				lw.printf("listening on %s (ready in %s)\n", sock, time.Since(start).Round(time.Millisecond))
			})
			stopServing()
			<-drained
			sctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			cerr := a.Close(sctx)
			if serr != nil && ctx.Err() == nil {
				return serr
			}
			if cerr != nil {
				return cerr
			}
			fmt.Fprintln(out, "agentd stopped")
			return nil
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long running turns may finish at shutdown")
	cmd.Flags().StringVar(&listen, "listen", "", "TCP address of the API, host:port, or off (default gateway.listen, else "+agent.DefaultGatewayListen+"; port 0: any free port)")
	return cmd
}

func describeModel(m agent.Model) string {
	s := m.Provider
	if m.Provider == agent.ProviderEcho {
		return "echo (built-in offline model)"
	}
	s += " " + m.Name
	if m.BaseURL != "" {
		s += " at " + m.BaseURL
	}
	if m.APIKeyEnv != "" && os.Getenv(m.APIKeyEnv) == "" {
		s += " (warning: " + m.APIKeyEnv + " is not set; its turns will fail)"
	}
	for _, f := range m.Fallbacks {
		s += ", then " + f.Provider + " " + f.Name
	}
	return s
}

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

func (e *env) sendCmd() *cobra.Command {
	var key, idem, origin string
	var asJSON, system, silent, reopen bool
	var imageFiles []string
	var images []gateway.MessageImage
	cmd := &cobra.Command{
		Use:   "send <agent> <message>...",
		Short: "Send one message and print the reply",
		Long: "Send one message to an agent's session and print the reply when the turn ends.\n" +
			"With --json, print every event of the turn as a JSON line, then a final line with the end.\n" +
			"--image FILE attaches an image (PNG, JPEG, GIF or WebP, told by its content; at most 5 MiB\n" +
			"each, 8 per message); repeat it for several.\n" +
			"Exit code 4 means the turn ended without completing (a budget, an error, a cancel); 5 that\n" +
			"agentd refused the message for now, or stopped before its turn ended (shutting down, a full\n" +
			"disk): the message says whether to send it again.",
		Example: "  agentd send assistant \"What is on my calendar today?\"\n" +
			"  agentd send assistant --session ticket-42 \"Summarise the thread\"\n" +
			"  agentd send assistant --json \"hello\" | jq .kind\n" +
			"  agentd send assistant --image chart.png \"What does this chart show?\"\n" +
			"  agentd send ops --system --silent --origin deploy \"v2.3 is live\"",
		Args: cobra.MinimumNArgs(2),
		PreRunE: func(*cobra.Command, []string) error {
			var err error
			if images, err = readImages(imageFiles); err != nil {
				return withCode(ExitUsage, err)
			}
			return nil
		},
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			addr := address(args[0], key)
			enc := json.NewEncoder(e.stdout)
			m := gateway.MessageRequest{Text: strings.Join(args[1:], " "), IdempotencyKey: idem, Source: "cli", System: system, Silent: silent, Origin: origin,
				Images: images, Reopen: reopen}
			if silent {
				// Logged for the next turn; no turn to wait for.
				rc, err := b.Submit(ctx, addr, m)
				if err == nil {
					fmt.Fprintf(e.stdout, "%s: logged for the next turn (item %d)\n", rc.Session, rc.Turn)
				}
				return err
			}
			rc, end, err := b.Stream(ctx, addr, m,
				func(ev event.Event) error {
					if asJSON && ev.Seq > 0 { // logged events only: the same lines agentd log --json prints
						return enc.Encode(ev)
					}
					return nil
				})
			if err != nil {
				return err
			}
			if asJSON {
				enc.Encode(gateway.StreamLine{Receipt: &rc, End: &end})
			} else if end.Reply != "" {
				fmt.Fprintln(shown(e.stdout), end.Reply)
			}
			if end.Status != event.StatusDone {
				return withCode(ExitTurn, fmt.Errorf("turn %d %s: %s", rc.Turn, end.Status, end.Reason))
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&key, "session", defaultKey(), "session key within the agent")
	cmd.Flags().StringVar(&idem, "idempotency-key", "", "a key that makes a repeated send start no second turn")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the turn's events as JSON lines")
	cmd.Flags().BoolVar(&system, "system", false, "send as a system message (shown to the model as <system_message>)")
	cmd.Flags().BoolVar(&silent, "silent", false, "a system message that is logged and enters the next turn's context without starting one")
	cmd.Flags().StringVar(&origin, "origin", "", "who a system message is from")
	cmd.Flags().StringArrayVar(&imageFiles, "image", nil, "attach an image file: PNG, JPEG, GIF or WebP (repeatable)")
	cmd.Flags().BoolVar(&reopen, "reopen", false, "reopen the session first if it is closed")
	return cmd
}

// readImages reads image files for a message. The type comes from each
// file's content, never its name; a file of another type, over
// model.MaxImageBytes, or more than model.MaxImages files are refused.
func readImages(files []string) ([]gateway.MessageImage, error) {
	if len(files) > model.MaxImages {
		return nil, fmt.Errorf("--image: %d images, at most %d per message", len(files), model.MaxImages)
	}
	var out []gateway.MessageImage
	for _, name := range files {
		data, err := readImageFile(name)
		if err != nil {
			return nil, fmt.Errorf("--image %s: %w", name, err)
		}
		mime, err := model.SniffImage(data)
		if err != nil {
			return nil, fmt.Errorf("--image %s: %w", name, err)
		}
		out = append(out, gateway.MessageImage{MIMEType: mime, Data: data})
	}
	return out, nil
}

// readImageFile reads a file of at most model.MaxImageBytes.
func readImageFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, model.MaxImageBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > model.MaxImageBytes {
		return nil, fmt.Errorf("larger than %d bytes", model.MaxImageBytes)
	}
	return data, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func (e *env) agentsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "List agents",
		Example: "  agentd agents\n" +
			"  agentd agents --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Agents(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(e.stdout).Encode(list)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tTYPE\tMODEL\tSTATE")
			for _, a := range list {
				m := a.Provider + " " + a.Model
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Type, strings.TrimSpace(m), a.State)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, a := range list {
				if len(a.Problems) == 0 {
					continue
				}
				if a.State == gateway.AgentInvalid {
					fmt.Fprintf(e.stdout, "\n%s: invalid, not loaded:\n", a.ID)
				} else {
					fmt.Fprintf(e.stdout, "\n%s: its file does not load; the last good definition stays in use:\n", a.ID)
				}
				for _, p := range a.Problems {
					fmt.Fprintf(e.stdout, "  %s\n", problemText(p))
				}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// problemText formats a problem as agentd reports config errors:
// file:line: field: message.
func problemText(p gateway.Problem) string {
	if p.File == "" {
		return p.Message
	}
	return agent.FieldError{File: p.File, Line: p.Line, Field: p.Field, Msg: p.Message}.Error()
}

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
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tSTATE\tEVENTS\tUPDATED\tTITLE")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", s.Address, s.State, s.LastSeq, s.UpdatedAt.Local().Format(time.DateTime), titleCell(s.Title))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().StringVar(&f.Agent, "agent", "", "only this agent's sessions")
	cmd.Flags().StringVar(&f.State, "state", "", "only sessions in this state")
	cmd.Flags().IntVar(&f.Limit, "limit", 100, "at most this many")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
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
						fmt.Fprintln(out, FormatEvent(ev))
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
	default:
		body = string(ev.Data)
	}
	return head + " " + clip(strings.ReplaceAll(body, "\n", "⏎"), 300)
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

// withBackend makes a command's RunE that is given a client of the daemon,
// or of agentd run in process, and closes it afterwards.
func (e *env) withBackend(fn func(ctx context.Context, b *backend, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		b, err := e.connect(ctx, cmd.Annotations[makesData] != "")
		if err != nil {
			return err
		}
		defer b.close()
		return fn(ctx, b, args)
	}
}

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

func (e *env) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version",
		Example: "  agentd version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(e.stdout, "agentd %s %s %s/%s\n", Version, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
			return nil
		},
	}
}

func (e *env) initCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Write a commented example configuration into the data directory",
		Example: "  agentd init\n" +
			"  agentd init --data /srv/agentd",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			dir := e.dataDir()
			created, err := agent.Init(dir)
			if err != nil {
				return err
			}
			if len(created) == 0 {
				fmt.Fprintf(e.stdout, "%s already has a configuration; nothing written\n", dir)
				return nil
			}
			for _, f := range created {
				fmt.Fprintln(e.stdout, "wrote", f)
			}
			fmt.Fprintln(e.stdout, agent.ModelHint())
			return nil
		},
	}
}

func (e *env) fakellmCmd() *cobra.Command {
	var listen, script string
	cmd := &cobra.Command{
		Use:   "fakellm",
		Short: "Run the scripted fake model server (OpenAI and Anthropic wire formats)",
		Long:  "Run a fake model server for demos and tests. Without --script it echoes the last user\nmessage. The script format is described in docs/fakellm.md.",
		Example: "  agentd fakellm\n" +
			"  agentd fakellm --listen 127.0.0.1:8089 --script demo.fake",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var s *fakellm.Script
			if script != "" {
				src, err := os.ReadFile(script)
				if err != nil {
					return err
				}
				if s, err = fakellm.ParseScript(script, src); err != nil {
					return err
				}
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			a := ln.Addr().String()
			fmt.Fprintf(e.stdout, "fakellm listening on http://%s\n  OpenAI-compatible base_url: http://%s/v1\n  Anthropic base_url:         http://%s\n", a, a, a)
			srv := fakellm.New(s, &fakellm.Options{Logger: e.logger("warn")})
			return srv.Serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8400", "address to listen on")
	cmd.Flags().StringVar(&script, "script", "", "script file (default: echo)")
	return cmd
}
