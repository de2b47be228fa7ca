package cli

import (
	"fmt"
	goruntime "runtime"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
)

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
