package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
)

const (
	sessionCols = `id, agent, key, state, last_seq, created_at, updated_at, title, title_by`
	inboxCols   = `id, session_id, kind, silent, text, source, origin, idem_key, state, created_at, options, images, hops`
	eventCols   = `session_id, seq, turn, kind, ts, data`
)

// defaultSessionLimit is the number of sessions Sessions lists when the
// filter gives no limit.
const defaultSessionLimit = 100

// The read queries. Each names the index it relies on; a test checks the
// query plans.
const (
	// sessions: UNIQUE (agent, key), the primary key.
	qSessionByKey = `SELECT ` + sessionCols + ` FROM sessions WHERE agent = ? AND key = ?`
	qSessionByID  = `SELECT ` + sessionCols + ` FROM sessions WHERE id = ?`
	// inbox_idem (partial: its condition is repeated so that the planner
	// may use it), the primary key, inbox_pending.
	qInboxByKey      = `SELECT ` + inboxCols + ` FROM inbox WHERE session_id = ? AND idem_key = ? AND idem_key <> ''`
	qInboxByID       = `SELECT ` + inboxCols + ` FROM inbox WHERE id = ?`
	qPending         = `SELECT ` + inboxCols + ` FROM inbox WHERE session_id = ? AND state = 'pending' ORDER BY id`
	qPendingSessions = `SELECT DISTINCT session_id FROM inbox WHERE state = 'pending' ORDER BY session_id`
	// events: UNIQUE (session_id, seq), events_reset, events_turn (the
	// unary + keeps the planner off the session index, which would scan the
	// whole session).
	qEvents      = `SELECT ` + eventCols + ` FROM events WHERE session_id = ? AND seq > ? ORDER BY seq`
	qEventsLimit = `SELECT ` + eventCols + ` FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	// The context: the events after the last reset, where the latest
	// summary since then stands in for those it folds (it is returned
	// with the events after the last one it folds), of the kinds a
	// conversation is made of.
	qTurnEvents = `SELECT ` + eventCols + ` FROM events WHERE turn = ? AND +session_id = ? ORDER BY seq`
	qSearch     = `SELECT e.session_id, e.seq, e.turn, e.kind, e.ts, e.data
		FROM events_fts JOIN events e ON e.id = events_fts.rowid & 1099511627775
		WHERE events_fts MATCH ? ORDER BY events_fts.rank LIMIT ?`
	qAgents = `SELECT id, name, type, definition, updated_at FROM agents ORDER BY id`
	// usage_payer_ts for one payer's rows, usage_agent_ts for the rows
	// written before usage had a payer (payer ''), which its agent paid;
	// all agents scan.
	qUsageAgent = `SELECT coalesce(sum(i), 0), coalesce(sum(o), 0), coalesce(sum(c), 0) FROM (
		SELECT input_tokens i, output_tokens o, cost_usd c FROM usage WHERE payer = ?1 AND payer <> '' AND ts >= ?2
		UNION ALL
		SELECT input_tokens, output_tokens, cost_usd FROM usage WHERE agent = ?1 AND payer = '' AND ts >= ?2)`
	qUsageAll = `SELECT coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
		coalesce(sum(cost_usd), 0) FROM usage WHERE ts >= ?`
)

// qSessions lists sessions with their undelivered replies, counted from
// agentd_outbox_failed (grouped once: the failed rows are few). The list
// sorts in memory: sessions carries no index on updated_at, which every
// commit changes.
var qSessions = `SELECT ` + prefixed("s.", sessionCols) + `, coalesce(o.n, 0) FROM sessions s
	LEFT JOIN (SELECT session_id, count(*) AS n FROM agentd_outbox WHERE ` + sqlOutFailed + ` GROUP BY session_id) o
		ON o.session_id = s.id
	WHERE (?1 = '' OR s.agent = ?1) AND (?2 = '' OR s.state = ?2)
	ORDER BY s.updated_at DESC, s.id DESC LIMIT ?3`

// readStmts are the statements of the read pool, each prepared when first
// used: a process that reads little (a command run in process) prepares
// only what it reads.
type readStmts struct {
	all []*stmt

	sessionByKey, sessionByID, sessions *stmt
	inboxByKey, inboxByID, pending      *stmt
	pendingSessions                     *stmt
	events, eventsLimit, contextStart   *stmt
	turnEvents, search                  *stmt
	agents, usageAgent, usageAll        *stmt
	// The job runs' (jobrun.go): a fire reads its job's open runs, the
	// scheduler every job's last run and open runs when it starts.
	run, runs, runsFrom, runsOpen *stmt
	runsUndelivered, runLast      *stmt
	runOfDelivery, runOfMAC       *stmt
	// The instances' (agents.go).
	inst, instByDesc, instByAgent *stmt
	instUnreported, instOpen      *stmt
	mostRecent, usageAccount      *stmt
	// The connectors' (connector.go).
	convs, convsBehind, outDue, outDepth *stmt
	pairApproved, pairings               *stmt
	// The grants' (grant.go).
	grants *stmt
	// The identity server's and outbox's (identity.go).
	ident identReads
}

func (r *readStmts) prepare(db *sql.DB) {
	for _, p := range append([]struct {
		dst **stmt
		sql string
	}{
		{&r.sessionByKey, qSessionByKey},
		{&r.sessionByID, qSessionByID},
		{&r.sessions, qSessions},
		{&r.inboxByKey, qInboxByKey},
		{&r.inboxByID, qInboxByID},
		{&r.pending, qPending},
		{&r.pendingSessions, qPendingSessions},
		{&r.events, qEvents},
		{&r.eventsLimit, qEventsLimit},
		{&r.contextStart, qContextStart},
		{&r.turnEvents, qTurnEvents},
		{&r.search, qSearch},
		{&r.agents, qAgents},
		{&r.usageAgent, qUsageAgent},
		{&r.usageAll, qUsageAll},
		{&r.run, qRun},
		{&r.runs, qRuns},
		{&r.runsFrom, qRunsFrom},
		{&r.runsOpen, qRunsOpen},
		{&r.runsUndelivered, qRunsUndelivered},
		{&r.runLast, qRunLast},
		{&r.runOfDelivery, qRunOfDelivery},
		{&r.runOfMAC, qRunOfMAC},
		{&r.inst, qInst},
		{&r.instByDesc, qInstByDesc},
		{&r.instByAgent, qInstByAgent},
		{&r.instUnreported, qInstUnreported},
		{&r.instOpen, qInstOpen},
		{&r.mostRecent, qMostRecent},
		{&r.usageAccount, qUsageAccount},
		{&r.convs, qConvs},
		{&r.convsBehind, qConvsBehind},
		{&r.outDue, qOutDue},
		{&r.outDepth, qOutDepth},
		{&r.pairApproved, qPairApproved},
		{&r.pairings, qPairings},
		{&r.grants, qGrants},
	}, r.ident.list()...) {
		*p.dst = &stmt{db: db, q: p.sql}
		r.all = append(r.all, *p.dst)
	}
}

func (r *readStmts) close() {
	for _, st := range r.all {
		st.close()
	}
	r.all = nil
}

// stmt is a statement of the read pool, prepared when first used (again
// after a failure). It answers as *sql.Stmt does.
type stmt struct {
	db *sql.DB
	q  string

	mu sync.Mutex
	st *sql.Stmt
}

func (s *stmt) get(ctx context.Context) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		// Not the first caller's alone: a cancelled caller does not leave
		// the statement unprepared for the next.
		st, err := s.db.PrepareContext(context.WithoutCancel(ctx), s.q)
		if err != nil {
			return nil, fmt.Errorf("prepare %q: %w", s.q, err)
		}
		s.st = st
	}
	return s.st, nil
}

// QueryContext runs the statement.
func (s *stmt) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	st, err := s.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs the statement for one row; if it cannot be
// prepared, the query runs unprepared, and the row says why it fails.
func (s *stmt) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	st, err := s.get(ctx)
	if err != nil {
		return s.db.QueryRowContext(ctx, s.q, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

func (s *stmt) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st != nil {
		_ = s.st.Close() // closing a statement of a pool only frees it
	}
}

func unixTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// withTail scans a row whose last columns follow a known list into tail.
type withTail struct {
	scanner
	tail []any
}

func (w withTail) Scan(dest ...any) error { return w.scanner.Scan(append(dest, w.tail...)...) }

func scanSession(sc scanner) (store.Session, error) {
	var s store.Session
	var created, updated int64
	err := sc.Scan(&s.ID, &s.Agent, &s.Key, &s.State, &s.LastSeq, &created, &updated, &s.Title, &s.TitleBy)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, err
	}
	s.CreatedAt, s.UpdatedAt = unixTime(created), unixTime(updated)
	return s, nil
}

func scanInbox(sc scanner) (store.InboxItem, error) {
	var it store.InboxItem
	var kind string
	var created int64
	var opts string
	var images []byte
	err := sc.Scan(&it.ID, &it.Session, &kind, &it.Silent, &it.Text, &it.Source, &it.Origin, &it.IdempotencyKey, &it.State, &created, &opts, &images, &it.Hops)
	if opts != "" {
		it.Options = json.RawMessage(opts)
	}
	if err == nil && len(images) > 0 {
		if jerr := json.Unmarshal(images, &it.Images); jerr != nil {
			err = fmt.Errorf("inbox item %d: images: %w", it.ID, jerr)
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.InboxItem{}, store.ErrNotFound
	}
	if err != nil {
		return store.InboxItem{}, err
	}
	it.Kind, it.CreatedAt = event.Kind(kind), unixTime(created)
	return it, nil
}

func scanEvents(rows *sql.Rows) ([]event.Event, error) {
	defer rows.Close()
	var out []event.Event
	for rows.Next() {
		var e event.Event
		var kind string
		var ts int64
		var data []byte
		if err := rows.Scan(&e.Session, &e.Seq, &e.Turn, &kind, &ts, &data); err != nil {
			return nil, err
		}
		e.Kind, e.Time = event.Kind(kind), unixTime(ts)
		if data != nil {
			e.Data = data
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// SessionByID returns a session by id, or store.ErrNotFound.
func (s *Store) SessionByID(ctx context.Context, id int64) (store.Session, error) {
	if s.isDown.Load() {
		return store.Session{}, store.ErrClosed
	}
	sess, err := scanSession(s.r.sessionByID.QueryRowContext(ctx, id))
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, fmt.Errorf("sqlite: session %d: %w", id, err)
	}
	if err != nil {
		return store.Session{}, s.readErr("session by id", err)
	}
	return sess, nil
}

// SessionByAddress returns the session agent/key, or store.ErrNotFound; it
// never creates one.
func (s *Store) SessionByAddress(ctx context.Context, agent, key string) (store.Session, error) {
	if s.isDown.Load() {
		return store.Session{}, store.ErrClosed
	}
	sess, err := scanSession(s.r.sessionByKey.QueryRowContext(ctx, agent, key))
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, fmt.Errorf("sqlite: session %s/%s: %w", agent, key, err)
	}
	if err != nil {
		return store.Session{}, s.readErr("session by address", err)
	}
	return sess, nil
}

// Sessions lists sessions, most recently updated first.
func (s *Store) Sessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultSessionLimit
	}
	rows, err := s.r.sessions.QueryContext(ctx, f.Agent, f.State, limit)
	if err != nil {
		return nil, s.readErr("sessions", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		var undelivered int
		sess, err := scanSession(withTail{rows, []any{&undelivered}})
		if err != nil {
			return nil, s.readErr("sessions", err)
		}
		sess.Undelivered = undelivered
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("sessions", err)
	}
	return out, nil
}

// Pending returns a session's pending inbox items, oldest first.
func (s *Store) Pending(ctx context.Context, session int64) ([]store.InboxItem, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.r.pending.QueryContext(ctx, session)
	if err != nil {
		return nil, s.readErr("pending", err)
	}
	defer rows.Close()
	var out []store.InboxItem
	for rows.Next() {
		it, err := scanInbox(rows)
		if err != nil {
			return nil, s.readErr("pending", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("pending", err)
	}
	return out, nil
}

// PendingSessions returns the ids of the sessions with pending inbox items,
// in ascending order.
func (s *Store) PendingSessions(ctx context.Context) ([]int64, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.r.pendingSessions.QueryContext(ctx)
	if err != nil {
		return nil, s.readErr("pending sessions", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, s.readErr("pending sessions", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("pending sessions", err)
	}
	return out, nil
}

// InboxByKey returns session's inbox item with idempotency key, or
// store.ErrNotFound.
func (s *Store) InboxByKey(ctx context.Context, session int64, key string) (store.InboxItem, error) {
	if s.isDown.Load() {
		return store.InboxItem{}, store.ErrClosed
	}
	it, err := scanInbox(s.r.inboxByKey.QueryRowContext(ctx, session, key))
	if errors.Is(err, store.ErrNotFound) {
		return store.InboxItem{}, fmt.Errorf("sqlite: inbox item %q: %w", key, err)
	}
	if err != nil {
		return store.InboxItem{}, s.readErr("inbox item", err)
	}
	return it, nil
}

// InboxItem returns an inbox item by id, or store.ErrNotFound.
func (s *Store) InboxItem(ctx context.Context, id int64) (store.InboxItem, error) {
	if s.isDown.Load() {
		return store.InboxItem{}, store.ErrClosed
	}
	it, err := scanInbox(s.r.inboxByID.QueryRowContext(ctx, id))
	if errors.Is(err, store.ErrNotFound) {
		return store.InboxItem{}, fmt.Errorf("sqlite: inbox item %d: %w", id, err)
	}
	if err != nil {
		return store.InboxItem{}, s.readErr("inbox item", err)
	}
	return it, nil
}

// Events returns up to limit events of a session with Seq > after, in order
// (limit <= 0: all).
func (s *Store) Events(ctx context.Context, session, after int64, limit int) ([]event.Event, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	var rows *sql.Rows
	var err error
	if limit > 0 {
		rows, err = s.r.eventsLimit.QueryContext(ctx, session, after, limit)
	} else {
		rows, err = s.r.events.QueryContext(ctx, session, after)
	}
	if err != nil {
		return nil, s.readErr("events", err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, s.readErr("events", err)
	}
	return evs, nil
}

// TurnEvents returns the events of one turn of a session, in order.
func (s *Store) TurnEvents(ctx context.Context, session, turn int64) ([]event.Event, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.r.turnEvents.QueryContext(ctx, turn, session)
	if err != nil {
		return nil, s.readErr("turn events", err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, s.readErr("turn events", err)
	}
	return evs, nil
}

// SearchText searches the text of input, system_message and text events of
// all sessions and returns up to limit matches, best (BM25) first. query is
// an FTS5 query: words match words (all must occur), "quoted phrases" match
// phrases, and OR, NOT, NEAR and prefix* work as in SQLite FTS5. limit <= 0
// means 20.
func (s *Store) SearchText(ctx context.Context, query string, limit int) ([]event.Event, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("sqlite: search: %w: empty query", ErrInvalid)
	}
	if limit <= 0 {
		limit = 20
	}
	// Index everything written so far first.
	r := s.getRequest(ctx, opIndex)
	if err := s.send(ctx, r); err != nil {
		return nil, err
	}
	s.putRequest(r)
	rows, err := s.r.search.QueryContext(ctx, query, limit)
	if err != nil {
		return nil, s.readErr(fmt.Sprintf("search %q", query), err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, s.readErr(fmt.Sprintf("search %q", query), err)
	}
	return evs, nil
}

// Agents returns the recorded agents, by id.
func (s *Store) Agents(ctx context.Context) ([]store.AgentRecord, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.r.agents.QueryContext(ctx)
	if err != nil {
		return nil, s.readErr("agents", err)
	}
	defer rows.Close()
	var out []store.AgentRecord
	for rows.Next() {
		var a store.AgentRecord
		var ts int64
		if err := rows.Scan(&a.ID, &a.Name, &a.Type, &a.Definition, &ts); err != nil {
			return nil, s.readErr("agents", err)
		}
		a.UpdatedAt = unixTime(ts)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("agents", err)
	}
	return out, nil
}

// UsageSince sums the usage recorded at or after t, paid by one agent
// or, with agent "", by all. The result's Agent is agent and its Time is t.
func (s *Store) UsageSince(ctx context.Context, agent string, t time.Time) (store.Usage, error) {
	if s.isDown.Load() {
		return store.Usage{}, store.ErrClosed
	}
	var since int64
	if !t.IsZero() {
		since = t.UnixNano()
	} else {
		since = -1 << 63
	}
	u := store.Usage{Agent: agent, Time: t}
	var row *sql.Row
	if agent == "" {
		row = s.r.usageAll.QueryRowContext(ctx, since)
	} else {
		row = s.r.usageAgent.QueryRowContext(ctx, agent, since)
	}
	err := row.Scan(&u.InputTokens, &u.OutputTokens, &u.CostUSD)
	if err != nil {
		return store.Usage{}, s.readErr("usage", err)
	}
	return u, nil
}
