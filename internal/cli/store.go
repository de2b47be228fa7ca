package cli

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/memory"
	"agentd/internal/store/postgres"
	"agentd/internal/store/sqlite"
)

func (e *env) storeCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:     "store",
		Short:   "Move agentd's store from SQLite to PostgreSQL",
		Example: "  agentd store copy --from sqlite://./agentd-data --to postgres://agentd@db.example.com/agentd",
	}, e.storeCopyCmd())
}

func (e *env) storeCopyCmd() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "copy --from sqlite://DIR --to postgres://…",
		Short: "Copy a SQLite store into PostgreSQL, resumably, and verify the copy",
		Long: "Copy every session, event, inbox item, usage row, working memory entry, title, agent and\n" +
			"extension (with its history) of the SQLite store in data directory DIR (its agentd.db) into a\n" +
			"PostgreSQL database, keeping their ids and versions, then compare the row counts, every\n" +
			"session's last sequence number and every extension's version and print them. Run it again\n" +
			"to continue a copy that stopped, or to catch up with what was written since: it copies each\n" +
			"session's events after the last one PostgreSQL has, and the extensions changed since. Stop\n" +
			"agentd (or run the copy again after stopping it) so that the copy ends with everything. The\n" +
			"target is an empty database or one an earlier copy of the same store wrote. Long-term memory\n" +
			"(the data directory's memory.db) is copied too, with its vectors.\n\n" +
			"The password is best in PGPASSWORD or a passfile (~/.pgpass); the output never shows it.\n" +
			"Then point agentd at the database: store: postgres://… in agentd.yaml, --store or $" + app.StoreEnv + ".",
		Example: "  agentd store copy --from sqlite://./agentd-data --to postgres://agentd@db.example.com/agentd",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			path, err := sqlitePath(from)
			if err != nil {
				return err
			}
			if !agent.IsPostgresURL(to) {
				return usage("--to must be a postgres:// URL, got %q", postgres.Redact(to))
			}
			ctx := e.ctx
			// Opening migrates an older file to the schema the copy reads.
			src, err := sqlite.Open(ctx, path, nil)
			if err != nil {
				return fmt.Errorf("store copy: %w", err)
			}
			if err := src.Close(); err != nil {
				return fmt.Errorf("store copy: %w", err)
			}
			db, err := sql.Open("sqlite", "file:"+sqliteURI(path)+"?mode=ro&_pragma=busy_timeout(5000)")
			if err != nil {
				return fmt.Errorf("store copy: %w", err)
			}
			defer db.Close()
			dst, err := postgres.Open(ctx, to, nil)
			if err != nil {
				return fmt.Errorf("store copy: %w", err)
			}
			defer dst.Close()
			fmt.Fprintf(e.stderr, "copying %s to %s\n", path, dst.Name())
			n := 0
			rep, err := dst.CopyFromSQLite(ctx, db, func(string) {
				if n++; n%100 == 0 {
					fmt.Fprintf(e.stderr, "%d sessions…\n", n)
				}
			})
			if rep.Counts != nil {
				printCopy(e, rep)
			}
			if errors.Is(err, postgres.ErrCopyMismatch) {
				return fmt.Errorf("the copy does not verify: run it again (with agentd stopped) to copy what is missing")
			}
			if err != nil {
				return err
			}
			if err := e.copyMemory(filepath.Join(filepath.Dir(path), app.MemoryFile), to); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "verified: PostgreSQL holds every row of %s (%d events copied by this run)\n", filepath.Dir(path), rep.Copied)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the SQLite store: sqlite://DIR, DIR a data directory (or its agentd.db)")
	cmd.Flags().StringVar(&to, "to", "", "the PostgreSQL database: a postgres:// URL")
	cmd.MarkFlagRequired("from")
	cmd.MarkFlagRequired("to")
	return cmd
}

// copyMemory copies the long-term memory in the SQLite file path, if
// there is one, into the PostgreSQL database to, and prints its counts.
func (e *env) copyMemory(path, to string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(e.stdout, "no long-term memory to copy")
		return nil
	}
	ctx := e.ctx
	src, err := memory.Open(ctx, path, nil) // migrates an older file
	if err != nil {
		return fmt.Errorf("store copy: %w", err)
	}
	if err := src.Close(); err != nil {
		return fmt.Errorf("store copy: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+sqliteURI(path)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return fmt.Errorf("store copy: %w", err)
	}
	defer db.Close()
	cfg, err := postgres.ConnConfig(to, nil)
	if err != nil {
		return fmt.Errorf("store copy: %w", err)
	}
	dst, err := memory.OpenPostgres(ctx, cfg, 0, nil)
	if err != nil {
		return fmt.Errorf("store copy: %w", err)
	}
	defer dst.Close()
	counts, err := dst.CopyFromSQLite(ctx, db)
	if counts != nil {
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "long-term memory\tsqlite\tpostgres\t")
		for _, c := range counts {
			mark := ""
			if c.Source != c.Target {
				mark = "differs"
			}
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", c.Table, c.Source, c.Target, mark)
		}
		w.Flush()
	}
	if errors.Is(err, memory.ErrCopyMismatch) {
		return fmt.Errorf("the copy of long-term memory does not verify: run it again (with agentd stopped) to copy what is missing")
	}
	return err
}

// sqliteURI escapes the characters of a path that mean something in an
// SQLite URI.
func sqliteURI(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))
}

// sqlitePath is the database file a --from names.
func sqlitePath(from string) (string, error) {
	p, ok := strings.CutPrefix(from, "sqlite://")
	if !ok || p == "" {
		return "", usage("--from must be sqlite://DIR, DIR a data directory, got %q", from)
	}
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		p = filepath.Join(p, app.DBFile)
	}
	if _, err := os.Stat(p); err != nil {
		return "", withCode(ExitNotFound, fmt.Errorf("--from: %w", err))
	}
	return filepath.Abs(p)
}

// printCopy prints what a copy counted in both stores.
func printCopy(e *env, rep postgres.CopyReport) {
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\tsqlite\tpostgres\t")
	for _, c := range rep.Counts {
		mark := ""
		if c.Source != c.Target {
			mark = "differs"
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", c.Table, c.Source, c.Target, mark)
	}
	w.Flush()
	if len(rep.DifferExt) > 0 {
		fmt.Fprintf(e.stdout, "%d extensions' versions differ: %s\n", len(rep.DifferExt), strings.Join(rep.DifferExt[:min(len(rep.DifferExt), 20)], ", "))
	}
	if len(rep.DifferRuns) > 0 {
		fmt.Fprintf(e.stdout, "%d job runs differ: %s\n", len(rep.DifferRuns), strings.Join(rep.DifferRuns[:min(len(rep.DifferRuns), 20)], ", "))
	}
	if len(rep.Differ) == 0 {
		fmt.Fprintln(e.stdout, "every session's last sequence number is the same in both")
		return
	}
	fmt.Fprintf(e.stdout, "%d sessions' last sequence numbers differ: %s\n", len(rep.Differ), strings.Join(rep.Differ[:min(len(rep.Differ), 20)], ", "))
}
