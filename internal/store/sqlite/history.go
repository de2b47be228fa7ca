package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/search"
)

var _ store.HistoryStore = (*Store)(nil)

// History search page sizes.
const (
	DefaultHistoryLimit = 20
	MaxHistoryLimit     = 100
)

// History search queries. The full-text matches are limited to the row id
// range of the agents' events (see schemaV5) and, the range may hold other
// agents between them, to the agents' numbers; with a time range they are
// filtered through events_hist (a covering index: no event row is read for a
// match that is dropped). They are ranked, ties by event id, and only the
// page's events are read whole. The event id bound is the cursor's
// snapshot: events indexed after the first page never enter later pages.
const (
	qHistoryHead = `WITH hits AS (
		SELECT events_fts.rowid & 1099511627775 AS id, events_fts.rank AS rank
		FROM events_fts`
	qHistoryTimeJoin = ` JOIN events h INDEXED BY events_hist ON h.id = events_fts.rowid & 1099511627775`
	qHistoryWhere    = `
		WHERE events_fts MATCH ?1 AND events_fts.rowid BETWEEN ?7 AND ?8
		AND events_fts.rowid & 1099511627775 <= ?2`
	qHistoryTime   = ` AND h.ts >= ?3 AND h.ts < ?4`
	qHistoryAgents = ` AND events_fts.rowid >> 40 IN (SELECT value FROM json_each(?9))`
	qHistoryTail   = `
		ORDER BY events_fts.rank, events_fts.rowid & 1099511627775 LIMIT ?5 OFFSET ?6)
	SELECT hits.rank, e.session_id, e.seq, e.turn, e.kind, e.ts, e.data, s.agent, s.key
	FROM hits JOIN events e ON e.id = hits.id JOIN sessions s ON s.id = e.session_id
	ORDER BY hits.rank, hits.id`

	// The agents' numbers in the index's row ids.
	qSearchAgents = `SELECT id FROM search_agents WHERE agent IN (SELECT value FROM json_each(?1)) ORDER BY id`

	// The newest indexed event: the snapshot a first page fixes.
	qIndexedMax = ftsDone

	// sessions: UNIQUE (agent, key) selects the agent's sessions, which
	// are sorted in memory (see qSessions). The per-thread figures use
	// UNIQUE (session_id, seq).
	qThreads = `SELECT ` + sessionCols + `,
		(SELECT count(*) FROM events WHERE session_id = sessions.id AND kind IN ('input', 'system_message', 'text')),
		(SELECT data FROM events WHERE session_id = sessions.id AND kind = 'input' ORDER BY seq LIMIT 1),
		(SELECT ts FROM events WHERE session_id = sessions.id ORDER BY seq DESC LIMIT 1)
		FROM sessions WHERE agent = ?1 AND (updated_at < ?2 OR (updated_at = ?2 AND id < ?3))
		ORDER BY updated_at DESC, id DESC LIMIT ?4`

	qWorkingSet = `INSERT INTO working_memory (session_id, key, value, updated_at, seq) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value,
		updated_at = excluded.updated_at, seq = excluded.seq`
	qWorkingDelete = `DELETE FROM working_memory WHERE session_id = ? AND key = ?`
	qWorking       = `SELECT key, value FROM working_memory WHERE session_id = ? ORDER BY key`
	qWorkingHas    = `SELECT 1 FROM working_memory WHERE session_id = ? AND key = ?`
)

// SearchHistory searches the text of the input, system_message and text
// events of the sessions of q.Agents (all agents if empty), in the time
// range [q.Since, q.Until), and returns a page of hits, best (BM25) first,
// ties by event id, with the cursor of the next page ("" if none).
//
// q.Query is plain text (see store.HistoryQuery): its words must all occur;
// it is never read as FTS5 syntax, so any text is a valid query, and text
// without a single word is ErrInvalid.
//
// Cursors page by offset inside a snapshot: the first page fixes the newest
// indexed event, and later pages see only events up to it, so events
// written meanwhile never shift, repeat or push out hits of later pages.
// A cursor also records which query it belongs to; used with another it is
// store.ErrBadCursor. (BM25 weighs words by corpus-wide statistics, which
// new events change a little; this does not reorder equal documents and
// scales all scores of a one-word query alike.)
func (s *Store) SearchHistory(ctx context.Context, q store.HistoryQuery) ([]store.HistoryHit, string, error) {
	if s.isDown.Load() {
		return nil, "", store.ErrClosed
	}
	match, terms := search.FTS5(q.Query)
	if match == "" {
		return nil, "", fmt.Errorf("sqlite: search history: %w: the query has no words", ErrInvalid)
	}
	limit := q.Limit
	switch {
	case limit < 0:
		return nil, "", fmt.Errorf("sqlite: search history: %w: negative limit %d", ErrInvalid, limit)
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
	sum := search.QuerySum(match, string(agents), since, until)

	var snap, offset int64
	if q.Cursor != "" {
		var err error
		if snap, offset, err = search.DecodeHistoryCursor(q.Cursor, sum); err != nil {
			return nil, "", fmt.Errorf("sqlite: search history: %w", err)
		}
	} else {
		// Index everything written so far, then fix the snapshot.
		r := s.getRequest(ctx, opIndex)
		if err := s.send(ctx, r); err != nil {
			return nil, "", err
		}
		s.putRequest(r)
		err := s.rdb.QueryRowContext(ctx, qIndexedMax).Scan(&snap)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, "", nil // nothing indexed
		}
		if err != nil {
			return nil, "", s.readErr("search history", err)
		}
	}

	lo, hi := int64(0), int64(math.MaxInt64)
	var nums []byte
	if agents != nil {
		ids, err := s.searchAgents(ctx, agents)
		if err != nil {
			return nil, "", err
		}
		if len(ids) == 0 {
			return nil, "", nil // none of the agents has a session
		}
		lo, _ = searchRange(ids[0], snap)
		_, hi = searchRange(ids[len(ids)-1], snap)
		if len(ids) > 1 {
			nums, _ = json.Marshal(ids) // numbers always encode
		}
	}
	stmt := qHistoryHead
	timed := since != math.MinInt64 || until != math.MaxInt64
	if timed {
		stmt += qHistoryTimeJoin
	}
	stmt += qHistoryWhere
	if timed {
		stmt += qHistoryTime
	}
	if nums != nil {
		stmt += qHistoryAgents
	}
	stmt += qHistoryTail
	rows, err := s.rdb.QueryContext(ctx, stmt, match, snap, since, until, limit+1, offset, lo, hi, string(nums))
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
		var rank float64
		var kind string
		var ts int64
		var data []byte
		if err := rows.Scan(&rank, &h.Event.Session, &h.Event.Seq, &h.Event.Turn, &kind, &ts, &data, &h.Agent, &h.Key); err != nil {
			return nil, "", s.readErr("search history", err)
		}
		h.Event.Kind, h.Event.Time, h.Event.Data = event.Kind(kind), unixTime(ts), data
		h.Score = -rank // FTS5's rank is the negated BM25 score
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

// searchAgents returns the index numbers of the agents in agents (a JSON
// array), in increasing order; agents without sessions have none.
func (s *Store) searchAgents(ctx context.Context, agents []byte) ([]int64, error) {
	rows, err := s.rdb.QueryContext(ctx, qSearchAgents, string(agents))
	if err != nil {
		return nil, s.readErr("search history", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, s.readErr("search history", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("search history", err)
	}
	return ids, nil
}

// Threads lists agent's sessions, most recently updated first (ties by
// id), with their message counts, titles (the first input, shortened) and
// last activity, and returns the cursor of the next page ("" if none).
// limit 0 means 20, at most 100.
//
// The cursor is the last listed session's (updated time, id): a later page
// lists the sessions updated before it, so sessions created meanwhile never
// appear twice; a session updated while the listing is paged moves to the
// front, where a new first page finds it.
func (s *Store) Threads(ctx context.Context, agent string, limit int, cursor string) ([]store.Thread, string, error) {
	if s.isDown.Load() {
		return nil, "", store.ErrClosed
	}
	switch {
	case agent == "":
		return nil, "", fmt.Errorf("sqlite: threads: %w: empty agent", ErrInvalid)
	case limit < 0:
		return nil, "", fmt.Errorf("sqlite: threads: %w: negative limit %d", ErrInvalid, limit)
	case limit == 0:
		limit = DefaultHistoryLimit
	case limit > MaxHistoryLimit:
		limit = MaxHistoryLimit
	}
	updated, id := int64(math.MaxInt64), int64(math.MaxInt64)
	if cursor != "" {
		u, i, err := search.DecodeThreadCursor(cursor)
		if err != nil {
			return nil, "", fmt.Errorf("sqlite: threads: %w", err)
		}
		updated, id = u, i
	}
	rows, err := s.rdb.QueryContext(ctx, qThreads, agent, updated, id, limit+1)
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
		var last sql.NullInt64
		if err := rows.Scan(&t.ID, &t.Agent, &t.Key, &t.State, &t.LastSeq, &created, &upd, &t.Session.Title, &t.Session.TitleBy, &t.Messages, &first, &last); err != nil {
			return nil, "", s.readErr("threads", err)
		}
		t.CreatedAt, t.UpdatedAt = unixTime(created), unixTime(upd)
		t.LastActivity = t.CreatedAt
		if last.Valid {
			t.LastActivity = unixTime(last.Int64)
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
// to the session's log, in one transaction. A session that does not exist
// is store.ErrNotFound.
func (s *Store) SetWorking(ctx context.Context, session int64, key string, value json.RawMessage) (event.Event, error) {
	if err := store.CheckWorkingKey(key); err != nil {
		return event.Event{}, fmt.Errorf("sqlite: set working memory: %w: %v", ErrInvalid, err)
	}
	v, err := store.WorkingValue(value)
	if err != nil {
		return event.Event{}, fmt.Errorf("sqlite: set working memory %q: %w: %v", key, ErrInvalid, err)
	}
	return s.commitWorking(ctx, session, event.WorkingMemoryData{Key: key, Value: v})
}

// DeleteWorking deletes key from session's working memory and appends a
// working_memory event recording it, in one transaction. A key that is not
// set is store.ErrNotFound, and nothing is written.
func (s *Store) DeleteWorking(ctx context.Context, session int64, key string) (event.Event, error) {
	if err := store.CheckWorkingKey(key); err != nil {
		return event.Event{}, fmt.Errorf("sqlite: delete working memory: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return event.Event{}, store.ErrClosed
	}
	var one int
	err := s.rdb.QueryRowContext(ctx, qWorkingHas, session, key).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return event.Event{}, fmt.Errorf("sqlite: delete working memory %q of session %d: %w", key, session, store.ErrNotFound)
	}
	if err != nil {
		return event.Event{}, s.readErr("delete working memory", err)
	}
	return s.commitWorking(ctx, session, event.WorkingMemoryData{Key: key, Deleted: true})
}

func (s *Store) commitWorking(ctx context.Context, session int64, d event.WorkingMemoryData) (event.Event, error) {
	if session <= 0 {
		return event.Event{}, fmt.Errorf("sqlite: working memory: %w: session id %d", ErrInvalid, session)
	}
	b := &store.Batch{Session: session, Events: []event.Event{event.New(session, 0, event.WorkingMemory, d)}}
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
	rows, err := s.rdb.QueryContext(ctx, qWorking, session)
	if err != nil {
		return nil, s.readErr("working memory", err)
	}
	defer rows.Close()
	out := make(map[string]json.RawMessage)
	for rows.Next() {
		var k, v string
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

// applyWorking brings the working_memory table in step with a committed
// working_memory event (in the commit's transaction).
func (w *writer) applyWorking(session int64, e *event.Event) error {
	d, err := store.CheckWorking(e.Data)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if d.Deleted {
		_, err := w.wmDelete.Exec(session, d.Key)
		return err
	}
	_, err = w.wmSet.Exec(session, d.Key, string(d.Value), e.Time.UnixNano(), e.Seq)
	return err
}
