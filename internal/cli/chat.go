package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"agentd/internal/command"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
)

// HistoryFile is the chat's input history inside the data directory.
const HistoryFile = "chat_history"

func (e *env) chatCmd() *cobra.Command {
	var key string
	var reopen bool
	cmd := &cobra.Command{
		Use:   "chat <agent>",
		Short: "Chat with an agent in the terminal",
		Long: "An interactive chat that streams the reply and shows tool calls as they run.\n" +
			"In a terminal, lines can be edited (arrows, Ctrl-A/E/K/U/W) and earlier ones recalled with\n" +
			"the up arrow (kept in " + HistoryFile + " in the data directory, mode 0600). Ctrl-C during a reply\n" +
			"cancels the turn and returns to the prompt (a second Ctrl-C stops waiting for it); at the\n" +
			"prompt it clears the line, and on an empty line, pressed twice, leaves; so does Ctrl-D.\n" +
			"Lines from a pipe are read as they are. Commands:\n" + chatHelp(),
		Example: "  agentd chat assistant\n" +
			"  agentd chat assistant --session work\n" +
			"  agentd chat assistant --remote https://agentd.example.com --token \"$AGENTD_TOKEN\"\n" +
			"  printf 'hello\\n/quit\\n' | agentd chat assistant",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			addr := address(args[0], key)
			if _, _, err := runtime.ParseAddress(addr); err != nil {
				return err
			}
			hist := ""
			if e.remote == "" {
				hist = filepath.Join(e.dataDir(), HistoryFile)
			}
			tty, err := newChatTerm(cmd.Context(), e.stdin, e.stdout, hist)
			if err != nil {
				return err
			}
			c := &chat{addr: addr, out: shown(e.stdout), reopen: reopen}
			if tty != nil {
				defer tty.Close()
				// Everything written goes through the line editor, which
				// keeps the prompt in its place (the terminal is raw); what
				// the reply holds is shown, never obeyed, by the terminal.
				c.out, c.tty = termWriter{tty}, tty
				e.stdout, e.stderr = tty, tty
			}
			return e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
				c.b = b
				return c.run(ctx, e.stdin)
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&key, "session", defaultKey(), "session key within the agent")
	cmd.Flags().BoolVar(&reopen, "reopen", false, "reopen the session if it is closed")
	cmd.Annotations = map[string]string{watchesFiles: "yes"}
	return cmd
}

// chat is one chat with a session.
type chat struct {
	b      *backend
	addr   string
	out    io.Writer
	tty    *chatTerm // nil when the input is not a terminal
	reopen bool      // reopen the session with each message if it is closed
}

// chatCommand is one of the chat's slash commands.
type chatCommand struct {
	name, args, help string
	// run does it; quit ends the chat.
	run func(ctx context.Context, c *chat, arg string) (quit bool, err error)
}

// chatCommands are the chat's commands; /help and the answer to an
// unknown one list them.
func chatCommands() []chatCommand {
	return []chatCommand{
		{"/reset", "", "restart the context (the log keeps everything)", func(ctx context.Context, c *chat, _ string) (bool, error) {
			if err := c.b.Reset(ctx, c.addr); err != nil {
				return false, c.noSessionYet(err)
			}
			fmt.Fprintln(c.out, "(context reset)")
			return false, nil
		}},
		{"/compact", "[focus]", "fold older turns into a summary now", func(ctx context.Context, c *chat, focus string) (bool, error) {
			res, err := c.b.Compact(ctx, c.addr, focus)
			if err != nil {
				return false, c.noSessionYet(err)
			}
			if res.End != nil {
				fmt.Fprintf(c.out, "(%s)\n", res.End.Reply+res.End.Reason)
			}
			return false, nil
		}},
		{"/help", "", "list the commands", func(ctx context.Context, c *chat, _ string) (bool, error) {
			fmt.Fprint(c.out, chatHelp())
			ext, err := c.extCommands(ctx)
			if err != nil {
				return false, err
			}
			if len(ext.Commands) > 0 {
				fmt.Fprintln(c.out, "slash commands (command extensions; agentd ext list --type command; ! for / works too):")
				for _, x := range ext.Commands {
					fmt.Fprintf(c.out, "  %-18s %s\n", x.Usage, x.Description)
				}
			}
			if len(ext.Tags) > 0 {
				fmt.Fprintln(c.out, "agent tags (#tag text):")
				for _, x := range ext.Tags {
					fmt.Fprintf(c.out, "  %-18s %s\n", "#"+x.Tag, strings.Join(x.Agents, ", "))
				}
			}
			return false, nil
		}},
		{"/quit", "", "leave (also /exit, Ctrl-D)", func(context.Context, *chat, string) (bool, error) { return true, nil }},
		{"/exit", "", "", func(context.Context, *chat, string) (bool, error) { return true, nil }},
	}
}

// noSessionYet says so, and returns nil, when err is a command's answer
// that the chat's session does not exist: no message has made it yet.
// Other errors are returned as they are.
func (c *chat) noSessionYet(err error) error {
	var ae *gateway.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound && strings.HasPrefix(ae.Msg, runtime.ErrNoSession.Error()) {
		fmt.Fprintln(c.out, "(the session has no messages yet)")
		return nil
	}
	return err
}

// extCommands lists the active command extensions and the agents' tags;
// none from an agentd that does not have them.
func (c *chat) extCommands(ctx context.Context) (gateway.CommandList, error) {
	ext, err := c.b.Commands(ctx)
	if apiStatus(err) == http.StatusNotFound {
		return gateway.CommandList{}, nil
	}
	return ext, err
}

// chatHelp lists the commands, one a line.
func chatHelp() string {
	var b strings.Builder
	for _, c := range chatCommands() {
		if c.help != "" {
			fmt.Fprintf(&b, "  %-18s %s\n", strings.TrimSpace(c.name+" "+c.args), c.help)
		}
	}
	for _, p := range command.Prefixes {
		fmt.Fprintf(&b, "  %-18s %s\n", p.Usage, p.Description)
	}
	b.WriteString("  //text             send a message that starts with / as it is written (//@…, //!…, //#…: with @, ! or #)\n")
	return b.String()
}

// command runs a line that starts with /: one of the chat's own
// commands, or an active command extension, which the line is sent as a
// message for (agentd runs it where the message is submitted, so it
// answers like any turn); or it says the command is unknown (it is not
// sent to the model).
func (c *chat) command(ctx context.Context, line string) (quit bool, err error) {
	name, arg, _ := strings.Cut(line, " ")
	var names []string
	for _, cc := range chatCommands() {
		if cc.name == name {
			return cc.run(ctx, c, strings.TrimSpace(arg))
		}
		names = append(names, cc.name)
	}
	ext, err := c.extCommands(ctx)
	if err != nil {
		return false, err
	}
	for _, x := range ext.Commands {
		if "/"+x.Name == name {
			return !c.turn(ctx, line, false), nil
		}
		names = append(names, "/"+x.Name)
	}
	fmt.Fprintf(c.out, "unknown command %s: the commands are %s (a message that starts with / is sent as //…)\n", name, strings.Join(names, ", "))
	return false, nil
}

// run reads lines until the input ends, sending each to the session.
func (c *chat) run(ctx context.Context, stdin io.Reader) error {
	fmt.Fprintf(c.out, "chatting with %s — /help for the commands, /quit to leave\n", c.addr)
	read := c.plainLines(stdin)
	if c.tty != nil {
		read = c.tty.ReadLine
	}
	interrupts := 0 // Ctrl-C on an empty line, in a row
	for {
		if c.tty == nil {
			fmt.Fprint(c.out, "\nyou> ")
		} else {
			fmt.Fprintln(c.out)
		}
		line, err := read()
		var intr *interrupted
		switch {
		case errors.As(err, &intr):
			if !intr.empty {
				interrupts = 0
				continue
			}
			if interrupts++; interrupts > 1 {
				return nil
			}
			fmt.Fprintln(c.out, "(Ctrl-C again, Ctrl-D or /quit to leave)")
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(c.out)
			return nil
		case err != nil:
			return err
		}
		interrupts = 0
		line = strings.TrimSpace(line)
		literal := false
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "//"):
			line, literal = literalLine(line), true
		case strings.HasPrefix(line, "/"):
			quit, err := c.command(ctx, line)
			if quit || err != nil {
				return err
			}
			continue
		}
		if !c.turn(ctx, line, literal) {
			return nil // asked to stop
		}
	}
}

// literalLine is what "//text" sends, as it is written: "/text"; but
// "//@…", "//!…" and "//#…" send "@…", "!…" and "#…", the lines those
// prefixes would otherwise route.
func literalLine(line string) string {
	if len(line) > 2 && strings.ContainsRune("@!#", rune(line[2])) {
		return line[2:]
	}
	return line[1:]
}

// plainLines reads lines from a pipe or a file.
func (c *chat) plainLines(stdin io.Reader) func() (string, error) {
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	return func() (string, error) {
		if !in.Scan() {
			if err := in.Err(); err != nil {
				return "", err
			}
			return "", io.EOF
		}
		return in.Text(), nil
	}
}

// turn sends a line (as written, when literal: never as a command) and
// shows the reply as it streams. In a terminal,
// Ctrl-C cancels the turn through the API (it ends cancelled in the log)
// and a second one stops waiting for it. It returns false when ctx is
// done: the chat ends.
func (c *chat) turn(ctx context.Context, line string, literal bool) bool {
	fmt.Fprint(c.out, "agent> ")
	p := &chatPrinter{w: c.out, inText: true} // after the "agent> " prompt
	m := gateway.MessageRequest{Text: line, Source: "cli", Reopen: c.reopen, Literal: literal}
	var end event.TurnEndData
	var err error
	if c.tty == nil {
		_, end, err = c.b.Stream(ctx, c.addr, m, p.event)
	} else {
		end, err = c.watchTurn(ctx, m, p)
	}
	switch {
	case ctx.Err() != nil:
		return false
	case errors.Is(err, errStopped):
		p.note(fmt.Sprintf("[stopped waiting: the turn goes on; agentd cancel %s stops it]", c.addr))
	case err != nil:
		p.note(fmt.Sprintf("[error: %v]", err))
	default:
		p.end(end)
	}
	return true
}

// errStopped means the user stopped waiting for a turn.
var errStopped = errors.New("stopped waiting")

// watchTurn streams a turn while it watches the terminal for Ctrl-C.
func (c *chat) watchTurn(ctx context.Context, m gateway.MessageRequest, p *chatPrinter) (event.TurnEndData, error) {
	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	// A Ctrl-C before the turn starts finds no turn to cancel: the next
	// event of the turn tries again.
	var retry atomic.Bool
	onEvent := func(ev event.Event) error {
		if retry.Load() && c.b.Cancel(ctx, c.addr) == nil {
			retry.Store(false)
		}
		return p.event(ev)
	}
	done := make(chan struct{})
	var end event.TurnEndData
	var err error
	go func() {
		defer c.tty.Wake()
		defer close(done)
		_, end, err = c.b.Stream(sctx, c.addr, m, onEvent)
	}()
	for n := 0; ; {
		k := c.tty.WaitInterrupt(done)
		if k == 0 {
			break
		}
		if n == 0 {
			p.note("(cancelling the turn; Ctrl-C again to stop waiting for it)")
			cerr := c.b.Cancel(ctx, c.addr)
			switch {
			case apiStatus(cerr) == 409:
				retry.Store(true)
			case cerr != nil:
				p.note(fmt.Sprintf("[cancel: %v]", cerr))
			}
		}
		if n += k; n > 1 {
			stop(errStopped)
		}
	}
	if err != nil && context.Cause(sctx) == errStopped && ctx.Err() == nil {
		err = errStopped
	}
	return end, err
}

// interrupted is ReadLine's error for a Ctrl-C at the prompt.
type interrupted struct{ empty bool } // the line was empty

func (*interrupted) Error() string { return "interrupted" }

// chatPrinter renders a streamed turn for a person. It shows the live
// events (text deltas, tool start and end) as they happen; the logged ones
// are shown only for a turn that streamed nothing live (a redelivered
// input whose turn had already run). Its methods may be called from the
// stream's goroutine and the chat's.
type chatPrinter struct {
	mu     sync.Mutex
	w      io.Writer
	live   bool // live events arrived
	inText bool // the cursor is after text on the current line
}

func (p *chatPrinter) event(ev event.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Kind {
	case event.TextDelta:
		var d event.DeltaData
		if ev.Decode(&d) == nil && !d.Reasoning {
			p.live = true
			fmt.Fprint(p.w, d.Text)
			p.inText = true
		}
	case event.ToolStart:
		p.live = true
		var d event.ToolCallData
		ev.Decode(&d)
		p.newline()
		fmt.Fprintf(p.w, "  ⚙ %s %s\n", d.Name, clip(string(d.Args), 200))
	case event.ToolEnd:
		var d event.ToolResultData
		ev.Decode(&d)
		p.result(d)
	case event.Text:
		if !p.live {
			var d event.TextData
			ev.Decode(&d)
			fmt.Fprint(p.w, d.Text)
			p.inText = true
		}
	case event.ToolCall:
		if !p.live {
			var d event.ToolCallData
			ev.Decode(&d)
			p.newline()
			fmt.Fprintf(p.w, "  ⚙ %s %s\n", d.Name, clip(string(d.Args), 200))
		}
	case event.ToolResult:
		if !p.live {
			var d event.ToolResultData
			ev.Decode(&d)
			p.result(d)
		}
	case event.ModelCall:
		var d event.ModelCallData
		if ev.Decode(&d) == nil && d.Error != "" {
			p.newline()
			fmt.Fprintf(p.w, "  [model %s attempt %d failed: %s]\n", d.Model, d.Attempt, d.Error)
		}
	}
	return nil
}

// note prints a line of the chat's own between the reply's.
func (p *chatPrinter) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.newline()
	fmt.Fprintln(p.w, s)
}

func (p *chatPrinter) newline() {
	if p.inText {
		fmt.Fprintln(p.w)
		p.inText = false
	}
}

func (p *chatPrinter) result(d event.ToolResultData) {
	status := "ok"
	switch {
	case d.Interrupted:
		status = "interrupted"
	case d.IsError:
		status = "error"
	}
	fmt.Fprintf(p.w, "  ↳ %s (%d ms): %s\n", status, d.DurationMS, clip(firstLine(d.Output), 200))
}

func (p *chatPrinter) end(end event.TurnEndData) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.newline()
	switch {
	case end.Status == event.StatusDone:
	case end.Reason == "" || end.Reason == "turn "+end.Status:
		fmt.Fprintf(p.w, "[turn %s]\n", end.Status)
	default:
		fmt.Fprintf(p.w, "[turn %s: %s]\n", end.Status, end.Reason)
	}
}
