package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"agentd/internal/gateway"
)

// tokenCmd is `agentd token` and `agentd token rotate`.
func (e *env) tokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Print the token of the API on TCP (making one if there is none)",
		Long: "Print the token every request to the API on TCP needs (Authorization: Bearer <token>, or the\n" +
			"web console's login). It is kept in gateway.token in the data directory (mode 0600), made on\n" +
			"first use; " + gateway.TokenEnv + ", when set, is the token instead. `agentd token rotate` replaces it.",
		Example: "  agentd token\n" +
			"  curl -H \"Authorization: Bearer $(agentd token)\" http://127.0.0.1:7420/v1/agents",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			dir := e.dataDir()
			if v := os.Getenv(gateway.TokenEnv); v != "" {
				if err := gateway.CheckToken(v); err != nil {
					return fmt.Errorf("%s: %w", gateway.TokenEnv, err)
				}
				fmt.Fprintf(e.stderr, "(the token is %s, which is set)\n", gateway.TokenEnv)
				fmt.Fprintln(e.stdout, v)
				return nil
			}
			// A token made in a mistyped directory would be one no agentd knows.
			if err := e.needData(); err != nil {
				return err
			}
			t, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true})
			if errors.Is(err, gateway.ErrWeakToken) {
				return fmt.Errorf("%w (agentd token rotate writes a strong one)", err)
			}
			if err != nil {
				return err
			}
			tok, err := t.Token()
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, tok)
			return nil
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "rotate",
		Short: "Replace the token; the old one stops working at once",
		Long: "Write a new token to gateway.token and print it. A running agentd uses it from its next\n" +
			"request, without a restart: the old token and every console login made with it stop working.",
		Example: "  agentd token rotate",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if os.Getenv(gateway.TokenEnv) != "" {
				return fmt.Errorf("%w: set the variable to a new value (at least %d random characters) and restart agentd", gateway.ErrFixedToken, gateway.MinTokenLen)
			}
			if err := e.needData(); err != nil {
				return err
			}
			tok, err := gateway.RotateToken(e.dataDir())
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stderr, "new token written; a running agentd uses it from its next request, and the old one no longer works")
			fmt.Fprintln(e.stdout, tok)
			return nil
		},
	})
	return cmd
}
