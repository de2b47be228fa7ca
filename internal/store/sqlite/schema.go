package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"agentd/internal/store"
)

// ErrSchemaTooNew is returned by Open for a database written by a newer
// agentd than this one: its schema version is above the newest migration
// this build knows.
var ErrSchemaTooNew = errors.New("database schema is newer than this agentd")

// schemaV1 is the first schema.
//
// Times are unix nanoseconds (UTC). Event payloads are JSON stored as BLOBs.
//
// events carries as few indexes as its reads need, because every index
// ordered by session adds a randomly placed page per session to each group
// commit: UNIQUE (session_id, seq) serves Events, events_reset (partial:
// only reset markers) finds the start of a session's context, and
// events_turn grows at its end since turn ids only increase. A full
// (session_id, kind, seq) index costs about a third of the commit
// throughput; add one in a later migration if a query by kind needs it.
//
// events_fts is a contentless FTS5 index (empty content option) whose rowid
// is the events row id: it stores only the index, not a second copy of the
// text, and a search joins back to events for the event itself. The "text"
// field of input, system_message and text payloads is what gets indexed.
// The writer indexes each group's new events in the group's transaction with
// one statement (ftsIndexNew) rather than through an insert trigger, because
// FTS5 flushes its pending index data at every savepoint and a trigger would
// write one index segment per request. contentless_delete and the delete
// trigger keep the index in step when events are deleted.
const schemaV1 = `
CREATE TABLE agents (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL DEFAULT '',
	type       TEXT NOT NULL DEFAULT '',
	definition BLOB,
	updated_at INTEGER NOT NULL
);

CREATE TABLE sessions (
	id         INTEGER PRIMARY KEY,
	agent      TEXT NOT NULL,
	key        TEXT NOT NULL,
	state      TEXT NOT NULL,
	last_seq   INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (agent, key)
);

CREATE TABLE events (
	id         INTEGER PRIMARY KEY,
	session_id INTEGER NOT NULL REFERENCES sessions (id),
	seq        INTEGER NOT NULL,
	turn       INTEGER NOT NULL DEFAULT 0,
	kind       TEXT NOT NULL,
	ts         INTEGER NOT NULL,
	data       BLOB,
	UNIQUE (session_id, seq)
);
CREATE INDEX events_reset ON events (session_id, seq) WHERE kind = 'reset';
CREATE INDEX events_turn ON events (turn);

CREATE TABLE inbox (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id INTEGER NOT NULL REFERENCES sessions (id),
	kind       TEXT NOT NULL,
	silent     INTEGER NOT NULL DEFAULT 0,
	text       TEXT NOT NULL,
	source     TEXT NOT NULL DEFAULT '',
	origin     TEXT NOT NULL DEFAULT '',
	idem_key   TEXT NOT NULL DEFAULT '',
	state      TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	done_at    INTEGER
);
CREATE UNIQUE INDEX inbox_idem ON inbox (session_id, idem_key) WHERE idem_key <> '';
CREATE INDEX inbox_pending ON inbox (session_id, id) WHERE state = 'pending';

CREATE TABLE usage (
	id            INTEGER PRIMARY KEY,
	session_id    INTEGER NOT NULL,
	agent         TEXT NOT NULL,
	model         TEXT NOT NULL,
	input_tokens  INTEGER NOT NULL,
	output_tokens INTEGER NOT NULL,
	cost_usd      REAL NOT NULL,
	ts            INTEGER NOT NULL
);
CREATE INDEX usage_agent_ts ON usage (agent, ts);

CREATE VIRTUAL TABLE events_fts USING fts5 (
	text,
	content = '',
	contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER events_fts_delete AFTER DELETE ON events
WHEN old.kind IN ('input', 'system_message', 'text') BEGIN
	DELETE FROM events_fts WHERE rowid = old.id;
END;
`

// ftsIndexNew indexes the text of the events with a row id above ?.
// Payloads are valid JSON (Commit checks), but SQLite's parser refuses
// nesting that Go's accepts; such a payload is stored and not indexed rather
// than failing its whole group.
//
// Since schema v5 the index's row id is not the event id alone but
// searchRowid's: see schemaV5. ftsIndexNew indexes the events with an id in
// (?1, ?2], after ftsAgentsNew has numbered their sessions' agents, and
// ftsDoneSet records ?2 as indexed, all in one transaction.
const (
	ftsAgentsNew = `INSERT OR IGNORE INTO search_agents (agent)
	SELECT agent FROM sessions WHERE id IN (SELECT session_id FROM events WHERE id > ?1 AND id <= ?2)`
	ftsIndexNew = `INSERT INTO events_fts (rowid, text)
	SELECT (a.id << 40) | e.id,
		iif(json_valid(CAST(e.data AS TEXT)), json_extract(CAST(e.data AS TEXT), '$.text'), NULL)
	FROM events e JOIN sessions s ON s.id = e.session_id JOIN search_agents a ON a.agent = s.agent
	WHERE e.id > ?1 AND e.id <= ?2 AND e.kind IN ('input', 'system_message', 'text')`
	ftsDoneSet = `UPDATE search_indexed SET id = ?1`
	ftsDone    = `SELECT id FROM search_indexed`
)

// The index's row id is (agent number << searchAgentShift) | event id.
const (
	searchAgentShift = 40
	searchEventMask  = 1<<searchAgentShift - 1
)

// searchRange returns the index row ids of agent number a's events with an
// id up to snap.
func searchRange(a, snap int64) (lo, hi int64) {
	return a << searchAgentShift, a<<searchAgentShift | min(snap, searchEventMask)
}

// migration is one schema step: SQL, then, if fill is set, a function that
// fills what the SQL created (in the same transaction).
type migration struct {
	sql  string
	fill func(ctx context.Context, conn *sql.Conn) error
}

// migrations returns the schema steps in order; step i (from 0) brings the
// database to version i+1, recorded in PRAGMA user_version. Steps are only
// ever appended.
func migrations() []migration {
	return []migration{{sql: schemaV1}, {sql: schemaV2}, {sql: schemaV3}, {sql: schemaV4}, {sql: schemaV5, fill: rebuildSearch},
		{sql: schemaV6}, {sql: schemaV7}, {sql: schemaV8, fill: fillTitles}, {sql: schemaClaims},
		{sql: schemaExtensions}, {sql: schemaJobRuns}, {sql: schemaJobDelivery}, {sql: schemaAgents},
		{sql: schemaInstanceBudgets}, {sql: schemaConnectors}, {sql: schemaGrants},
		{sql: schemaIdentity}}
}

// SchemaVersion is the schema version this build writes (PRAGMA
// user_version of a database it has opened).
func SchemaVersion() int { return len(migrations()) }

// schemaV2 gives inbox items options (the message lifecycle's, as JSON).
const schemaV2 = `ALTER TABLE inbox ADD COLUMN options TEXT NOT NULL DEFAULT '';`

// schemaV3 adds working memory and an index for history search.
//
// working_memory holds each session's key-value working memory; it is a
// projection of the session's working_memory events, written by the commit
// that appends the event (seq is that event's). A deleted key has no row.
//
// events_hist covers what a history search filters its full-text matches
// by (the session, hence the agent, and the time), so that checking a match
// reads a small index entry instead of the event row with its payload. It
// is ordered by id, so, like events_turn, it grows at its end and adds no
// randomly placed page to a commit.
const schemaV3 = `
CREATE TABLE working_memory (
	session_id INTEGER NOT NULL REFERENCES sessions (id),
	key        TEXT NOT NULL,
	value      TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	PRIMARY KEY (session_id, key)
) WITHOUT ROWID;

CREATE INDEX events_hist ON events (id, session_id, ts);
`

// migrate brings the database on conn up to len(steps), one transaction per
// step, and fails with ErrSchemaTooNew if it is already beyond that. Each
// step is a debug line; upgrading a database that had a schema is one info
// line (making a new one is no news).
func migrate(ctx context.Context, conn *sql.Conn, steps []migration, log *slog.Logger) error {
	version, err := userVersion(ctx, conn)
	if err != nil {
		return err
	}
	if version > len(steps) {
		return fmt.Errorf("migrate: %w: version %d, newest known %d", ErrSchemaTooNew, version, len(steps))
	}
	for i := version; i < len(steps); i++ {
		if err := migrateStep(ctx, conn, i+1, steps[i]); err != nil {
			return err
		}
		log.Debug("store migration step", "version", i+1)
	}
	if version > 0 && version < len(steps) {
		log.Info("store migrated", "from", version, "to", len(steps))
	}
	return nil
}

// migrateStep applies one step unless another opener already did.
func migrateStep(ctx context.Context, conn *sql.Conn, version int, step migration) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate to %d: begin: %w", version, err)
	}
	defer func() {
		if err != nil {
			// The step failed, so the transaction is rolled back whole and
			// the version stays where it was.
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	current, err := userVersion(ctx, conn)
	if err != nil {
		return err
	}
	if current >= version {
		_, err = conn.ExecContext(ctx, "COMMIT")
		return err
	}
	if _, err := conn.ExecContext(ctx, step.sql); err != nil {
		return fmt.Errorf("migrate to %d: %w", version, err)
	}
	if step.fill != nil {
		if err := step.fill(ctx, conn); err != nil {
			return fmt.Errorf("migrate to %d: %w", version, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(version)); err != nil {
		return fmt.Errorf("migrate to %d: set version: %w", version, err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("migrate to %d: commit: %w", version, err)
	}
	return nil
}

// FileSchemaVersion reads the schema version of the database at path,
// opened read-only: it may be asked while agentd runs, and writes nothing.
// Without a write-ahead log (no agentd has it open, and the last closed it
// cleanly) the file is opened as immutable, since even a read-only open of
// a WAL database makes its -wal and -shm files.
func FileSchemaVersion(ctx context.Context, path string) (int, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	q := "?mode=ro&_pragma=busy_timeout(5000)"
	if _, err := os.Stat(abs + "-wal"); err != nil {
		q = "?mode=ro&immutable=1"
	}
	db, err := sql.Open("sqlite", "file:"+uriPath(abs)+q)
	if err != nil {
		return 0, fmt.Errorf("sqlite: schema version: %w", err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlite: schema version of %s: %w", path, err)
	}
	return v, nil
}

func userVersion(ctx context.Context, conn *sql.Conn) (int, error) {
	var v int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("migrate: read schema version: %w", err)
	}
	return v, nil
}

// schemaV4 finds a session's latest summary (the start of its context)
// with one index lookup.
const schemaV4 = `CREATE INDEX events_summary ON events (session_id, seq) WHERE kind = 'summary';`

// schemaV5 puts the agent into the search index's row ids, so that a
// history search of one agent's sessions reads and ranks only that agent's
// matches instead of ranking every match and dropping the other agents'.
//
// search_agents numbers the agents that have sessions (the writer adds new
// ones when it indexes). events_fts is rebuilt with row id
// (agent number << 40) | event id: an agent's events are one row id range,
// which FTS5 seeks to in every term's list, and a match's event id is its
// row id's low 40 bits. The indexed text is as before (one "text" column),
// so BM25 scores are unchanged; the cost is a few bytes more per row id in
// the index. search_indexed records the newest event id indexed (the row ids
// no longer give it), updated in each indexing transaction.
const schemaV5 = `
CREATE TABLE search_agents (
	id    INTEGER PRIMARY KEY,
	agent TEXT NOT NULL UNIQUE
);
CREATE TABLE search_indexed (id INTEGER NOT NULL);
INSERT INTO search_indexed (id) VALUES (0);

DROP TRIGGER events_fts_delete;
DROP TABLE events_fts;
CREATE VIRTUAL TABLE events_fts USING fts5 (
	text,
	content = '',
	contentless_delete = 1,
	tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TRIGGER events_fts_delete AFTER DELETE ON events
WHEN old.kind IN ('input', 'system_message', 'text') BEGIN
	DELETE FROM events_fts WHERE rowid = ((SELECT a.id FROM sessions s JOIN search_agents a ON a.agent = s.agent
		WHERE s.id = old.session_id) << 40) | old.id;
END;

INSERT INTO search_agents (agent) SELECT DISTINCT agent FROM sessions ORDER BY agent;
`

// rebuildBatch is how many events rebuildSearch indexes per statement.
const rebuildBatch = 100_000

// rebuildSearch indexes the existing events into the new events_fts, in
// batches of event ids so that no statement holds more than a batch's
// text, and then merges the index into one segment.
func rebuildSearch(ctx context.Context, conn *sql.Conn) error {
	var last int64
	if err := conn.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM events`).Scan(&last); err != nil {
		return fmt.Errorf("rebuild search index: %w", err)
	}
	for from := int64(0); from < last; from += rebuildBatch {
		if _, err := conn.ExecContext(ctx, ftsIndexNew, from, min(from+rebuildBatch, last)); err != nil {
			return fmt.Errorf("rebuild search index: events %d to %d: %w", from+1, min(from+rebuildBatch, last), err)
		}
	}
	if _, err := conn.ExecContext(ctx, ftsDoneSet, last); err != nil {
		return fmt.Errorf("rebuild search index: %w", err)
	}
	if last > 0 {
		if _, err := conn.ExecContext(ctx, `INSERT INTO events_fts (events_fts) VALUES ('optimize')`); err != nil {
			return fmt.Errorf("rebuild search index: optimize: %w", err)
		}
	}
	return nil
}

// schemaV6 orders usage by time, so that a usage report of every agent
// over a time range (the last day, the last 30 days) reads only that range.
// Rows are recorded in time order, so the index grows at its end and adds
// no randomly placed page to a commit.
const schemaV6 = `CREATE INDEX usage_ts ON usage (ts);`

// schemaV7 gives inbox items images (event.ImageRef values, as JSON; NULL
// if none).
const schemaV7 = `ALTER TABLE inbox ADD COLUMN images BLOB;`

// schemaV8 gives sessions a title for people, and who set it
// (store.TitleByInput, TitleByModel, TitleByUser; empty while it has none).
// fillTitles titles the sessions that exist from their first message.
const schemaV8 = `
ALTER TABLE sessions ADD COLUMN title TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN title_by TEXT NOT NULL DEFAULT '';
`

// fillTitles gives each session its first input's title, as the writer
// does when a session's first input is logged. It reads each session's
// events in order up to its first input (UNIQUE (session_id, seq)).
func fillTitles(ctx context.Context, conn *sql.Conn) error {
	rows, err := conn.QueryContext(ctx, `SELECT s.id, (SELECT e.data FROM events e
		WHERE e.session_id = s.id AND e.kind = 'input' ORDER BY e.seq LIMIT 1) FROM sessions s`)
	if err != nil {
		return fmt.Errorf("session titles: %w", err)
	}
	titles := map[int64]string{}
	for rows.Next() {
		var id int64
		var data []byte
		if err := rows.Scan(&id, &data); err != nil {
			rows.Close()
			return fmt.Errorf("session titles: %w", err)
		}
		if t := store.InputTitle(data); t != "" {
			titles[id] = t
		}
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("session titles: %w", err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("session titles: %w", err)
	}
	for id, t := range titles {
		if _, err := conn.ExecContext(ctx, qTitleInput, t, id); err != nil {
			return fmt.Errorf("session titles: %w", err)
		}
	}
	return nil
}
