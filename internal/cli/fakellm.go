package cli

import (
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"agentd/internal/model/fakellm"
)

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
			srv := fakellm.New(s, &fakellm.Options{Logger: e.quietLogger()})
			return srv.Serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8400", "address to listen on")
	cmd.Flags().StringVar(&script, "script", "", "script file (default: echo)")
	return cmd
}
