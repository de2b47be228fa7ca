package memory

import (
	"agentd/internal/store/search"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Long-term memory on PostgreSQL: the same tables as in SQLite (see
// pgSchemaV1), in the database agentd's PostgreSQL store uses, so that the
// nodes sharing it share their memories. The keyword index is a tsvector
// per item (tsIndex); vectors are stored as in SQLite (little-endian
// float32 bytes) and each node keeps its own in-memory index of them.
//
// memory's SQL is written with ? placeholders; the connections here
// number them ($1, $2, …) as PostgreSQL wants (rebind).

// pgSchemaV1 is the first PostgreSQL schema. An observation's text is
// unique per entity by its hash (a btree entry cannot hold 4000 bytes).
// memory_search holds each item's keyword index entry: the item's scope
// and kind, and its words, the name's weighted A and the body's B.
// Deleting an entity, observation or insight (directly or by cascade)
// removes its index entry, vector and pending mark by trigger.
const pgSchemaV1 = `
CREATE TABLE entities (
	id      bigserial PRIMARY KEY,
	scope   text NOT NULL,
	name    text NOT NULL,
	norm    text NOT NULL,
	type    text NOT NULL DEFAULT '',
	session text NOT NULL DEFAULT '',
	turn    bigint NOT NULL DEFAULT 0,
	created bigint NOT NULL,
	updated bigint NOT NULL,
	UNIQUE (scope, norm)
);
CREATE INDEX entities_created ON entities (scope, created);

CREATE TABLE observations (
	id        bigserial PRIMARY KEY,
	entity_id bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	text      text NOT NULL,
	session   text NOT NULL DEFAULT '',
	turn      bigint NOT NULL DEFAULT 0,
	created   bigint NOT NULL
);
CREATE UNIQUE INDEX observations_text ON observations (entity_id, md5(text));
CREATE INDEX observations_created ON observations (created);

CREATE TABLE relations (
	id          bigserial PRIMARY KEY,
	scope       text NOT NULL,
	from_entity bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	to_entity   bigint NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	type        text NOT NULL,
	session     text NOT NULL DEFAULT '',
	turn        bigint NOT NULL DEFAULT 0,
	created     bigint NOT NULL,
	UNIQUE (from_entity, to_entity, type)
);
CREATE INDEX relations_to ON relations (to_entity);

CREATE TABLE insights (
	id      bigserial PRIMARY KEY,
	scope   text NOT NULL,
	text    text NOT NULL,
	tags    text NOT NULL DEFAULT '',
	session text NOT NULL DEFAULT '',
	turn    bigint NOT NULL DEFAULT 0,
	created bigint NOT NULL
);
CREATE INDEX insights_created ON insights (scope, created);

CREATE TABLE memory_search (
	key   bigint PRIMARY KEY,
	scope text NOT NULL,
	kind  smallint NOT NULL,
	doc   tsvector NOT NULL
);
CREATE INDEX memory_search_doc ON memory_search USING gin (doc);

CREATE TABLE vectors (
	key   bigint PRIMARY KEY,
	model text NOT NULL,
	vec   bytea NOT NULL
);

CREATE TABLE pending (key bigint PRIMARY KEY);

CREATE FUNCTION memory_gone() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	k bigint := OLD.id * 4 + TG_ARGV[0]::bigint;
BEGIN
	DELETE FROM memory_search WHERE key = k;
	DELETE FROM vectors WHERE key = k;
	DELETE FROM pending WHERE key = k;
	RETURN OLD;
END $$;
CREATE TRIGGER entities_gone AFTER DELETE ON entities FOR EACH ROW EXECUTE FUNCTION memory_gone('1');
CREATE TRIGGER observations_gone AFTER DELETE ON observations FOR EACH ROW EXECUTE FUNCTION memory_gone('2');
CREATE TRIGGER insights_gone AFTER DELETE ON insights FOR EACH ROW EXECUTE FUNCTION memory_gone('3');
`

// pgMigrations are the PostgreSQL schema steps, recorded in
// agentd_memory_schema; only ever appended.
func pgMigrations() []string { return []string{pgSchemaV1} }

// pgMigrationLock is the advisory lock key under which nodes migrate.
const pgMigrationLock = 0x61676e746401

// OpenPostgres opens long-term memory in the PostgreSQL database cfg
// names (agentd's store's), applies pending migrations and loads the
// stored vectors. pool caps the connections it opens (0: 4).
func OpenPostgres(ctx context.Context, cfg *pgx.ConnConfig, pool int, o *Options) (*Store, error) {
	s := build(o)
	db := sql.OpenDB(rebindConnector{stdlib.GetConnector(*cfg)})
	if pool <= 0 {
		pool = 4
	}
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	s.wdb, s.rdb, s.idx = db, db, tsIndex{}
	if err := pgMigrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: open: %w", err)
	}
	if err := s.load(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("memory: open: %w", err)
	}
	s.refreshStatus()
	close(s.opened)
	return s, nil
}

func pgMigrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(pgMigrationLock)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS agentd_memory_schema (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var version int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM agentd_memory_schema`).Scan(&version); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	steps := pgMigrations()
	if version > len(steps) {
		return fmt.Errorf("migrate: %w: version %d, newest known %d", ErrSchemaTooNew, version, len(steps))
	}
	for i := version; i < len(steps); i++ {
		if _, err := tx.ExecContext(ctx, steps[i]); err != nil {
			return fmt.Errorf("migrate to %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO agentd_memory_schema (version) VALUES (?)`, i+1); err != nil {
			return fmt.Errorf("migrate to %d: %w", i+1, err)
		}
	}
	return tx.Commit()
}

// tsIndex is the keyword index in PostgreSQL: memory_search. The words
// are memory's (words), folded as the SQLite index folds them
// (foldWord), on both the index's side and the query's, whatever the
// database's text search configuration.
type tsIndex struct{}

func (tsIndex) add(ctx context.Context, tx *sql.Tx, key int64, scope string, kind int64, name, body string) error {
	var b strings.Builder
	pos := 0
	lexemes := func(text, weight string) {
		words(text, func(w string, _, _ int) {
			pos++
			if len(w) > maxIndexedWord {
				return
			}
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteByte('\'')
			b.WriteString(foldWord(w))
			b.WriteString("':")
			b.WriteString(strconv.Itoa(min(pos, 16383)))
			b.WriteString(weight)
		})
	}
	lexemes(name, "A")
	lexemes(body, "B")
	_, err := tx.ExecContext(ctx, `INSERT INTO memory_search (key, scope, kind, doc) VALUES (?, ?, ?, CAST(? AS tsvector))`,
		key, scope, kind, b.String())
	return err
}

// maxIndexedWord bounds a word in the index: PostgreSQL refuses one of
// more than 2047 bytes.
const maxIndexedWord = 1000

func (tsIndex) remove(ctx context.Context, tx *sql.Tx, key int64) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM memory_search WHERE key = ?`, key)
	return err
}

// tsAny is the tsquery matching any of terms.
func tsAny(terms []string) string {
	var b strings.Builder
	for _, t := range terms {
		var ws []string
		words(t, func(w string, _, _ int) { ws = append(ws, "'"+foldWord(w)+"'") })
		if len(ws) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" | ")
		}
		b.WriteString("(" + strings.Join(ws, " <-> ") + ")")
	}
	return b.String()
}

func (tsIndex) search(ctx context.Context, db queryer, terms, scopes []string, kinds []int64, limit int) ([]int64, error) {
	q := tsAny(terms)
	if q == "" {
		return nil, nil
	}
	if scopes == nil {
		scopes = []string{}
	}
	if kinds == nil {
		kinds = []int64{}
	}
	// Weights D, C, B, A: the body's words count half the name's.
	rows, err := db.QueryContext(ctx, `SELECT key FROM memory_search, CAST(? AS tsquery) q
		WHERE doc @@ q AND (cardinality(CAST(? AS text[])) = 0 OR scope = ANY(CAST(? AS text[])))
		AND (cardinality(CAST(? AS bigint[])) = 0 OR kind = ANY(CAST(? AS bigint[])))
		ORDER BY ts_rank('{0, 0, 0.5, 1}', doc, q, 1) DESC, key LIMIT ?`, q, scopes, scopes, kinds, kinds, limit)
	if err != nil {
		return nil, err
	}
	return scanKeys(rows)
}

func (tsIndex) docs(ctx context.Context, db queryer, term string) (int64, error) {
	q := tsAny([]string{term})
	if q == "" {
		return 0, nil
	}
	// Counting stops past the budget: beyond it the number makes no
	// difference to recall, and a common word's count would cost much.
	n, _, err := queryInt(ctx, db, `SELECT count(*) FROM (SELECT 1 FROM memory_search WHERE doc @@ CAST(? AS tsquery) LIMIT ?) AS m`,
		q, termBudget+1)
	return n, err
}

// foldWord folds a word as SQLite's index does (remove_diacritics 2) for
// the common Latin letters: lower case, without accents.
func foldWord(w string) string { return search.Fold(w) }

// rebindConnector makes the connections of a PostgreSQL pool read ?
// placeholders (and SQLite's numbered ?NNN) as PostgreSQL's $N.
type rebindConnector struct{ driver.Connector }

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rebindConn{dc.(*stdlib.Conn)}, nil
}

type rebindConn struct{ *stdlib.Conn }

func (c *rebindConn) Prepare(q string) (driver.Stmt, error) { return c.Conn.Prepare(rebind(q)) }

func (c *rebindConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(q))
}

func (c *rebindConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(q), args)
}

func (c *rebindConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(q), args)
}

// rebind numbers a statement's placeholders for PostgreSQL: ?N becomes
// $N and each bare ? the next number. memory's statements hold no ? in a
// string literal.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] != '?' {
			b.WriteByte(q[i])
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		b.WriteByte('$')
		if j > i+1 {
			b.WriteString(q[i+1 : j])
			i = j - 1
			continue
		}
		n++
		b.WriteString(strconv.Itoa(n))
	}
	return b.String()
}
