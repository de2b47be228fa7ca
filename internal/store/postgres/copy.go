package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"agentd/internal/event"
)

// Copying a SQLite store into PostgreSQL. CopyFromSQLite reads the tables
// of an agentd SQLite database (at the schema version store/sqlite writes:
// open it with sqlite.Open first, which migrates it) and writes every row
// into this store, keeping ids: sessions, inbox items (whose ids are the
// turn ids events carry) and usage rows keep theirs; events are numbered
// by session and sequence number, as both stores key them.
//
// It is resumable: a session's events are copied in chunks after the last
// sequence number PostgreSQL has of it, each chunk in one transaction with
// the session's last_seq, so a copy that stopped (or a deployment that
// went on writing after a first copy) continues where it was; inbox items
// are upserted (a pending item may be done since), usage rows, agents and
// working memory inserted or replaced by key, extension rows and their
// history as copyExtensions says, job runs as copyJobRuns says, the
// dynamic agents' instances as copyInstances says, the chat connectors'
// rows as copyconnectors.go says. It then compares row
// counts, every session's last sequence number, every extension row's
// version, every job run's status and end and every instance's state,
// end and report (CopyReport).
//
// The copy knows both schemas: a migration of either store changes it,
// and its test, which copies every table and reads the result through the
// contract, says when it was forgotten.

// copyChunk is how many rows one copy transaction writes.
const copyChunk = 2000

// ErrCopyMismatch is returned (wrapped) by CopyFromSQLite when the copy
// does not verify: counts or sequence numbers differ.
var ErrCopyMismatch = errors.New("the copy differs from its source")

// CopyCount is one table's rows in the source and in PostgreSQL.
type CopyCount struct {
	Table          string
	Source, Target int64
}

// CopyReport is what a copy did and found.
type CopyReport struct {
	Counts []CopyCount
	// Copied counts the events this run wrote (a resumed copy writes only
	// what was missing).
	Copied int64
	// Differ lists the sessions (by address) whose last sequence number
	// differs between the stores; empty when the copy verifies.
	Differ []string
	// DifferExt lists the extension rows ("type/name") whose version
	// differs between the stores, or that only one of them has; empty
	// when the copy verifies.
	DifferExt []string
	// DifferRuns lists the job runs ("job/run status") whose status or
	// end differs between the stores, or that only one of them has;
	// empty when the copy verifies.
	DifferRuns []string
	// DifferAgents lists the instances ("id state") whose state, end or
	// report differs between the stores, or that only one of them has;
	// empty when the copy verifies.
	DifferAgents []string
}

// OK reports whether the copy verified.
func (r CopyReport) OK() bool {
	for _, c := range r.Counts {
		if c.Source != c.Target {
			return false
		}
	}
	return len(r.Differ) == 0 && len(r.DifferExt) == 0 && len(r.DifferRuns) == 0 && len(r.DifferAgents) == 0
}

// CopyFromSQLite copies the agentd SQLite database src into the store and
// verifies the copy; a copy that does not verify is ErrCopyMismatch, with
// the report saying where. progress, if not nil, is told each session's
// address as it is copied.
func (s *Store) CopyFromSQLite(ctx context.Context, src *sql.DB, progress func(session string)) (CopyReport, error) {
	var rep CopyReport
	steps := []struct {
		what string
		fn   func(context.Context, *sql.DB) error
	}{
		{"agents", s.copyAgents},
		{"sessions", func(ctx context.Context, src *sql.DB) error { return s.copySessions(ctx, src, &rep, progress) }},
		{"inbox", s.copyInbox},
		{"usage", s.copyUsage},
		{"working memory", s.copyWorking},
		{"claims", s.copyClaims},
		{"extensions", s.copyExtensions},
		{"job runs", s.copyJobRuns},
		{"agents' instances", s.copyInstances},
		{"conversations", s.copyConversations},
		{"outbox", s.copyOutbox},
		{"pairings", s.copyPairings},
		{"grants", s.copyGrants},
		{"identity", s.copyIdentity},
		{"sequences", func(ctx context.Context, _ *sql.DB) error { return s.resetSequences(ctx) }},
	}
	for _, st := range steps {
		if err := st.fn(ctx, src); err != nil {
			return rep, fmt.Errorf("postgres: copy %s: %w", st.what, err)
		}
	}
	if err := s.verifyCopy(ctx, src, &rep); err != nil {
		return rep, fmt.Errorf("postgres: verify the copy: %w", err)
	}
	if !rep.OK() {
		return rep, fmt.Errorf("postgres: copy: %w", ErrCopyMismatch)
	}
	return rep, nil
}

func (s *Store) copyAgents(ctx context.Context, src *sql.DB) error {
	rows, err := src.QueryContext(ctx, `SELECT id, name, type, definition, updated_at FROM agents ORDER BY id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	b := &pgx.Batch{}
	for rows.Next() {
		var id, name, typ string
		var def []byte
		var ts int64
		if err := rows.Scan(&id, &name, &typ, &def, &ts); err != nil {
			return err
		}
		b.Queue(qUpsertAgent, id, name, typ, def, ts)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return s.pool.SendBatch(ctx, b).Close()
}

type srcSession struct {
	id, lastSeq, created, updated int64
	agent, key, state, title, by  string
}

func (s *Store) copySessions(ctx context.Context, src *sql.DB, rep *CopyReport, progress func(string)) error {
	rows, err := src.QueryContext(ctx, `SELECT id, agent, key, state, last_seq, created_at, updated_at, title, title_by
		FROM sessions ORDER BY id`)
	if err != nil {
		return err
	}
	var sessions []srcSession
	for rows.Next() {
		var x srcSession
		if err := rows.Scan(&x.id, &x.agent, &x.key, &x.state, &x.lastSeq, &x.created, &x.updated, &x.title, &x.by); err != nil {
			rows.Close()
			return err
		}
		sessions = append(sessions, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, x := range sessions {
		if progress != nil {
			progress(x.agent + "/" + x.key)
		}
		if err := s.copySession(ctx, src, x, rep); err != nil {
			return fmt.Errorf("session %s/%s: %w", x.agent, x.key, err)
		}
	}
	return nil
}

// copySession copies one session's row and its events after the last
// sequence number PostgreSQL has, chunk by chunk.
func (s *Store) copySession(ctx context.Context, src *sql.DB, x srcSession, rep *CopyReport) error {
	var id, have int64
	err := s.pool.QueryRow(ctx, `INSERT INTO sessions (id, agent, key, state, last_seq, created_at, updated_at, title, title_by)
		VALUES ($1, $2, $3, $4, 0, $5, $6, $7, $8) ON CONFLICT (id) DO UPDATE SET id = excluded.id
		RETURNING id, last_seq`, x.id, x.agent, x.key, x.state, x.created, x.updated, x.title, x.by).Scan(&id, &have)
	if err != nil {
		return err
	}
	var agent, key string
	if err := s.pool.QueryRow(ctx, `SELECT agent, key FROM sessions WHERE id = $1`, id).Scan(&agent, &key); err != nil {
		return err
	}
	if agent != x.agent || key != x.key {
		return fmt.Errorf("PostgreSQL has session %d as %s/%s: copy into an empty database", id, agent, key)
	}
	for have < x.lastSeq {
		n, last, err := s.copyEvents(ctx, src, x.id, have)
		if err != nil {
			return err
		}
		if n == 0 {
			break // the source has no more (it should have: verify says)
		}
		rep.Copied += n
		have = last
	}
	_, err = s.pool.Exec(ctx, `UPDATE sessions SET state = $2, updated_at = $3, title = $4, title_by = $5 WHERE id = $1`,
		x.id, x.state, x.updated, x.title, x.by)
	return err
}

// copyEvents copies up to copyChunk events of session after seq, in one
// transaction with the session's last_seq.
func (s *Store) copyEvents(ctx context.Context, src *sql.DB, session, after int64) (n, last int64, err error) {
	rows, err := src.QueryContext(ctx, `SELECT seq, turn, kind, ts, data FROM events
		WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`, session, after, copyChunk)
	if err != nil {
		return 0, 0, err
	}
	var seqs, turns, times []int64
	var kinds []string
	var datas [][]byte
	var searches []*string
	for rows.Next() {
		var seq, turn, ts int64
		var kind string
		var data []byte
		if err := rows.Scan(&seq, &turn, &kind, &ts, &data); err != nil {
			rows.Close()
			return 0, 0, err
		}
		var sv *string
		if indexed(event.Kind(kind)) {
			if v := tsvector(data); v != "" {
				sv = &v
			}
		}
		seqs, turns, kinds, times = append(seqs, seq), append(turns, turn), append(kinds, kind), append(times, ts)
		datas, searches = append(datas, data), append(searches, sv)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	if len(seqs) == 0 {
		return 0, after, nil
	}
	last = slices.Max(seqs)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO events (session_id, seq, turn, kind, ts, data, search)
			SELECT $1, e.seq, e.turn, e.kind, e.ts, e.data, e.search::tsvector
			FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::bytea[], $7::text[])
				AS e(seq, turn, kind, ts, data, search)`, session, seqs, turns, kinds, times, datas, searches); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE sessions SET last_seq = $2 WHERE id = $1`, session, last)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return int64(len(seqs)), last, nil
}

func (s *Store) copyInbox(ctx context.Context, src *sql.DB) error {
	for after := int64(0); ; {
		rows, err := src.QueryContext(ctx, `SELECT id, session_id, kind, silent, text, source, origin, idem_key, state,
			created_at, done_at, options, images, hops FROM inbox WHERE id > ? ORDER BY id LIMIT ?`, after, copyChunk)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for rows.Next() {
			var id, session, created, hops int64
			var done *int64
			var kind, text, source, origin, key, state, opts string
			var silent bool
			var images []byte
			if err := rows.Scan(&id, &session, &kind, &silent, &text, &source, &origin, &key, &state, &created, &done, &opts, &images, &hops); err != nil {
				rows.Close()
				return err
			}
			var o []byte
			if opts != "" {
				o = []byte(opts)
			}
			b.Queue(`INSERT INTO inbox (id, session_id, kind, silent, text, source, origin, idem_key, state, created_at, done_at, options, images, hops)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
				ON CONFLICT (id) DO UPDATE SET state = excluded.state, done_at = excluded.done_at`,
				id, session, kind, silent, []byte(text), source, origin, key, state, created, done, o, images, hops)
			after = id
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

func (s *Store) copyUsage(ctx context.Context, src *sql.DB) error {
	for after := int64(0); ; {
		rows, err := src.QueryContext(ctx, `SELECT id, session_id, agent, model, input_tokens, output_tokens, cost_usd, ts, payer, account
			FROM usage WHERE id > ? ORDER BY id LIMIT ?`, after, copyChunk)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for rows.Next() {
			var id, session, in, out, ts int64
			var agent, model, payer, account string
			var cost float64
			if err := rows.Scan(&id, &session, &agent, &model, &in, &out, &cost, &ts, &payer, &account); err != nil {
				rows.Close()
				return err
			}
			b.Queue(`INSERT INTO usage (id, session_id, agent, model, input_tokens, output_tokens, cost_usd, ts, payer, account)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
				id, session, agent, model, in, out, cost, ts, payer, account)
			after = id
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

func (s *Store) copyWorking(ctx context.Context, src *sql.DB) error {
	rows, err := src.QueryContext(ctx, `SELECT session_id, key, value, updated_at, seq FROM working_memory`)
	if err != nil {
		return err
	}
	defer rows.Close()
	b := &pgx.Batch{}
	for rows.Next() {
		var session, updated, seq int64
		var key, value string
		if err := rows.Scan(&session, &key, &value, &updated, &seq); err != nil {
			return err
		}
		b.Queue(`INSERT INTO working_memory (session_id, key, value, updated_at, seq) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, seq = excluded.seq`,
			session, key, []byte(value), updated, seq)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	return s.inTx(ctx, b)
}

// copyClaims copies the pieces of work claimed (Claim): work done once
// stays done after the move. A key PostgreSQL has already keeps its node.
func (s *Store) copyClaims(ctx context.Context, src *sql.DB) error {
	rows, err := src.QueryContext(ctx, `SELECT key, node_id, claimed_at FROM agentd_claims ORDER BY key`)
	if err != nil {
		return err
	}
	defer rows.Close()
	b := &pgx.Batch{}
	for rows.Next() {
		var key, node string
		var ts int64
		if err := rows.Scan(&key, &node, &ts); err != nil {
			return err
		}
		b.Queue(`INSERT INTO agentd_claims (key, node_id, claimed_at) VALUES ($1, $2, to_timestamp($3::float8 / 1e9))
			ON CONFLICT (key) DO NOTHING`, key, node, ts)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return s.pool.SendBatch(ctx, b).Close()
}

// inTx runs a batch in one transaction.
func (s *Store) inTx(ctx context.Context, b *pgx.Batch) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
}

// resetSequences moves the id sequences past the ids copied, so that the
// rows PostgreSQL makes next do not take them.
func (s *Store) resetSequences(ctx context.Context) error {
	for _, t := range []string{"sessions", "inbox", "usage", "agentd_outbox", "agentd_identity_outbox"} {
		if _, err := s.pool.Exec(ctx, `SELECT setval(pg_get_serial_sequence('`+t+`', 'id'),
			greatest((SELECT max(id) FROM `+t+`), 1), (SELECT max(id) FROM `+t+`) IS NOT NULL)`); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

// copyTables are the tables a copy compares, by name in both stores.
var copyTables = []string{"agents", "sessions", "events", "inbox", "usage", "working_memory", "agentd_claims",
	"agentd_extensions", "agentd_extension_history", "agentd_job_runs", "agentd_instances",
	"agentd_conversations", "agentd_outbox", "agentd_pairings", "agentd_grants",
	"agentd_identity_characters", "agentd_identity_logs", "agentd_identity_outbox"}

// verifyCopy counts each table's rows in both stores and compares every
// session's last sequence number and its newest event's.
func (s *Store) verifyCopy(ctx context.Context, src *sql.DB, rep *CopyReport) error {
	rep.Counts = nil
	for _, t := range copyTables {
		c := CopyCount{Table: t}
		if err := src.QueryRowContext(ctx, `SELECT count(*) FROM `+t).Scan(&c.Source); err != nil {
			return err
		}
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+t).Scan(&c.Target); err != nil {
			return err
		}
		rep.Counts = append(rep.Counts, c)
	}
	want := map[int64]int64{}
	names := map[int64]string{}
	rows, err := src.QueryContext(ctx, `SELECT s.id, s.agent || '/' || s.key, s.last_seq FROM sessions s`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, last int64
		var name string
		if err := rows.Scan(&id, &name, &last); err != nil {
			rows.Close()
			return err
		}
		want[id], names[id] = last, name
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	got := map[int64]int64{}
	prows, err := s.pool.Query(ctx, `SELECT s.id, s.last_seq, coalesce((SELECT max(seq) FROM events WHERE session_id = s.id), 0)
		FROM sessions s`)
	if err != nil {
		return err
	}
	for prows.Next() {
		var id, last, top int64
		if err := prows.Scan(&id, &last, &top); err != nil {
			prows.Close()
			return err
		}
		if last != top {
			last = -1 // a session whose events do not reach its last_seq differs
		}
		got[id] = last
	}
	prows.Close()
	if err := prows.Err(); err != nil {
		return err
	}
	rep.Differ = nil
	for id, last := range want {
		if got[id] != last {
			rep.Differ = append(rep.Differ, names[id])
		}
	}
	slices.Sort(rep.Differ)
	if err := s.verifyExtensions(ctx, src, rep); err != nil {
		return err
	}
	if err := s.verifyJobRuns(ctx, src, rep); err != nil {
		return err
	}
	return s.verifyInstances(ctx, src, rep)
}
