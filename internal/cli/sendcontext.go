package cli

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
)

// withContext adds --context and --args to the send command: the message
// then goes to the instance of a context type its args name (the seed's
// agent.send(context, args, input)), and the agent comes from the type,
// so the arguments are the message alone.
func (e *env) withContext(send *cobra.Command) *cobra.Command {
	var typ, args string
	f := send.Flags()
	f.StringVar(&typ, "context", "", "send to an instance of this context type; the arguments are then the message alone")
	f.StringVar(&args, "args", "", `with --context: the instance's args, a JSON object such as {"userId": "alice"}`)
	send.Use = "send <agent> <message>... | send --context TYPE --args JSON <message>..."
	send.Long += "\n\nWith --context TYPE --args '{…}' the message goes to the instance of the context type the\n" +
		"args name: the session <agent>/ctx:<type>:<key> of the type's agent (see docs/contexts.md)."
	send.Example += "\n  agentd send --context chat --args '{\"userId\": \"alice\"}' \"hi\""
	plainArgs, plain := send.Args, send.RunE
	send.Args = func(cmd *cobra.Command, a []string) error {
		if cmd.Flags().Changed("context") {
			return cobra.MinimumNArgs(1)(cmd, a)
		}
		return plainArgs(cmd, a)
	}
	send.RunE = func(cmd *cobra.Command, a []string) error {
		if !cmd.Flags().Changed("context") {
			if cmd.Flags().Changed("args") {
				return usage("usage: --args needs --context")
			}
			return plain(cmd, a)
		}
		for _, name := range []string{"session", "system", "silent", "origin", "image", "reopen", "lifecycle"} {
			if cmd.Flags().Changed(name) {
				return usage("usage: --%s does not go with --context", name)
			}
		}
		var raw json.RawMessage
		if args != "" {
			var m map[string]any
			if err := json.Unmarshal([]byte(args), &m); err != nil || m == nil {
				return usage(`usage: --args: want a JSON object such as {"userId": "alice"}`)
			}
			raw = json.RawMessage(args)
		}
		input, _ := json.Marshal(strings.Join(a, " "))
		idem, _ := cmd.Flags().GetString("idempotency-key")
		asJSON, _ := cmd.Flags().GetBool("json")
		req := gateway.ContextSendRequest{Args: raw, Input: input, IdempotencyKey: idem}
		return e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			return e.printTurn(asJSON, func(fn func(event.Event) error) (runtime.Receipt, event.TurnEndData, error) {
				return b.ContextStream(ctx, typ, req, fn)
			})
		})(cmd, a)
	}
	return send
}
