package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"agentd/internal/permit"
	"agentd/internal/tool"
)

// writeCard writes what a waiting call will do, as its tool's card says
// (the command with its directory and sandbox, the diff, the URL), and
// how to answer it. A call without a card writes nothing: the table shows
// its arguments. Everything from the tool and the model is made safe for
// the terminal.
func writeCard(w io.Writer, r *permit.Request) {
	if len(r.Card) == 0 {
		return
	}
	var c tool.Card
	if json.Unmarshal(r.Card, &c) != nil {
		return
	}
	fmt.Fprintf(w, "\n%s  %s: %s\n", r.ID, termSafe(r.Tool), termSafe(oneLine(c.Title, 200)))
	field := func(name, v string) { fmt.Fprintf(w, "  %-8s %s\n", name+":", termSafe(v)) }
	switch c.Kind {
	case tool.CardCommand:
		field("command", shellJoin(c.Command))
		dir := c.Dir
		if dir == "" {
			dir = ". (the workspace)"
		}
		field("in", dir)
		field("sandbox", c.Sandbox)
		if c.Shell {
			field("shell", "yes: a shell runs the command line")
		}
		if c.Input != "" || c.InputOmitted > 0 {
			fmt.Fprintf(w, "  %s\n", "input:")
			writeBlock(w, c.Input, c.InputOmitted, "input")
		}
	case tool.CardDiff:
		field("files", strings.Join(c.Paths, ", "))
		writeBlock(w, c.Diff, c.DiffOmitted, "diff")
	case tool.CardURL:
		field("url", strings.TrimSpace(c.Method+" "+c.URL))
	}
	scopes := "--session"
	if c.Exact != "" {
		scopes += " | --always"
	}
	fmt.Fprintf(w, "  answer:  agentd approve %s [%s]  ·  agentd deny %s --reason TEXT\n", r.ID, scopes, r.ID)
}

// writeBlock writes text of several lines indented, made safe for the
// terminal, and the count of its bytes left out (omitted, of what).
func writeBlock(w io.Writer, text string, omitted int, what string) {
	for line := range strings.Lines(text) {
		fmt.Fprintf(w, "    %s", termSafe(line))
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(w)
	}
	if omitted > 0 {
		fmt.Fprintf(w, "    … %d bytes of the %s left out\n", omitted, what)
	}
}

// shellJoin writes argv as a POSIX shell would read it back: words
// without special characters as they are, others in single quotes.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
