package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"agentd/internal/gateway"
)

func (e *env) skillsCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "skills",
		Short: "List skills and show their instructions",
		Long: "A skill is a folder with a SKILL.md file (under <data>/skills by default). Agents see each\n" +
			"available skill's name and description and load its instructions when they need them.",
		Example: "  agentd skills list\n" +
			"  agentd skills show pdf-forms",
	}, e.skillsListCmd(), e.skillsShowCmd())
}

func (e *env) skillsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List skills and whether they are available",
		Example: "  agentd skills list\n" +
			"  agentd skills list --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Skills(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []gateway.SkillInfo{}
				}
				return e.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "no skills (a skill is a folder with a SKILL.md file, under <data>/skills by default)")
				return nil
			}
			tw := table(e.stdout, "NAME", "STATUS", "DESCRIPTION")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, cell(skillStatus(s), 70), cell(s.Description, 80))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// skillStatus says whether a skill is available, and if not why.
func skillStatus(s gateway.SkillInfo) string {
	switch {
	case s.Error != "":
		return "invalid: " + s.Error
	case s.Available:
		return "available"
	case len(s.Missing) > 0:
		return "missing: " + strings.Join(s.Missing, "; ")
	}
	return "unavailable"
}

func (e *env) skillsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "show <name>",
		Short:   "Print a skill's instructions",
		Example: "  agentd skills show pdf-forms",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			s, err := b.Skill(ctx, args[0])
			if apiStatus(err) == 404 {
				return withCode(ExitNotFound, fmt.Errorf("no skill %q (see agentd skills list)", args[0]))
			}
			if err != nil {
				return err
			}
			if s.Error != "" {
				return fmt.Errorf("skill %s (%s) is invalid: %s", s.Name, s.Dir, s.Error)
			}
			if !s.Available {
				fmt.Fprintf(e.stderr, "note: skill %s is not available to agents: %s\n", s.Name, skillStatus(s.SkillInfo))
			}
			fmt.Fprint(e.stdout, s.Body)
			if !strings.HasSuffix(s.Body, "\n") {
				fmt.Fprintln(e.stdout)
			}
			return nil
		}),
	}
}
