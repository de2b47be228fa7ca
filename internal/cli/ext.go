package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"agentd/internal/extension"
	"agentd/internal/gateway"
)

func (e *env) extCmd() *cobra.Command {
	subs := []*cobra.Command{e.extListCmd(), e.extShowCmd(), e.extPutCmd(), e.extEnableCmd(true), e.extEnableCmd(false),
		e.extRmCmd(), e.extHistoryCmd(), e.extRevertCmd(), e.extReseedCmd(), e.extRunCmd()}
	for _, c := range subs {
		e.remoteFlags(c)
	}
	return group(&cobra.Command{
		Use:   "ext",
		Short: "Manage extensions: agents, actions, commands, jobs, themes, apps, … stored as rows",
		Long: "Extensions are typed documents {type, name, spec} stored as rows, validated against their type's\n" +
			"schema and active while enabled; a change takes effect without a restart. Rows come from agentd\n" +
			"itself (builtin), from extensions/<type>/<name>.yaml in the data directory (file), from people\n" +
			"(user) and from agents (agent:<id>).",
		Example: "  agentd ext list --type action\n" +
			"  agentd ext show action/weather\n" +
			"  agentd ext put weather.yaml\n" +
			"  agentd ext disable action/weather\n" +
			"  agentd ext revert action/weather",
	}, subs...)
}

// rowArg splits TYPE/NAME.
func rowArg(arg string) (typ, name string, err error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || typ == "" || name == "" {
		return "", "", usage("usage: name the extension as TYPE/NAME, as in action/weather; got %q", arg)
	}
	return typ, name, nil
}

// extErr says an API error about an extension as the user can act on it:
// every problem of an invalid document on its own line, a row or type
// that does not exist as not found (exit 3).
func extErr(what string, err error) error {
	var ae *gateway.APIError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case len(ae.Errors) > 0:
		return withCode(ExitError, fmt.Errorf("%s: invalid:\n  %s", what, strings.Join(ae.Errors, "\n  ")))
	case ae.Status == 400:
		return withCode(ExitError, fmt.Errorf("%s: %w", what, err))
	case ae.Status == 404:
		return withCode(ExitNotFound, err)
	}
	return err
}

// active says what this node made of a row, for the list's ACTIVE/ERROR
// column.
func active(st extension.Status) string {
	switch {
	case st.Error != "":
		return "error: " + st.Error
	case st.Active == 0:
		return "-"
	case st.Active == st.Version:
		return "active"
	}
	return fmt.Sprintf("version %d", st.Active)
}

// rowLine is one line about a row after a change.
func rowLine(st extension.Status) string {
	state := "disabled"
	if st.Enabled {
		state = "enabled"
	}
	if a := active(st); a != "-" {
		state += ", " + a
	}
	return fmt.Sprintf("%s/%s: version %d, %s", st.Type, st.Name, st.Version, state)
}

func (e *env) extListCmd() *cobra.Command {
	var typ string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the extension rows",
		Long: "List the extension rows, by type then name: their version, whether they are enabled, who last\n" +
			"wrote them, the version active here (or why it is not), and drift from their seed document.",
		Example: "  agentd ext list\n" +
			"  agentd ext list --type theme --json",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			list, err := b.Extensions(ctx, typ)
			if err != nil {
				return extErr("list", err)
			}
			if asJSON {
				if list == nil {
					list = []extension.Status{}
				}
				return e.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(e.stdout, "no extensions (agentd ext put FILE adds one)")
				return nil
			}
			tw := table(e.stdout, "TYPE", "NAME", "VERSION", "ENABLED", "PROVENANCE", "ACTIVE/ERROR", "DRIFT")
			for _, st := range list {
				drift := "-"
				if st.Drift {
					drift = "drift"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%t\t%s\t%s\t%s\n", st.Type, st.Name, st.Version, st.Enabled, st.Provenance, cell(active(st), 60), drift)
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().StringVar(&typ, "type", "", "only the rows of this type")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) extShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show TYPE/NAME",
		Short: "Show an extension row",
		Long: "Show a row as a YAML document that agentd ext put takes back, its state in comments;\n" +
			"--json prints the row as the API answers it.",
		Example: "  agentd ext show action/weather\n" +
			"  agentd ext show theme/dark --json",
		Args: cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			typ, name, err := rowArg(args[0])
			if err != nil {
				return err
			}
			st, err := b.Extension(ctx, typ, name)
			if err != nil {
				return extErr(args[0], err)
			}
			if asJSON {
				return e.printJSON(st)
			}
			return e.showYAML(st)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// showYAML prints a row as a document, its state in comments.
func (e *env) showYAML(st extension.Status) error {
	spec, err := yamlValue(st.Spec)
	if err != nil {
		return fmt.Errorf("%s/%s: spec: %w", st.Type, st.Name, err)
	}
	out, err := yaml.Marshal(struct {
		Type    string `yaml:"type"`
		Name    string `yaml:"name"`
		Enabled bool   `yaml:"enabled"`
		Spec    any    `yaml:"spec"`
	}{st.Type, st.Name, st.Enabled, spec})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "# %s\n", rowLine(st))
	fmt.Fprintf(e.stdout, "# provenance %s; created %s by %s; updated %s by %s\n", st.Provenance,
		st.CreatedAt.UTC().Format(time.RFC3339), st.CreatedBy, st.UpdatedAt.UTC().Format(time.RFC3339), st.UpdatedBy)
	if st.Seed != "" {
		drift := "same as its seed document"
		if st.Drift {
			drift = "differs from its seed document (agentd ext reseed --force takes the document's)"
		}
		fmt.Fprintf(e.stdout, "# seed %s: %s\n", st.Seed, drift)
	}
	_, err = e.stdout.Write(out)
	return err
}

// yamlValue is a JSON value as YAML marshals it the same: integers stay
// integers (not floats, nor strings).
func yamlValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, c := range x {
			x[k] = numbers(c)
		}
	case []any:
		for i, c := range x {
			x[i] = numbers(c)
		}
	}
	return v
}

func (e *env) extPutCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "put FILE|-",
		Short: "Create or change extension rows from a file of documents",
		Long: "Write the documents of a YAML or JSON file (- reads stdin): one, or several YAML documents\n" +
			"separated by ---, each {type, name, spec, enabled}. Every document is validated first; if any\n" +
			"is invalid, every problem is printed with where it is, and nothing is written.",
		Example: "  agentd ext put weather.yaml\n" +
			"  agentd ext show theme/dark | sed 's/#222/#111/' | agentd ext put -",
		Args: cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			text, err := e.readArg(args[0])
			if err != nil {
				return err
			}
			file := args[0]
			if file == "-" {
				file = "stdin"
			}
			docs, err := e.putDocs(ctx, b, file, text)
			if err != nil {
				return err
			}
			for i, d := range docs {
				st, err := b.PutExtension(ctx, d, nil)
				if err != nil {
					if i > 0 {
						fmt.Fprintf(e.stderr, "agentd: %d of %d documents written before this one failed\n", i, len(docs))
					}
					return extErr(docWhere(file, d), err)
				}
				fmt.Fprintln(e.stdout, rowLine(st))
			}
			return nil
		}),
	}
}

// readArg reads a file, or stdin for "-".
func (e *env) readArg(arg string) ([]byte, error) {
	if arg == "-" {
		return io.ReadAll(e.stdin)
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return nil, withCode(ExitNotFound, err)
	}
	return b, nil
}

// docWhere names a document of a file: "weather.yaml:7 (action/weather)".
func docWhere(file string, d extension.Doc) string {
	if d.Line > 0 {
		file += ":" + strconv.Itoa(d.Line)
	}
	if d.Type != "" && d.Name != "" {
		file += " (" + d.Key() + ")"
	}
	return file
}

// putDocs reads the documents of a file and has agentd validate each one
// (a dry run); it returns them when every one is valid, else an error
// listing every problem of every document.
func (e *env) putDocs(ctx context.Context, b *backend, file string, text []byte) ([]extension.Doc, error) {
	docs, err := extension.DecodeDocs(text)
	if err != nil {
		return nil, decodeErr(file, err)
	}
	var problems []string
	seen := map[string]string{}
	for _, d := range docs {
		where := docWhere(file, d)
		if prev, dup := seen[d.Key()]; dup {
			problems = append(problems, where+": "+d.Key()+" is also at "+prev)
			continue
		}
		seen[d.Key()] = where
		if err := b.CheckExtension(ctx, d); err != nil {
			// An invalid document or an unknown type is the document's
			// problem; anything else (a refusal, agentd unavailable) ends
			// the command.
			var ae *gateway.APIError
			if !errors.As(err, &ae) || (ae.Status != 400 && ae.Status != 404) {
				return nil, err
			}
			if len(ae.Errors) == 0 {
				problems = append(problems, where+": "+ae.Msg)
			}
			for _, p := range ae.Errors {
				problems = append(problems, where+": "+p)
			}
		}
	}
	if problems != nil {
		return nil, withCode(ExitError, fmt.Errorf("%s: nothing written:\n  %s", file, strings.Join(problems, "\n  ")))
	}
	return docs, nil
}

// decodeErr lists the problems of a file that is not documents, each
// with its line.
func decodeErr(file string, err error) error {
	var de *extension.DecodeError
	if !errors.As(err, &de) {
		return withCode(ExitError, fmt.Errorf("%s: %w", file, err))
	}
	lines := make([]string, len(de.Problems))
	for i, p := range de.Problems {
		lines[i] = file + ":" + strings.TrimPrefix(p.String(), "line ")
		if p.Line == 0 {
			lines[i] = file + ": " + p.String()
		}
	}
	return withCode(ExitError, fmt.Errorf("%s: nothing written:\n  %s", file, strings.Join(lines, "\n  ")))
}

func (e *env) extEnableCmd(on bool) *cobra.Command {
	use, short := "disable", "Disable an extension row: it stops taking effect"
	if on {
		use, short = "enable", "Enable an extension row: it takes effect"
	}
	return &cobra.Command{
		Use:     use + " TYPE/NAME",
		Short:   short,
		Example: "  agentd ext " + use + " action/weather",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			typ, name, err := rowArg(args[0])
			if err != nil {
				return err
			}
			st, err := b.SetExtensionEnabled(ctx, typ, name, on)
			if err != nil {
				return extErr(args[0], err)
			}
			fmt.Fprintln(e.stdout, rowLine(st))
			return nil
		}),
	}
}

func (e *env) extRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm TYPE/NAME",
		Short:   "Remove an extension row (its history stays)",
		Long:    "Remove a row; its history stays, and agentd ext revert makes it again.",
		Example: "  agentd ext rm action/weather",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			typ, name, err := rowArg(args[0])
			if err != nil {
				return err
			}
			if err := b.DeleteExtension(ctx, typ, name); err != nil {
				return extErr(args[0], err)
			}
			fmt.Fprintf(e.stdout, "%s/%s: removed (agentd ext history %s/%s shows its versions)\n", typ, name, typ, name)
			return nil
		}),
	}
}

func (e *env) extHistoryCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "history TYPE/NAME",
		Short:   "Show an extension row's changes, oldest first",
		Example: "  agentd ext history action/weather",
		Args:    cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			typ, name, err := rowArg(args[0])
			if err != nil {
				return err
			}
			hist, err := b.ExtensionHistory(ctx, typ, name)
			if err != nil {
				return extErr(args[0], err)
			}
			if asJSON {
				return e.printJSON(hist)
			}
			tw := table(e.stdout, "VERSION", "OP", "ENABLED", "BY", "AT", "SPEC")
			for _, c := range hist {
				fmt.Fprintf(tw, "%d\t%s\t%t\t%s\t%s\t%s\n", c.Version, c.Op, c.Enabled, c.By, c.At.UTC().Format(time.RFC3339), cell(string(c.Spec), 60))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (e *env) extRevertCmd() *cobra.Command {
	var version int64
	cmd := &cobra.Command{
		Use:   "revert TYPE/NAME",
		Short: "Set an extension row's spec back to an earlier version's",
		Long: "Set a row's spec back to an earlier version's, as a new version (agentd ext history lists them);\n" +
			"without --version, the version before the current. A removed row is made again.",
		Example: "  agentd ext revert action/weather\n" +
			"  agentd ext revert action/weather --version 2",
		Args: cobra.ExactArgs(1),
		RunE: e.withBackend(func(ctx context.Context, b *backend, args []string) error {
			typ, name, err := rowArg(args[0])
			if err != nil {
				return err
			}
			if version < 0 {
				return usage("usage: --version %d: want a version of agentd ext history %s", version, args[0])
			}
			st, err := b.RevertExtension(ctx, typ, name, version)
			if err != nil {
				return extErr(args[0], err)
			}
			fmt.Fprintln(e.stdout, rowLine(st))
			return nil
		}),
	}
	cmd.Flags().Int64Var(&version, "version", 0, "the version to go back to (default: the one before the current)")
	return cmd
}

func (e *env) extReseedCmd() *cobra.Command {
	var force, asJSON bool
	cmd := &cobra.Command{
		Use:   "reseed",
		Short: "Sync the built-in and file documents into rows",
		Long: "Sync the documents built into agentd and those under extensions/<type>/<name>.yaml in the data\n" +
			"directory into rows. A row a person or an agent changed is kept unless --force.",
		Example: "  agentd ext reseed\n" +
			"  agentd ext reseed --force",
		Args: cobra.NoArgs,
		RunE: e.withBackend(func(ctx context.Context, b *backend, _ []string) error {
			rep, err := b.Reseed(ctx, force)
			if err != nil {
				return extErr("reseed", err)
			}
			if asJSON {
				if err := e.printJSON(rep); err != nil {
					return err
				}
			} else {
				for _, l := range []struct {
					what string
					rows []string
				}{{"created", rep.Created}, {"updated", rep.Updated}, {"removed", rep.Removed},
					{"kept (changed by a person or an agent; --force overwrites)", rep.Kept}, {"unchanged", rep.Unchanged}} {
					if len(l.rows) > 0 {
						fmt.Fprintf(e.stdout, "%s: %s\n", l.what, strings.Join(l.rows, ", "))
					}
				}
			}
			if len(rep.Errors) > 0 {
				return withCode(ExitError, fmt.Errorf("reseed: %d documents not synced:\n  %s", len(rep.Errors), strings.Join(rep.Errors, "\n  ")))
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&force, "force", false, "overwrite rows a person or an agent changed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
