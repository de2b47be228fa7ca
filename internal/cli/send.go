package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/model"
	"agentd/internal/runtime"
)

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
			return e.printTurn(asJSON, func(fn func(event.Event) error) (runtime.Receipt, event.TurnEndData, error) {
				return b.Stream(ctx, addr, m, fn)
			})
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

// printTurn runs a streamed turn and prints its reply, or with asJSON
// its logged events and a last line with the receipt and the end; a turn
// that did not complete exits with ExitTurn.
func (e *env) printTurn(asJSON bool, stream func(fn func(event.Event) error) (runtime.Receipt, event.TurnEndData, error)) error {
	enc := json.NewEncoder(e.stdout)
	rc, end, err := stream(func(ev event.Event) error {
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

// lifecycleFlags are send's flags for the message lifecycle.
type lifecycleFlags struct {
	on                                  bool
	channel, toolArgs                   string
	noContext, noActions, noPostprocess bool
}

// withLifecycle adds --lifecycle to the send command: the message then runs
// through the Daemon message lifecycle and the lifecycle object is printed.
func (e *env) withLifecycle(send *cobra.Command) *cobra.Command {
	var lf lifecycleFlags
	f := send.Flags()
	f.BoolVar(&lf.on, "lifecycle", false, "run the Daemon message lifecycle and print its object as JSON")
	f.StringVar(&lf.channel, "channel", "", "with --lifecycle: the message's channel id (default: the session address)")
	f.BoolVar(&lf.noContext, "no-context", false, "with --lifecycle: skip the context tools")
	f.BoolVar(&lf.noActions, "no-actions", false, "with --lifecycle: skip the action tools (and so their hooks)")
	f.BoolVar(&lf.noPostprocess, "no-postprocess", false, "with --lifecycle: skip the post-process tools")
	f.StringVar(&lf.toolArgs, "tool-args", "", `with --lifecycle: extra arguments per tool, a JSON object keyed "<server>-<tool>"`)
	send.Long += "\n\nWith --lifecycle the message runs through the Daemon message lifecycle (context tools, the\n" +
		"model, action tools and their hooks, post-process tools) and the lifecycle object is printed\n" +
		"as JSON. The session is --session, else the --channel id, else \"lifecycle\"."
	plain := send.RunE
	send.RunE = func(cmd *cobra.Command, args []string) error {
		if !lf.on {
			for _, name := range []string{"channel", "no-context", "no-actions", "no-postprocess", "tool-args"} {
				if cmd.Flags().Changed(name) {
					return usage("usage: --%s needs --lifecycle", name)
				}
			}
			return plain(cmd, args)
		}
		for _, name := range []string{"system", "silent", "origin", "json"} {
			if cmd.Flags().Changed(name) {
				return usage("usage: --%s does not go with --lifecycle", name)
			}
		}
		req, err := lf.request(cmd, args)
		if err != nil {
			return err
		}
		return e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			return e.sendLifecycle(ctx, b, args[0], req)
		})(cmd, args)
	}
	return send
}

// request builds the lifecycle call from send's flags and arguments.
func (lf *lifecycleFlags) request(cmd *cobra.Command, args []string) (gateway.LifecycleRequest, error) {
	if strings.Contains(args[0], "/") {
		return gateway.LifecycleRequest{}, usage("usage: with --lifecycle the first argument is an agent id; pick the session with --session")
	}
	req := gateway.LifecycleRequest{Message: strings.Join(args[1:], " ")}
	if cmd.Flags().Changed("session") {
		req.Session, _ = cmd.Flags().GetString("session")
	}
	req.IdempotencyKey, _ = cmd.Flags().GetString("idempotency-key")
	off := func(b bool) *bool {
		if !b {
			return nil
		}
		v := false
		return &v
	}
	o := &engine.LifecycleOptions{ChannelID: lf.channel, Context: off(lf.noContext), Actions: off(lf.noActions), PostProcess: off(lf.noPostprocess)}
	if lf.toolArgs != "" {
		if err := json.Unmarshal([]byte(lf.toolArgs), &o.ToolArgs); err != nil {
			return req, usage(`usage: --tool-args: want a JSON object such as {"server-tool": {"arg": 1}}: %v`, err)
		}
		for k, v := range o.ToolArgs {
			var m map[string]any
			if json.Unmarshal(v, &m) != nil || m == nil {
				return req, usage("usage: --tool-args: %q must be a JSON object of arguments", k)
			}
		}
	}
	req.Opts = o
	return req, nil
}

func (e *env) sendLifecycle(ctx context.Context, b *backend, agentID string, req gateway.LifecycleRequest) error {
	settleMCP(ctx, b)
	resp, err := b.Lifecycle(ctx, agentID, req)
	if err != nil {
		return err
	}
	obj := resp.Lifecycle
	if obj == nil {
		return fmt.Errorf("turn %d: the lifecycle object is missing from the answer", resp.Turn)
	}
	out, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s\n", out)
	if obj.Status != event.StatusDone {
		return withCode(ExitTurn, fmt.Errorf("turn %d %s: %s", resp.Turn, obj.Status, obj.Reason))
	}
	return nil
}
