package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// CopyCount is one table's rows in a copy's source and in its target.
type CopyCount struct {
	Table          string
	Source, Target int64
}

// ErrCopyMismatch is returned (wrapped) by CopyFromSQLite when the copy's
// row counts differ from its source's.
var ErrCopyMismatch = errors.New("the copy differs from its source")

// copyChunk is how many rows one copy transaction writes.
const copyChunk = 1000

// copyTables are the tables a copy moves, in an order that keeps every
// reference satisfied, each with the query that reads it from SQLite (by
// id, after ?, at most ?) and the statement that writes it here, its
// index entry made from the row's scope, kind, name and body.
var copyTables = []struct {
	name, read, write string
	kind              int64 // the item kind of the rows, 0 if they are not items
}{
	{"entities", `SELECT id, scope, name, norm, type, session, turn, created, updated, scope, name, type
		FROM entities WHERE id > ? ORDER BY id LIMIT ?`,
		`INSERT INTO entities (id, scope, name, norm, type, session, turn, created, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id`, keyEntity},
	{"observations", `SELECT o.id, o.entity_id, o.text, o.session, o.turn, o.created, e.scope, e.name, o.text
		FROM observations o JOIN entities e ON e.id = o.entity_id WHERE o.id > ? ORDER BY o.id LIMIT ?`,
		`INSERT INTO observations (id, entity_id, text, session, turn, created)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id`, keyObservation},
	{"relations", `SELECT id, scope, from_entity, to_entity, type, session, turn, created
		FROM relations WHERE id > ? ORDER BY id LIMIT ?`,
		`INSERT INTO relations (id, scope, from_entity, to_entity, type, session, turn, created)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id`, 0},
	{"insights", `SELECT id, scope, text, tags, session, turn, created, scope, tags, text
		FROM insights WHERE id > ? ORDER BY id LIMIT ?`,
		`INSERT INTO insights (id, scope, text, tags, session, turn, created)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id`, keyInsight},
	{"vectors", `SELECT key, model, vec FROM vectors WHERE key > ? ORDER BY key LIMIT ?`,
		`INSERT INTO vectors (key, model, vec) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET model = excluded.model, vec = excluded.vec RETURNING key`, 0},
	{"pending", `SELECT key FROM pending WHERE key > ? ORDER BY key LIMIT ?`,
		`INSERT INTO pending (key) VALUES (?) ON CONFLICT DO NOTHING RETURNING key`, 0},
}

// CopyFromSQLite copies a SQLite memory database (memory.db, at the
// schema this agentd writes: open it with Open first, which migrates it)
// into this store, which must be on PostgreSQL: every entity,
// observation, relation and insight with its id, every vector and
// pending mark. It is resumable (a row already here is left as it is)
// and verified: it returns each table's rows in both, and
// ErrCopyMismatch if they differ.
func (s *Store) CopyFromSQLite(ctx context.Context, src *sql.DB) ([]CopyCount, error) {
	if _, ok := s.idx.(tsIndex); !ok {
		return nil, errors.New("memory: copy: the target is not a PostgreSQL memory")
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, t := range copyTables {
		if err := s.copyTable(ctx, src, t.read, t.write, t.kind); err != nil {
			return nil, fmt.Errorf("memory: copy %s: %w", t.name, err)
		}
	}
	for _, t := range []string{"entities", "observations", "relations", "insights"} {
		if _, err := s.wdb.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('`+t+`', 'id'),
			greatest((SELECT max(id) FROM `+t+`), 1), (SELECT max(id) FROM `+t+`) IS NOT NULL)`); err != nil {
			return nil, fmt.Errorf("memory: copy: %s: %w", t, err)
		}
	}
	var counts []CopyCount
	ok := true
	for _, t := range copyTables {
		c := CopyCount{Table: t.name}
		if err := src.QueryRowContext(ctx, `SELECT count(*) FROM `+t.name).Scan(&c.Source); err != nil {
			return nil, fmt.Errorf("memory: verify the copy: %w", err)
		}
		if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM `+t.name).Scan(&c.Target); err != nil {
			return nil, fmt.Errorf("memory: verify the copy: %w", err)
		}
		ok = ok && c.Source == c.Target
		counts = append(counts, c)
	}
	s.countBacklog(ctx)
	if !ok {
		return counts, fmt.Errorf("memory: copy: %w", ErrCopyMismatch)
	}
	return counts, nil
}

// copyTable copies one table in chunks, each in a transaction; an item
// written (not one the target had) gets its index entry in the same
// transaction.
func (s *Store) copyTable(ctx context.Context, src *sql.DB, read, write string, kind int64) error {
	for after := int64(-1 << 63); ; {
		rows, err := src.QueryContext(ctx, read, after, copyChunk)
		if err != nil {
			return err
		}
		cols, err := rows.Columns()
		if err != nil {
			rows.Close()
			return err
		}
		var batch [][]any
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return err
			}
			batch = append(batch, vals)
			after = vals[0].(int64)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		tx, err := s.wdb.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, vals := range batch {
			args := vals
			if kind != 0 {
				args = vals[:len(vals)-3] // the index's scope, name and body follow the row
			}
			var id int64
			err := tx.QueryRowContext(ctx, write, args...).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				continue // copied before
			}
			if err == nil && kind != 0 {
				ix := vals[len(vals)-3:]
				err = s.idx.add(ctx, tx, itemKey(kind, id), ix[0].(string), kind, str(ix[1]), str(ix[2]))
			}
			if err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
}

// str is a scanned text column as a string.
func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}
