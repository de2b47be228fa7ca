package cli

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"agentd/internal/command"
)

// commands returns every command under root that a user may run or see in
// help, root included (not cobra's own help and completion commands).
func commands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		out = append(out, commands(c)...)
	}
	return out
}

// words splits an example line as a shell would, for the quoting examples
// use: "…" and '…'.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// Every command has examples, and every example names the command it
// illustrates, with flags and arguments the command accepts.
func TestEveryCommandHasExamples(t *testing.T) {
	e := &env{ctx: context.Background(), stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	for _, c := range commands(e.root()) {
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no examples", c.CommandPath())
			continue
		}
		for _, line := range strings.Split(c.Example, "\n") {
			for _, part := range strings.Split(line, "|") {
				for _, seg := range strings.Split(part, "&&") {
					args := words(strings.TrimSpace(seg))
					if len(args) == 0 || args[0] != "agentd" {
						continue
					}
					checkExample(t, c, strings.TrimSpace(seg), args[1:])
				}
			}
		}
	}
}

func checkExample(t *testing.T, c *cobra.Command, line string, args []string) {
	t.Helper()
	// A fresh tree: flags keep their values.
	root := (&env{ctx: context.Background(), stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}).root()
	cmd, rest, err := root.Find(args)
	if err != nil {
		t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
		return
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
		return
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		t.Errorf("%s: example %q: %v", c.CommandPath(), line, err)
	}
}

// The chat's own commands are reserved: no command extension may take
// their names.
func TestChatCommandsAreReserved(t *testing.T) {
	for _, c := range chatCommands() {
		if !slices.Contains(command.Reserved, strings.TrimPrefix(c.name, "/")) {
			t.Errorf("%s is not in command.Reserved", c.name)
		}
	}
}
