package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func (e *env) keysCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "keys",
		Short: "Show, generate or import agents' identity keys",
		Long: "Each agent has an ed25519 key. It signs the approval sent with every tool-server call;\n" +
			"its public key is shown in base58 (the Solana format). A key is made on first use, or\n" +
			"with agentd keys generate; a Solana keypair file can be imported. The agent may be left\n" +
			"out when there is only one.",
		Example: "  agentd keys show assistant\n" +
			"  agentd keys generate assistant",
	}, e.keysShowCmd(), e.keysGenerateCmd(), e.keysImportCmd())
}

func (e *env) keysShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show [agent]",
		Short: "Print an agent's public key (base58)",
		Example: "  agentd keys show\n" +
			"  agentd keys show assistant",
		Args: cobra.MaximumNArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, err := agentArg(ctx, b, args)
			if err != nil {
				return err
			}
			k, err := b.Key(ctx, id)
			if err != nil {
				return err
			}
			if !k.Exists {
				return withCode(ExitNotFound, fmt.Errorf("agent %s has no key yet: create one with `agentd keys generate %s`, "+
					"or import one with `agentd keys import <file> %s` (one is also made when it first signs)", id, id, id))
			}
			fmt.Fprintln(e.stdout, k.Pubkey)
			return nil
		}),
	}
}

func (e *env) keysGenerateCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "generate [agent]",
		Short: "Make a new key for an agent",
		Long:  "Make a new ed25519 key for an agent and print its public key. An existing key is kept unless --force.",
		Example: "  agentd keys generate assistant\n" +
			"  agentd keys generate assistant --force",
		Args: cobra.MaximumNArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, err := agentArg(ctx, b, args)
			if err != nil {
				return err
			}
			k, err := b.GenerateKey(ctx, id, force)
			if apiStatus(err) == 409 {
				return fmt.Errorf("agent %s already has a key; --force replaces it (the old one is lost)", id)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "%s: new key %s\n", id, k.Pubkey)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing key")
	return cmd
}

// maxKeypairFile bounds a keypair file: 64 numbers with spaces fit in far less.
const maxKeypairFile = 64 << 10

func (e *env) keysImportCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "import <file> [agent]",
		Short: "Give an agent the key in a Solana keypair file",
		Long: "Import a Solana keypair file (a JSON array of 64 numbers: the seed, then the public key,\n" +
			"as solana-keygen writes) as an agent's key. An existing key is kept unless --force.",
		Example: "  agentd keys import ~/.config/solana/id.json assistant",
		Args:    cobra.RangeArgs(1, 2),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			id, err := agentArg(ctx, b, args[1:])
			if err != nil {
				return err
			}
			data, err := readSmall(args[0], maxKeypairFile)
			if err != nil {
				return err
			}
			if !json.Valid(data) {
				return fmt.Errorf("%s: not a Solana keypair file: want a JSON array of 64 numbers", args[0])
			}
			k, err := b.ImportKey(ctx, id, data, force)
			if apiStatus(err) == 409 {
				return fmt.Errorf("agent %s already has a key; --force replaces it (the old one is lost)", id)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			fmt.Fprintf(e.stdout, "%s: imported key %s\n", id, k.Pubkey)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing key")
	return cmd
}

// readSmall reads a file of at most max bytes.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes; a keypair file is a JSON array of 64 numbers", path, max)
	}
	return data, nil
}
