package cli

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram/telegramfake"
)

// fakeChats are the fake chat platforms agentd fakechat runs, by name:
// each returns the platform's handler over the World and what to tell the
// user (its API URL's use and the token it takes).
var fakeChats = map[string]func(ctx context.Context, w *chatfake.World, base string) (http.Handler, string){
	"telegram": func(ctx context.Context, w *chatfake.World, base string) (http.Handler, string) {
		s := telegramfake.New(&telegramfake.Options{World: w})
		go func() { <-ctx.Done(); s.Close() }()
		return s, fmt.Sprintf("  api_url: %s\n  token:   %s (bot @%s)\n", base, s.Token(), s.Bot().Username)
	},
}

func (e *env) fakechatCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:    "fakechat telegram",
		Short:  "Run a fake chat platform server (Telegram Bot API) for demos and tests",
		Long:   "Run a fake chat platform that speaks the platform's wire, with a control API:\nPOST /_fake/send {\"chat\",\"user\",\"text\"} says something as a person,\nGET /_fake/messages lists the bot's messages with every edit.",
		Hidden: true,
		Example: "  agentd fakechat telegram\n" +
			"  agentd fakechat telegram --addr 127.0.0.1:8401",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mk, ok := fakeChats[args[0]]
			if !ok {
				return withCode(ExitUsage, fmt.Errorf("fakechat: unknown platform %q", args[0]))
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			w := chatfake.New(nil)
			base := "http://" + ln.Addr().String()
			h, about := mk(ctx, w, base)
			mux := http.NewServeMux()
			mux.Handle("/_fake/", w.Control())
			mux.Handle("/", h)
			srv := &http.Server{Handler: mux, ConnState: w.ConnState, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(e.stdout, "fakechat %s listening on %s\n%s  control: POST %s/_fake/send, GET %s/_fake/messages\n", args[0], base, about, base, base)
			go func() { <-ctx.Done(); srv.Close() }()
			if err := srv.Serve(ln); err != http.ErrServerClosed {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8401", "address to listen on")
	return cmd
}
