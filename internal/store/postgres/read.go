package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/search"
)

const (
	sessionCols = `id, agent, key, state, last_seq, created_at, updated_at, title, title_by`
	inboxCols   = `id, session_id, kind, silent, text, source, origin, idem_key, state, created_at, options, images, hops`
	eventCols   = `session_id, seq, turn, kind, ts, data`
)

// qSessions lists sessions with their undelivered replies, counted from
// agentd_outbox_failed (grouped once: the failed rows are few).
var qSessions = `SELECT ` + prefixed("s.", sessionCols) + `, coalesce(o.n, 0) FROM sessions s
	LEFT JOIN (SELECT session_id, count(*) AS n FROM agentd_outbox WHERE ` + sqlOutFailed + ` GROUP BY session_id) o
		ON o.session_id = s.id
	WHERE ($1 = '' OR s.agent = $1) AND ($2 = '' OR s.state = $2)
	ORDER BY s.updated_at DESC, s.id DESC LIMIT $3`

// defaultSessionLimit is the number of sessions Sessions lists when the
// filter gives no limit.
const defaultSessionLimit = 100

// The read queries.
const (
	qSessionByKey    = `SELECT ` + sessionCols + ` FROM sessions WHERE agent = $1 AND key = $2`
	qSessionByID     = `SELECT ` + sessionCols + ` FROM sessions WHERE id = $1`
	qInboxByKey      = `SELECT ` + inboxCols + ` FROM inbox WHERE session_id = $1 AND idem_key = $2 AND idem_key <> ''`
	qInboxByID       = `SELECT ` + inboxCols + ` FROM inbox WHERE id = $1`
	qPending         = `SELECT ` + inboxCols + ` FROM inbox WHERE session_id = $1 AND state = 'pending' ORDER BY id`
	qPendingSessions = `SELECT DISTINCT session_id FROM inbox WHERE state = 'pending' ORDER BY session_id`
	qEvents          = `SELECT ` + eventCols + ` FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq`
	qEventsLimit     = qEvents + ` LIMIT $3`
	qTurnEvents      = `SELECT ` + eventCols + ` FROM events WHERE turn = $1 AND session_id = $2 ORDER BY seq`
	qAgents          = `SELECT id, name, type, definition, updated_at FROM agents ORDER BY id`
	qUsageSince      = `SELECT coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
		coalesce(sum(cost_usd), 0) FROM usage WHERE ts >= $1`
	// A payer's: usage_payer_ts for the rows with a payer,
	// usage_agent_ts for those written before usage had one (payer
	// ''), which their agent paid.
	qUsagePayer = `SELECT coalesce(sum(i), 0), coalesce(sum(o), 0), coalesce(sum(c), 0) FROM (
		SELECT input_tokens i, output_tokens o, cost_usd c FROM usage WHERE payer = $1 AND payer <> '' AND ts >= $2
		UNION ALL
		SELECT input_tokens, output_tokens, cost_usd FROM usage WHERE agent = $1 AND payer = '' AND ts >= $2) u`
	// Where a session's context starts: the last reset, the latest
	// summary after it (whose payload says what it folds), the last
	// sequence number.
	qContextStart = `SELECT coalesce((SELECT max(seq) FROM events WHERE session_id = $1 AND kind = 'reset'), 0),
		(SELECT last_seq FROM sessions WHERE id = $1)`
	qContextSummary = `SELECT ` + eventCols + ` FROM events WHERE session_id = $1 AND kind = 'summary' AND seq > $2
		ORDER BY seq DESC LIMIT 1`
	qContextRange = `SELECT ` + eventCols + ` FROM events WHERE session_id = $1 AND seq > $2 AND seq <= $3
		AND kind IN ('input', 'system_message', 'text', 'tool_call', 'tool_result', 'turn_end') ORDER BY seq`
)

func unixTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// withTail scans a row whose last columns follow a known list into tail.
type withTail struct {
	pgx.Row
	tail []any
}

func (w withTail) Scan(dest ...any) error { return w.Row.Scan(append(dest, w.tail...)...) }

func scanSession(row pgx.Row) (store.Session, error) {
	var s store.Session
	var created, updated int64
	err := row.Scan(&s.ID, &s.Agent, &s.Key, &s.State, &s.LastSeq, &created, &updated, &s.Title, &s.TitleBy)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, err
	}
	s.CreatedAt, s.UpdatedAt = unixTime(created), unixTime(updated)
	return s, nil
}

func scanInbox(row pgx.Row) (store.InboxItem, error) {
	var it store.InboxItem
	var kind string
	var created int64
	var text, opts, images []byte
	var hops int64
	err := row.Scan(&it.ID, &it.Session, &kind, &it.Silent, &text, &it.Source, &it.Origin, &it.IdempotencyKey, &it.State, &created, &opts, &images, &hops)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.InboxItem{}, store.ErrNotFound
	}
	if err != nil {
		return store.InboxItem{}, err
	}
	if len(opts) > 0 {
		it.Options = json.RawMessage(opts)
	}
	if len(images) > 0 {
		if err := json.Unmarshal(images, &it.Images); err != nil {
			return store.InboxItem{}, fmt.Errorf("inbox item %d: images: %w", it.ID, err)
		}
	}
	it.Text, it.Kind, it.CreatedAt, it.Hops = string(text), event.Kind(kind), unixTime(created), int(hops)
	return it, nil
}

// scanEvents reads rows of eventCols.
func scanEvents(rows pgx.Rows) ([]event.Event, error) {
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
	sess, err := scanSession(s.pool.QueryRow(ctx, qSessionByID, id))
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, fmt.Errorf("postgres: session %d: %w", id, err)
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
	sess, err := scanSession(s.pool.QueryRow(ctx, qSessionByKey, agent, key))
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, fmt.Errorf("postgres: session %s/%s: %w", agent, key, err)
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
	rows, err := s.pool.Query(ctx, qSessions, f.Agent, f.State, limit)
	if err != nil {
		return nil, s.readErr("sessions", err)
	}
	defer rows.Close()
	var out []store.Session
	for rows.Next() {
		var undelivered int64
		sess, err := scanSession(withTail{rows, []any{&undelivered}})
		if err != nil {
			return nil, s.readErr("sessions", err)
		}
		sess.Undelivered = int(undelivered)
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("sessions", err)
	}
	return out, nil
}

// inboxItems reads rows of inboxCols.
func (s *Store) inboxItems(ctx context.Context, op, q string, args ...any) ([]store.InboxItem, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.readErr(op, err)
	}
	defer rows.Close()
	var out []store.InboxItem
	for rows.Next() {
		it, err := scanInbox(rows)
		if err != nil {
			return nil, s.readErr(op, err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(op, err)
	}
	return out, nil
}

// Pending returns a session's pending inbox items, oldest first.
func (s *Store) Pending(ctx context.Context, session int64) ([]store.InboxItem, error) {
	return s.inboxItems(ctx, "pending", qPending, session)
}

// PendingSessions returns the ids of the sessions with pending inbox items,
// in ascending order.
func (s *Store) PendingSessions(ctx context.Context) ([]int64, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, qPendingSessions)
	if err != nil {
		return nil, s.readErr("pending sessions", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, s.readErr("pending sessions", err)
	}
	return ids, nil
}

// InboxByKey returns session's inbox item with idempotency key, or
// store.ErrNotFound.
func (s *Store) InboxByKey(ctx context.Context, session int64, key string) (store.InboxItem, error) {
	if s.isDown.Load() {
		return store.InboxItem{}, store.ErrClosed
	}
	it, err := s.inboxByKey(ctx, session, key)
	if errors.Is(err, store.ErrNotFound) {
		return store.InboxItem{}, fmt.Errorf("postgres: inbox item %q: %w", key, err)
	}
	return it, err
}

// InboxItem returns an inbox item by id, or store.ErrNotFound.
func (s *Store) InboxItem(ctx context.Context, id int64) (store.InboxItem, error) {
	if s.isDown.Load() {
		return store.InboxItem{}, store.ErrClosed
	}
	it, err := scanInbox(s.pool.QueryRow(ctx, qInboxByID, id))
	if errors.Is(err, store.ErrNotFound) {
		return store.InboxItem{}, fmt.Errorf("postgres: inbox item %d: %w", id, err)
	}
	if err != nil {
		return store.InboxItem{}, s.readErr("inbox item", err)
	}
	return it, nil
}

// inboxByKey returns the item of session with idempotency key, or
// store.ErrNotFound.
func (s *Store) inboxByKey(ctx context.Context, session int64, key string) (store.InboxItem, error) {
	it, err := scanInbox(s.pool.QueryRow(ctx, qInboxByKey, session, key))
	if errors.Is(err, store.ErrNotFound) {
		return store.InboxItem{}, err
	}
	if err != nil {
		return store.InboxItem{}, s.readErr("enqueue", err)
	}
	return it, nil
}

// events runs q, which selects eventCols.
func (s *Store) events(ctx context.Context, op, q string, args ...any) ([]event.Event, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.readErr(op, err)
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return nil, s.readErr(op, err)
	}
	return evs, nil
}

// Events returns up to limit events of a session with Seq > after, in order
// (limit <= 0: all).
func (s *Store) Events(ctx context.Context, session, after int64, limit int) ([]event.Event, error) {
	if limit > 0 {
		return s.events(ctx, "events", qEventsLimit, session, after, limit)
	}
	return s.events(ctx, "events", qEvents, session, after)
}

// TurnEvents returns the events of one turn of a session, in order.
func (s *Store) TurnEvents(ctx context.Context, session, turn int64) ([]event.Event, error) {
	return s.events(ctx, "turn events", qTurnEvents, turn, session)
}

// ContextEvents returns the events a session's conversation is built from:
// those after its last reset marker (inputs, messages, text, tool calls and
// results, turn ends), the latest summary since then standing in for the
// events it folds. It reads in one snapshot (a repeatable-read
// transaction), so that a commit between its queries cannot show.
func (s *Store) ContextEvents(ctx context.Context, session int64) ([]event.Event, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, s.readErr("context events", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only: nothing to undo
	var reset int64
	var last *int64
	if err := tx.QueryRow(ctx, qContextStart, session).Scan(&reset, &last); err != nil {
		return nil, s.readErr("context events", err)
	}
	if last == nil {
		return nil, nil // no such session
	}
	from := reset
	rows, err := tx.Query(ctx, qContextSummary, session, reset)
	if err != nil {
		return nil, s.readErr("context events", err)
	}
	sum, err := scanEvents(rows)
	if err != nil {
		return nil, s.readErr("context events", err)
	}
	if len(sum) > 0 {
		var d struct {
			Through int64 `json:"through"`
		}
		_ = json.Unmarshal(sum[0].Data, &d) // a summary without it folds nothing
		from = max(from, d.Through)
	}
	if *last <= from {
		return sum, nil
	}
	rows, err = tx.Query(ctx, qContextRange, session, from, *last)
	if err != nil {
		return nil, s.readErr("context events", err)
	}
	out, err := scanEvents(rows)
	if err != nil {
		return nil, s.readErr("context events", err)
	}
	if len(sum) > 0 {
		// In seq order, as the log has it.
		i := 0
		for i < len(out) && out[i].Seq < sum[0].Seq {
			i++
		}
		out = append(out[:i], append(sum, out[i:]...)...)
	}
	return out, nil
}

// Agents returns the recorded agents, by id.
func (s *Store) Agents(ctx context.Context) ([]store.AgentRecord, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, qAgents)
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
	since := int64(-1 << 63)
	if !t.IsZero() {
		since = t.UnixNano()
	}
	u := store.Usage{Agent: agent, Time: t}
	var in, out int64
	q, args := qUsageSince, []any{since}
	if agent != "" {
		q, args = qUsagePayer, []any{agent, since}
	}
	row := s.pool.QueryRow(ctx, q, args...)
	if err := row.Scan(&in, &out, &u.CostUSD); err != nil {
		return store.Usage{}, s.readErr("usage", err)
	}
	u.InputTokens, u.OutputTokens = int(in), int(out)
	return u, nil
}

// indexed reports whether events of kind k are in the history search.
func indexed(k event.Kind) bool {
	return k == event.Input || k == event.SystemMessage || k == event.Text
}

// Limits of what one event adds to the search index: PostgreSQL refuses a
// word longer than 2047 bytes and a tsvector larger than 1 MiB.
const (
	maxIndexedWord  = 1000
	maxIndexedBytes = 512 << 10
)

// tsvector returns the search index entry of an event payload: the folded
// words of its "text" field with their positions, as a tsvector literal,
// "" if it has none. The words are search.Words's, as a query's are, so
// the index and the query agree whatever the database's text search
// configuration and locale.
func tsvector(data []byte) string {
	text := search.EventText(data)
	if text == "" {
		return ""
	}
	var b strings.Builder
	pos := 0
	for _, w := range search.Words(text) {
		pos++
		if len(w) > maxIndexedWord {
			continue
		}
		if b.Len()+len(w) > maxIndexedBytes {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('\'')
		b.WriteString(search.Fold(w))
		b.WriteString("':")
		b.WriteString(strconv.Itoa(min(pos, 16383)))
	}
	return b.String()
}
