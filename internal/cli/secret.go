package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"agentd/internal/secret"
)

// maxSecret bounds a secret's value read from stdin.
const maxSecret = 64 << 10

// secretCmd is `agentd secret set|list|rm`: the secrets file that
// ${secret:NAME} references read.
func (e *env) secretCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Set, list and remove the secrets ${secret:NAME} references read",
		Long: "Extensions (an action's headers, an integration) refer to secrets as ${secret:NAME} or\n" +
			"${env:NAME}, never holding them. ${secret:NAME} reads " + secret.FileName + " in the data directory\n" +
			"(NAME=value lines, mode 0600: agentd refuses it otherwise) when a call needs it, so a change\n" +
			"takes effect at the next call.",
		Example: "  cat token.txt | agentd secret set GITHUB_TOKEN\n  agentd secret list",
	}
	return group(cmd, e.secretSetCmd(), e.secretListCmd(), e.secretRmCmd())
}

func (e *env) secretSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set NAME",
		Short: "Set a secret, reading its value from stdin",
		Long: "Set the secret NAME to the value read from stdin (one line; a final line break is dropped).\n" +
			"The value is never an argument, so it stays out of the shell's history and the process list.\n" +
			"On a terminal it is asked for without echo.",
		Example: "  agentd secret set GITHUB_TOKEN\n  cat token.txt | agentd secret set GITHUB_TOKEN",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := e.needData(); err != nil {
				return err
			}
			if !secret.ValidName(args[0]) {
				return usage("secret name %q: letters, digits and '_', not starting with a digit", args[0])
			}
			value, err := e.readSecret(args[0])
			if err != nil {
				return err
			}
			if err := secret.NewFile(e.dataDir()).Set(args[0], value); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "secret %s set; ${secret:%s} reads it\n", args[0], args[0])
			return nil
		},
	}
}

// readSecret reads a value from stdin: without echo on a terminal, else
// up to a line break.
func (e *env) readSecret(name string) (string, error) {
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(e.stderr, "value of %s: ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		return string(b), err
	}
	b, err := io.ReadAll(io.LimitReader(e.stdin, maxSecret+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSecret {
		return "", fmt.Errorf("the value on stdin is over %d bytes", maxSecret)
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if len(b) == 0 {
		return "", usage("no value on stdin: cat file | agentd secret set %s", name)
	}
	return string(b), nil
}

func (e *env) secretListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the secrets' names (never their values)",
		Example: "  agentd secret list",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := e.needData(); err != nil {
				return err
			}
			names, err := secret.NewFile(e.dataDir()).Names()
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintln(e.stdout, n)
			}
			return nil
		},
	}
}

func (e *env) secretRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Short:   "Remove a secret",
		Example: "  agentd secret rm GITHUB_TOKEN",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := e.needData(); err != nil {
				return err
			}
			ok, err := secret.NewFile(e.dataDir()).Remove(args[0])
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("secret %s is not set", args[0])
			}
			fmt.Fprintf(e.stderr, "secret %s removed\n", args[0])
			return nil
		},
	}
}
