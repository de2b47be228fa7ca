package postgres

import (
	"context"
	"database/sql"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Copying the extension rows and their history (see CopyFromSQLite).

// copyExtensions copies the history of every extension row, then the
// rows, in chunks of copyChunk, each in one transaction. A change
// PostgreSQL has already (the same row and version) is kept; a row is
// written unless PostgreSQL's is at a later version; and a row whose
// history, the source's now included, holds a delete after the row's
// version is removed: a copy run again after a row was deleted in SQLite
// removes it here too, and one made again there is copied at its new
// version.
func (s *Store) copyExtensions(ctx context.Context, src *sql.DB) error {
	if err := s.copyExtHistory(ctx, src); err != nil {
		return err
	}
	if err := s.copyExtRows(ctx, src); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM agentd_extensions e WHERE EXISTS (SELECT 1 FROM agentd_extension_history h
		WHERE h.type = e.type AND h.name = e.name AND h.op = 'delete' AND h.version > e.version)`)
	return err
}

func (s *Store) copyExtHistory(ctx context.Context, src *sql.DB) error {
	var typ, name string
	var version int64
	for {
		rows, err := src.QueryContext(ctx, `SELECT type, name, version, op, spec, enabled, provenance, changed_by, changed_at
			FROM agentd_extension_history WHERE (type, name, version) > (?, ?, ?) ORDER BY type, name, version LIMIT ?`,
			typ, name, version, copyChunk)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for rows.Next() {
			var op, spec, prov, by string
			var enabled bool
			var at int64
			if err := rows.Scan(&typ, &name, &version, &op, &spec, &enabled, &prov, &by, &at); err != nil {
				rows.Close()
				return err
			}
			b.Queue(qExtHistIns+` ON CONFLICT (type, name, version) DO NOTHING`, typ, name, version, op, spec, enabled, prov, by, at)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if b.Len() == 0 {
			return nil
		}
		if err := s.inTx(ctx, b); err != nil {
			return err
		}
	}
}

func (s *Store) copyExtRows(ctx context.Context, src *sql.DB) error {
	var typ, name string
	for {
		rows, err := src.QueryContext(ctx, `SELECT `+extCols+` FROM agentd_extensions
			WHERE (type, name) > (?, ?) ORDER BY type, name LIMIT ?`, typ, name, copyChunk)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for rows.Next() {
			var spec, prov, seed, cby, uby string
			var enabled bool
			var version, created, updated int64
			if err := rows.Scan(&typ, &name, &spec, &enabled, &version, &prov, &seed, &created, &cby, &updated, &uby); err != nil {
				rows.Close()
				return err
			}
			b.Queue(`INSERT INTO agentd_extensions (`+extCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
				ON CONFLICT (type, name) DO UPDATE SET spec = excluded.spec, enabled = excluded.enabled, version = excluded.version,
					provenance = excluded.provenance, seed_hash = excluded.seed_hash, created_at = excluded.created_at,
					created_by = excluded.created_by, updated_at = excluded.updated_at, updated_by = excluded.updated_by
				WHERE agentd_extensions.version <= excluded.version`,
				typ, name, spec, enabled, version, prov, seed, created, cby, updated, uby)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if b.Len() == 0 {
			return nil
		}
		if err := s.inTx(ctx, b); err != nil {
			return err
		}
	}
}

// verifyExtensions lists the extension rows whose version differs
// between the stores, or that one of them lacks, in rep.DifferExt.
func (s *Store) verifyExtensions(ctx context.Context, src *sql.DB, rep *CopyReport) error {
	const q = `SELECT type || '/' || name, version FROM agentd_extensions`
	var err error
	rep.DifferExt, err = s.differ(ctx, src, q)
	return err
}

// versions reads rows of (key, version), from either store.
func versions(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}) (map[string]int64, error) {
	out := map[string]int64{}
	for rows.Next() {
		var key string
		var v int64
		if err := rows.Scan(&key, &v); err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, rows.Err()
}

// differ returns, sorted, the keys whose value the query q (key, value)
// reads differently from the SQLite database src and from PostgreSQL,
// or that one of them lacks: what a copy's check reports of a table.
func (s *Store) differ(ctx context.Context, src *sql.DB, q string) ([]string, error) {
	rows, err := src.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	want, err := versions(rows)
	rows.Close()
	if err != nil {
		return nil, err
	}
	prows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	got, err := versions(prows)
	prows.Close()
	if err != nil {
		return nil, err
	}
	var out []string
	for key, v := range want {
		if g, ok := got[key]; !ok || g != v {
			out = append(out, key)
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out, nil
}
