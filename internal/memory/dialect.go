package memory

import (
	"context"
	"database/sql"
)

// index is the keyword index of a memory database: what differs between
// the databases memory runs on (SQLite's FTS5, PostgreSQL's full-text
// search). Everything else memory says in SQL both databases read alike.
type index interface {
	// add puts an item into the index, in tx.
	add(ctx context.Context, tx *sql.Tx, key int64, scope string, kind int64, name, body string) error
	// remove takes an item out of the index, in tx.
	remove(ctx context.Context, tx *sql.Tx, key int64) error
	// search returns up to limit keys of items of scopes and kinds (nil:
	// any) matching any of terms, best first: a word of the name counts
	// twice one of the body.
	search(ctx context.Context, db queryer, terms, scopes []string, kinds []int64, limit int) ([]int64, error)
	// docs returns how many items hold the word term (-1 when the index
	// cannot tell), for recall to leave out words too common to help.
	docs(ctx context.Context, db queryer, term string) (int64, error)
}

// queryer runs an index's reads: a *sql.DB, or the store's prepared
// statements (Store.prepared), which recall uses on every turn.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryInt reads the one integer a query answers; found is false when it
// answers no row.
func queryInt(ctx context.Context, db queryer, query string, args ...any) (n int64, found bool, err error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return 0, false, rows.Err()
	}
	err = rows.Scan(&n)
	return n, err == nil, err
}

// ftsIndex is the index in SQLite: the contentless FTS5 table memory_fts
// and its vocabulary (see schemaV1).
type ftsIndex struct{}

func (ftsIndex) add(ctx context.Context, tx *sql.Tx, key int64, scope string, kind int64, name, body string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO memory_fts (rowid, tag, name, body) VALUES (?, ?, ?, ?)`, key, tagFor(scope, kind), name, body)
	return err
}

func (ftsIndex) remove(ctx context.Context, tx *sql.Tx, key int64) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM memory_fts WHERE rowid = ?`, key)
	return err
}

func (ftsIndex) search(ctx context.Context, db queryer, terms, scopes []string, kinds []int64, limit int) ([]int64, error) {
	expr := matchExpr(terms, scopes, kinds)
	if expr == "" {
		return nil, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?
		ORDER BY bm25(memory_fts, 0, 2, 1) LIMIT ?`, expr, limit)
	if err != nil {
		return nil, err
	}
	return scanKeys(rows)
}

func (ftsIndex) docs(ctx context.Context, db queryer, term string) (int64, error) {
	n, found, err := queryInt(ctx, db, `SELECT doc FROM memory_vocab WHERE term = ?`, term)
	if err == nil && !found && !isASCII(term) {
		// The index folds accents (café is indexed as cafe), so the
		// word may well occur: keep it.
		return -1, nil
	}
	return n, err
}

// scanKeys reads a column of item keys.
func scanKeys(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	var keys []int64
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}
