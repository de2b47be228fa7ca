package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// ErrSchemaTooNew is returned by Open for a database written by a newer
// agentd than this one.
var ErrSchemaTooNew = errors.New("memory database schema is newer than this agentd")

// Item keys. Every searchable row (an entity's name, an observation, an
// insight) has one int64 key, its row id shifted left by two bits with the
// kind in the low bits. The key is the FTS5 rowid, the vectors table's key,
// the pending table's key and the id in the in-memory vector index, so one
// number names an item everywhere.
const (
	keyEntity      = 1
	keyObservation = 2
	keyInsight     = 3
)

func itemKey(kind int64, id int64) int64 { return id<<2 | kind }
func keyKind(key int64) int64            { return key & 3 }
func keyID(key int64) int64              { return key >> 2 }

// schemaV1 is the first schema. Times are unix nanoseconds (UTC).
//
// entities.norm is the name trimmed and lowercased (Unicode-aware, in Go);
// names are unique per scope regardless of case.
//
// memory_fts is a contentless FTS5 index (it stores the index, not a second
// copy of the text) keyed by item key. Its columns are tag (one token for
// the item's scope and one for its kind, so a search is confined to a scope
// inside the MATCH itself), name (the entity's name, or an insight's tags)
// and body (the observation or insight text, or the entity's type).
// Snippets are cut from the source rows in Go.
//
// memory_vocab exposes each indexed word's document count, so that recall
// can leave out words so common that scoring them costs much and tells
// little.
//
// vectors holds each item's embedding as a little-endian float32 blob, with
// the name of the model that made it. pending lists the items still waiting
// for one; it is the embedding loop's durable queue.
//
// Deleting a row (directly or through a foreign-key cascade) removes its
// index entry, vector and pending mark by trigger.
const schemaV1 = `
CREATE TABLE entities (
	id      INTEGER PRIMARY KEY,
	scope   TEXT NOT NULL,
	name    TEXT NOT NULL,
	norm    TEXT NOT NULL,
	type    TEXT NOT NULL DEFAULT '',
	session TEXT NOT NULL DEFAULT '',
	turn    INTEGER NOT NULL DEFAULT 0,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	UNIQUE (scope, norm)
);
CREATE INDEX entities_created ON entities (scope, created);

CREATE TABLE observations (
	id        INTEGER PRIMARY KEY,
	entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	text      TEXT NOT NULL,
	session   TEXT NOT NULL DEFAULT '',
	turn      INTEGER NOT NULL DEFAULT 0,
	created   INTEGER NOT NULL,
	UNIQUE (entity_id, text)
);
CREATE INDEX observations_created ON observations (created);

CREATE TABLE relations (
	id          INTEGER PRIMARY KEY,
	scope       TEXT NOT NULL,
	from_entity INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	to_entity   INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	type        TEXT NOT NULL,
	session     TEXT NOT NULL DEFAULT '',
	turn        INTEGER NOT NULL DEFAULT 0,
	created     INTEGER NOT NULL,
	UNIQUE (from_entity, to_entity, type)
);
CREATE INDEX relations_to ON relations (to_entity);

CREATE TABLE insights (
	id      INTEGER PRIMARY KEY,
	scope   TEXT NOT NULL,
	text    TEXT NOT NULL,
	tags    TEXT NOT NULL DEFAULT '',
	session TEXT NOT NULL DEFAULT '',
	turn    INTEGER NOT NULL DEFAULT 0,
	created INTEGER NOT NULL
);
CREATE INDEX insights_created ON insights (scope, created);

CREATE VIRTUAL TABLE memory_fts USING fts5 (
	tag, name, body,
	content = '',
	contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);

CREATE VIRTUAL TABLE memory_vocab USING fts5vocab (memory_fts, 'row');

CREATE TABLE vectors (
	key   INTEGER PRIMARY KEY,
	model TEXT NOT NULL,
	vec   BLOB NOT NULL
);

CREATE TABLE pending (key INTEGER PRIMARY KEY);

CREATE TRIGGER entities_gone AFTER DELETE ON entities BEGIN
	DELETE FROM memory_fts WHERE rowid = old.id * 4 + 1;
	DELETE FROM vectors WHERE key = old.id * 4 + 1;
	DELETE FROM pending WHERE key = old.id * 4 + 1;
END;
CREATE TRIGGER observations_gone AFTER DELETE ON observations BEGIN
	DELETE FROM memory_fts WHERE rowid = old.id * 4 + 2;
	DELETE FROM vectors WHERE key = old.id * 4 + 2;
	DELETE FROM pending WHERE key = old.id * 4 + 2;
END;
CREATE TRIGGER insights_gone AFTER DELETE ON insights BEGIN
	DELETE FROM memory_fts WHERE rowid = old.id * 4 + 3;
	DELETE FROM vectors WHERE key = old.id * 4 + 3;
	DELETE FROM pending WHERE key = old.id * 4 + 3;
END;
`

// migrations returns the schema steps in order; step i brings the database
// to version i+1 (PRAGMA user_version). Steps are only ever appended.
func migrations() []string { return []string{schemaV1} }

func migrate(ctx context.Context, db *sql.DB, steps []string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Close()
	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if version > len(steps) {
		return fmt.Errorf("migrate: %w: version %d, newest known %d", ErrSchemaTooNew, version, len(steps))
	}
	for i := version; i < len(steps); i++ {
		if err := migrateStep(ctx, conn, i+1, steps[i]); err != nil {
			return err
		}
	}
	return nil
}

func migrateStep(ctx context.Context, conn *sql.Conn, version int, step string) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate to %d: begin: %w", version, err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var current int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("migrate to %d: %w", version, err)
	}
	if current < version {
		if _, err := conn.ExecContext(ctx, step); err != nil {
			return fmt.Errorf("migrate to %d: %w", version, err)
		}
		if _, err := conn.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(version)); err != nil {
			return fmt.Errorf("migrate to %d: set version: %w", version, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("migrate to %d: commit: %w", version, err)
	}
	return nil
}
