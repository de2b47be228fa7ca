package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrSchemaTooNew is returned by Open for a database written by a newer
// agentd than this one: its schema version is above the newest migration
// this build knows.
var ErrSchemaTooNew = errors.New("database schema is newer than this agentd")

// schemaV1 is the first schema. It holds what the SQLite store's eight
// versions hold, in PostgreSQL's terms.
//
// Times are unix nanoseconds (UTC), as in SQLite, so that a time reads
// back exactly as it was written (timestamptz keeps microseconds). Event
// payloads, inbox texts, options and images, agent definitions and working
// memory values are bytea: they are stored byte for byte, a NUL or a byte
// that is not UTF-8 included, which text and jsonb refuse or rewrite.
//
// events.search is the history search's index of an input, system_message
// or text event: a tsvector of the folded words of its "text" field, made
// in Go (see tsvector) with the same words and folding as the query, and
// NULL for the other kinds. A GIN index serves the @@ matches.
//
// Events carry as few indexes as their reads need, as in SQLite: UNIQUE
// (session_id, seq) serves Events and is what keeps sequence numbers
// unique; events_reset and events_summary (partial) find the start of a
// session's context; events_turn a turn.
const schemaV1 = `
CREATE TABLE agents (
	id         text PRIMARY KEY,
	name       text NOT NULL DEFAULT '',
	type       text NOT NULL DEFAULT '',
	definition bytea,
	updated_at bigint NOT NULL
);

CREATE TABLE sessions (
	id         bigserial PRIMARY KEY,
	agent      text NOT NULL,
	key        text NOT NULL,
	state      text NOT NULL,
	last_seq   bigint NOT NULL DEFAULT 0,
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL,
	title      text NOT NULL DEFAULT '',
	title_by   text NOT NULL DEFAULT '',
	UNIQUE (agent, key)
);

CREATE TABLE events (
	id         bigserial PRIMARY KEY,
	session_id bigint NOT NULL REFERENCES sessions (id),
	seq        bigint NOT NULL,
	turn       bigint NOT NULL DEFAULT 0,
	kind       text NOT NULL,
	ts         bigint NOT NULL,
	data       bytea,
	search     tsvector,
	UNIQUE (session_id, seq)
);
CREATE INDEX events_reset ON events (session_id, seq) WHERE kind = 'reset';
CREATE INDEX events_summary ON events (session_id, seq) WHERE kind = 'summary';
CREATE INDEX events_turn ON events (turn);
CREATE INDEX events_search ON events USING gin (search) WHERE search IS NOT NULL;

CREATE TABLE inbox (
	id         bigserial PRIMARY KEY,
	session_id bigint NOT NULL REFERENCES sessions (id),
	kind       text NOT NULL,
	silent     boolean NOT NULL DEFAULT false,
	text       bytea NOT NULL,
	source     text NOT NULL DEFAULT '',
	origin     text NOT NULL DEFAULT '',
	idem_key   text NOT NULL DEFAULT '',
	state      text NOT NULL,
	created_at bigint NOT NULL,
	done_at    bigint,
	options    bytea,
	images     bytea
);
CREATE UNIQUE INDEX inbox_idem ON inbox (session_id, idem_key) WHERE idem_key <> '';
CREATE INDEX inbox_pending ON inbox (session_id, id) WHERE state = 'pending';

CREATE TABLE usage (
	id            bigserial PRIMARY KEY,
	session_id    bigint NOT NULL,
	agent         text NOT NULL,
	model         text NOT NULL,
	input_tokens  bigint NOT NULL,
	output_tokens bigint NOT NULL,
	cost_usd      double precision NOT NULL,
	ts            bigint NOT NULL
);
CREATE INDEX usage_agent_ts ON usage (agent, ts);
CREATE INDEX usage_ts ON usage (ts);

-- agentd_refuse fails the statement (and its transaction) that calls it:
-- a write that finds its session or inbox items missing refuses in the
-- database, so that a group of writes sent in one round trip is
-- committed whole or not at all without a second round trip.
CREATE FUNCTION agentd_refuse(what text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = 'P0002', MESSAGE = what;
END $$;

CREATE TABLE working_memory (
	session_id bigint NOT NULL REFERENCES sessions (id),
	key        text NOT NULL,
	value      bytea NOT NULL,
	updated_at bigint NOT NULL,
	seq        bigint NOT NULL,
	PRIMARY KEY (session_id, key)
);
`

// schemaV2 is the nodes' coordination: the node registry (a row per
// process start, its heartbeat kept by the node) and a lease per session
// that a node has run (which node may run its turns, until when, and the
// epoch that fences a node that lost it). Times here are the server's
// (timestamptz, now()), so that the nodes' clocks never disagree about
// an expiry. A lease given up has expires_at -infinity.
const schemaV2 = `
CREATE TABLE agentd_nodes (
	id           text PRIMARY KEY,
	name         text NOT NULL DEFAULT '',
	addr         text NOT NULL DEFAULT '',
	version      text NOT NULL DEFAULT '',
	started_at   timestamptz NOT NULL DEFAULT now(),
	heartbeat_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agentd_leases (
	session_id bigint PRIMARY KEY REFERENCES sessions (id),
	node_id    text NOT NULL,
	epoch      bigint NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX agentd_leases_node ON agentd_leases (node_id);
`

// migrations returns the schema steps in order; step i (from 0) brings the
// database to version i+1, recorded in agentd_schema. Steps are only ever
// appended.
func migrations() []string {
	return []string{schemaV1, schemaV2, schemaClaims, schemaExtensions, schemaJobRuns, schemaJobDelivery, schemaAgents, schemaInstanceBudgets,
		schemaConnectors, schemaGrants, schemaIdentity}
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return len(migrations()) }

// migrationLock is the advisory lock key under which nodes migrate, so
// that several nodes opening a new database at once apply each step once.
const migrationLock = 0x61676e746400 // "agntd\0"

// migrate brings the database up to len(steps), in one transaction under
// an advisory lock, and fails with ErrSchemaTooNew if it is already beyond.
func migrate(ctx context.Context, pool *pgxpool.Pool, steps []string, log *slog.Logger) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it does nothing
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS agentd_schema (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var version int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM agentd_schema`).Scan(&version); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if version > len(steps) {
		return fmt.Errorf("migrate: %w: version %d, newest known %d", ErrSchemaTooNew, version, len(steps))
	}
	for i := version; i < len(steps); i++ {
		if _, err := tx.Exec(ctx, steps[i], pgx.QueryExecModeSimpleProtocol); err != nil {
			return fmt.Errorf("migrate to %d: %w", i+1, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO agentd_schema (version) VALUES ($1)`, i+1); err != nil {
			return fmt.Errorf("migrate to %d: set version: %w", i+1, err)
		}
		log.Debug("store migration step", "version", i+1)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	if version > 0 && version < len(steps) {
		log.Info("store migrated", "from", version, "to", len(steps))
	}
	return nil
}
