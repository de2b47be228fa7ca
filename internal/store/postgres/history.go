package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/jackc/pgx/v5"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/search"
)

// History search page sizes.
const (
	DefaultHistoryLimit = 20
	MaxHistoryLimit     = 100
)

// History queries. A search matches events.search (GIN) against the
// query, limited to the snapshot's events, the time range and the agents,
// ranks the matches (ts_rank, normalised by the log of the text's length,
// so that, as with BM25, a word in a short text weighs more than in a long
// one), ties by event id, and reads only the page's events whole.
const (
	qHistory = `SELECT ts_rank(e.search, q.q, 1), e.session_id, e.seq, e.turn, e.kind, e.ts, e.data, s.agent, s.key
		FROM events e JOIN sessions s ON s.id = e.session_id, (SELECT $1::tsquery AS q) q
		WHERE e.search IS NOT NULL AND e.search @@ q.q AND e.id <= $2 AND e.ts >= $3 AND e.ts < $4
		AND (cardinality($5::text[]) = 0 OR s.agent = ANY($5))
		ORDER BY 1 DESC, e.id LIMIT $6 OFFSET $7`
	qEventsMax = `SELECT coalesce(max(id), 0) FROM events`
	qThreads   = `SELECT ` + sessionCols + `,
		(SELECT count(*) FROM events WHERE session_id = sessions.id AND kind IN ('input', 'system_message', 'text')),
		(SELECT data FROM events WHERE session_id = sessions.id AND kind = 'input' ORDER BY seq LIMIT 1),
		(SELECT ts FROM events WHERE session_id = sessions.id ORDER BY seq DESC LIMIT 1)
		FROM sessions WHERE agent = $1 AND (updated_at < $2 OR (updated_at = $2 AND id < $3))
		ORDER BY updated_at DESC, id DESC LIMIT $4`
	qWorking    = `SELECT key, value FROM working_memory WHERE session_id = $1 ORDER BY key`
	qWorkingHas = `SELECT true FROM working_memory WHERE session_id = $1 AND key = $2`
)

// tsquery returns the tsquery of a history query's terms: each term's
// words a phrase (<->), its last word a prefix (:*) when it ends in *, all
// terms required (&). Words are letters and digits only, so quoting them
// is enough: nothing a person types is read as tsquery syntax.
func tsquery(terms []search.Term) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteByte('(')
		for j, w := range t.Words {
			if j > 0 {
				b.WriteString(" <-> ")
			}
			b.WriteByte('\'')
			b.WriteString(w)
			b.WriteByte('\'')
			if t.Prefix && j == len(t.Words)-1 {
				b.WriteString(":*")
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// SearchHistory searches the text of the input, system_message and text
// events of the sessions of q.Agents (all agents if empty), in the time
// range [q.Since, q.Until), and returns a page of hits, best first, ties
// by event id, with the cursor of the next page ("" if none).
//
// Search is PostgreSQL's full-text search over a tsvector of each event's
// folded words (see tsvector): its GIN index finds the events holding all
// the words (prefixes, phrases) without scanning, and ts_rank ranks them.
// The words and folding are the SQLite store's, so a query matches the
// same events in both; the scores differ (ts_rank, not BM25) and compare
// within one search only.
//
// Cursors page by offset inside a snapshot, as in SQLite: the first page
// fixes the newest event id, later pages see only events up to it.
func (s *Store) SearchHistory(ctx context.Context, q store.HistoryQuery) ([]store.HistoryHit, string, error) {
	if s.isDown.Load() {
		return nil, "", store.ErrClosed
	}
	_, terms := search.FTS5(q.Query)
	if len(terms) == 0 {
		return nil, "", fmt.Errorf("postgres: search history: %w: the query has no words", ErrInvalid)
	}
	tsq := tsquery(terms)
	limit := q.Limit
	switch {
	case limit < 0:
		return nil, "", fmt.Errorf("postgres: search history: %w: negative limit %d", ErrInvalid, limit)
	case limit == 0:
		limit = DefaultHistoryLimit
	case limit > MaxHistoryLimit:
		limit = MaxHistoryLimit
	}
	since, until := int64(math.MinInt64), int64(math.MaxInt64)
	if !q.Since.IsZero() {
		since = q.Since.UnixNano()
	}
	if !q.Until.IsZero() {
		until = q.Until.UnixNano()
	}
	var agents []byte
	if len(q.Agents) > 0 {
		agents, _ = json.Marshal(q.Agents) // strings always encode
	}
	sum := search.QuerySum(tsq, string(agents), since, until)
	var snap, offset int64
	if q.Cursor != "" {
		var err error
		if snap, offset, err = search.DecodeHistoryCursor(q.Cursor, sum); err != nil {
			return nil, "", fmt.Errorf("postgres: search history: %w", err)
		}
	} else if err := s.pool.QueryRow(ctx, qEventsMax).Scan(&snap); err != nil {
		return nil, "", s.readErr("search history", err)
	}
	names := q.Agents
	if names == nil {
		names = []string{}
	}
	rows, err := s.pool.Query(ctx, qHistory, tsq, snap, since, until, names, limit+1, offset)
	if err != nil {
		return nil, "", s.readErr("search history", err)
	}
	defer rows.Close()
	hits := make([]store.HistoryHit, 0, limit)
	more := false
	for rows.Next() {
		if len(hits) == limit {
			more = true
			break
		}
		var h store.HistoryHit
		var rank float32
		var kind string
		var ts int64
		var data []byte
		if err := rows.Scan(&rank, &h.Event.Session, &h.Event.Seq, &h.Event.Turn, &kind, &ts, &data, &h.Agent, &h.Key); err != nil {
			return nil, "", s.readErr("search history", err)
		}
		h.Event.Kind, h.Event.Time, h.Event.Data = event.Kind(kind), unixTime(ts), data
		h.Score = float64(rank)
		h.Snippet = search.Snippet(search.EventText(data), terms)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.readErr("search history", err)
	}
	next := ""
	if more {
		next = search.EncodeHistoryCursor(snap, offset+int64(limit), sum)
	}
	return hits, next, nil
}

// Threads lists agent's sessions, most recently updated first (ties by
// id), with their message counts, titles (the first input, shortened) and
// last activity, and returns the cursor of the next page ("" if none).
// limit 0 means 20, at most 100. The cursor is the last listed session's
// (updated time, id), as in the SQLite store.
func (s *Store) Threads(ctx context.Context, agent string, limit int, cursor string) ([]store.Thread, string, error) {
	if s.isDown.Load() {
		return nil, "", store.ErrClosed
	}
	switch {
	case agent == "":
		return nil, "", fmt.Errorf("postgres: threads: %w: empty agent", ErrInvalid)
	case limit < 0:
		return nil, "", fmt.Errorf("postgres: threads: %w: negative limit %d", ErrInvalid, limit)
	case limit == 0:
		limit = DefaultHistoryLimit
	case limit > MaxHistoryLimit:
		limit = MaxHistoryLimit
	}
	updated, id := int64(math.MaxInt64), int64(math.MaxInt64)
	if cursor != "" {
		var err error
		if updated, id, err = search.DecodeThreadCursor(cursor); err != nil {
			return nil, "", fmt.Errorf("postgres: threads: %w", err)
		}
	}
	rows, err := s.pool.Query(ctx, qThreads, agent, updated, id, limit+1)
	if err != nil {
		return nil, "", s.readErr("threads", err)
	}
	defer rows.Close()
	out := make([]store.Thread, 0, limit)
	more := false
	for rows.Next() {
		if len(out) == limit {
			more = true
			break
		}
		var t store.Thread
		var created, upd int64
		var first []byte
		var last *int64
		if err := rows.Scan(&t.ID, &t.Agent, &t.Key, &t.State, &t.LastSeq, &created, &upd, &t.Session.Title, &t.Session.TitleBy,
			&t.Messages, &first, &last); err != nil {
			return nil, "", s.readErr("threads", err)
		}
		t.CreatedAt, t.UpdatedAt = unixTime(created), unixTime(upd)
		t.LastActivity = t.CreatedAt
		if last != nil {
			t.LastActivity = unixTime(*last)
		}
		t.Title = search.ThreadTitle(search.EventText(first))
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.readErr("threads", err)
	}
	next := ""
	if more {
		l := out[len(out)-1]
		next = search.EncodeThreadCursor(l.UpdatedAt.UnixNano(), l.ID)
	}
	return out, next, nil
}

// Working memory limits.
const (
	MaxWorkingKey   = store.MaxWorkingKey   // bytes
	MaxWorkingValue = store.MaxWorkingValue // bytes of JSON
)

// SetWorking sets key of session's working memory to value (JSON, at most
// MaxWorkingValue bytes) and appends a working_memory event recording it
// to the session's log, in one transaction, fenced by the epoch of ctx
// (store.WithEpoch). A session that does not exist is store.ErrNotFound.
func (s *Store) SetWorking(ctx context.Context, session int64, key string, value json.RawMessage) (event.Event, error) {
	if err := store.CheckWorkingKey(key); err != nil {
		return event.Event{}, fmt.Errorf("postgres: set working memory: %w: %v", ErrInvalid, err)
	}
	v, err := store.WorkingValue(value)
	if err != nil {
		return event.Event{}, fmt.Errorf("postgres: set working memory %q: %w: %v", key, ErrInvalid, err)
	}
	return s.commitWorking(ctx, session, event.WorkingMemoryData{Key: key, Value: v})
}

// DeleteWorking deletes key from session's working memory and appends a
// working_memory event recording it, in one transaction, fenced by the
// epoch of ctx (store.WithEpoch). A key that is not set is
// store.ErrNotFound, and nothing is written.
func (s *Store) DeleteWorking(ctx context.Context, session int64, key string) (event.Event, error) {
	if err := store.CheckWorkingKey(key); err != nil {
		return event.Event{}, fmt.Errorf("postgres: delete working memory: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return event.Event{}, store.ErrClosed
	}
	var has bool
	err := s.pool.QueryRow(ctx, qWorkingHas, session, key).Scan(&has)
	if errors.Is(err, pgx.ErrNoRows) {
		return event.Event{}, fmt.Errorf("postgres: delete working memory %q of session %d: %w", key, session, store.ErrNotFound)
	}
	if err != nil {
		return event.Event{}, s.readErr("delete working memory", err)
	}
	return s.commitWorking(ctx, session, event.WorkingMemoryData{Key: key, Deleted: true})
}

func (s *Store) commitWorking(ctx context.Context, session int64, d event.WorkingMemoryData) (event.Event, error) {
	if session <= 0 {
		return event.Event{}, fmt.Errorf("postgres: working memory: %w: session id %d", ErrInvalid, session)
	}
	b := &store.Batch{Session: session, Events: []event.Event{event.New(session, 0, event.WorkingMemory, d)},
		Epoch: store.EpochFrom(ctx, session)}
	if err := s.Commit(ctx, b); err != nil {
		return event.Event{}, err
	}
	return b.Events[0], nil
}

// Working returns session's working memory (empty, not nil, if nothing is
// set).
func (s *Store) Working(ctx context.Context, session int64) (map[string]json.RawMessage, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, qWorking, session)
	if err != nil {
		return nil, s.readErr("working memory", err)
	}
	defer rows.Close()
	out := make(map[string]json.RawMessage)
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, s.readErr("working memory", err)
		}
		out[k] = json.RawMessage(v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("working memory", err)
	}
	return out, nil
}
