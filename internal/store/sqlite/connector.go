package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentd/internal/store"
)

var _ store.ConnectorStore = (*Store)(nil)

// schemaConnectors (schema v15) holds what chat connectors keep durable:
// the chats they talk in (agentd_conversations), the replies they deliver
// (agentd_outbox) and the strangers' pairings (agentd_pairings). Times are
// unix nanoseconds, 0 for none.
//
// An outbox row is one turn's reply to one chat: agentd_outbox_turn makes
// the row of a (connector, session, turn) once, whoever opens it first
// (the Ended hook, the sweep, a streamer). The partial indexes hold the
// rows each reader wants alone: the worker's due rows, the streaming rows
// a restart adopts, the failed rows no person has seen (a session
// listing's Undelivered). message_ids is a JSON array of strings.
//
// A pairing's code is unique among the pending ones only: a decided or
// expired row keeps its code, which may be drawn again.
const schemaConnectors = `
CREATE TABLE agentd_conversations (
	connector  TEXT NOT NULL,
	chat       TEXT NOT NULL,
	chat_json  TEXT NOT NULL,
	session_id INTEGER NOT NULL,
	instance   TEXT NOT NULL,
	seen_seq   INTEGER NOT NULL DEFAULT 0,
	last_in    TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (connector, chat)
);
CREATE INDEX agentd_conversations_session ON agentd_conversations (session_id);

CREATE TABLE agentd_outbox (
	id           INTEGER PRIMARY KEY,
	connector    TEXT NOT NULL,
	chat         TEXT NOT NULL,
	session_id   INTEGER NOT NULL,
	turn         INTEGER NOT NULL,
	kind         TEXT NOT NULL DEFAULT 'reply',
	state        TEXT NOT NULL,
	text         TEXT NOT NULL DEFAULT '',
	parts        INTEGER NOT NULL DEFAULT 0,
	message_ids  TEXT NOT NULL DEFAULT '[]',
	sending_part INTEGER NOT NULL DEFAULT -1,
	nonce        TEXT NOT NULL DEFAULT '',
	tries        INTEGER NOT NULL DEFAULT 0,
	next_at      INTEGER NOT NULL,
	error        TEXT NOT NULL DEFAULT '',
	in_doubt     INTEGER NOT NULL DEFAULT 0,
	acked        INTEGER NOT NULL DEFAULT 0,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	sent_at      INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX agentd_outbox_turn ON agentd_outbox (connector, session_id, turn) WHERE turn <> 0;
CREATE INDEX agentd_outbox_due ON agentd_outbox (connector, next_at) WHERE ` + sqlOutDue + `;
CREATE INDEX agentd_outbox_streaming ON agentd_outbox (connector) WHERE ` + sqlOutStreaming + `;
CREATE INDEX agentd_outbox_failed ON agentd_outbox (session_id) WHERE ` + sqlOutFailed + `;

CREATE TABLE agentd_pairings (
	connector  TEXT NOT NULL,
	user_id    TEXT NOT NULL,
	name       TEXT NOT NULL DEFAULT '',
	chat       TEXT NOT NULL DEFAULT '',
	code       TEXT NOT NULL,
	state      TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	decided_at INTEGER NOT NULL DEFAULT 0,
	decided_by TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (connector, user_id)
);
CREATE UNIQUE INDEX agentd_pairings_code ON agentd_pairings (code) WHERE ` + sqlPairPending + `;
CREATE INDEX agentd_pairings_pending ON agentd_pairings (connector, expires_at) WHERE ` + sqlPairPending + `;
`

// The conditions the partial indexes and the queries share.
const (
	sqlOutDue       = "state IN ('" + store.OutPending + "', '" + store.OutSending + "')"
	sqlOutStreaming = "state = '" + store.OutStreaming + "'"
	sqlOutFailed    = "state = '" + store.OutFailed + "' AND acked = 0"
	sqlPairPending  = "state = '" + store.PairPending + "'"
)

const (
	convCols = `connector, chat, chat_json, session_id, instance, seen_seq, last_in, created_at, updated_at`
	outCols  = `id, connector, chat, session_id, turn, kind, state, text, parts, message_ids, sending_part, nonce, tries, next_at,
	error, in_doubt, acked, created_at, updated_at, sent_at`
	pairCols = `connector, user_id, name, chat, code, state, created_at, expires_at, decided_at, decided_by`

	qConvIns = `INSERT INTO agentd_conversations (` + convCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	qConvGet = `SELECT ` + convCols + ` FROM agentd_conversations WHERE connector = ? AND chat = ?`
	// qConvSeen moves seen_seq forward only, and last_in when ?4 is set.
	qConvSeen = `UPDATE agentd_conversations SET seen_seq = max(seen_seq, ?3), last_in = iif(?4 = '', last_in, ?4), updated_at = ?5
		WHERE connector = ?1 AND chat = ?2`
	// The primary key's index.
	qConvs = `SELECT ` + convCols + ` FROM agentd_conversations WHERE connector = ? ORDER BY chat`

	// qOutIns does nothing on a conflict with agentd_outbox_turn.
	qOutIns = `INSERT INTO agentd_outbox (connector, chat, session_id, turn, kind, state, text, parts, message_ids, sending_part, nonce,
		tries, next_at, error, in_doubt, acked, created_at, updated_at, sent_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`
	qOutByTurn = `SELECT ` + outCols + ` FROM agentd_outbox WHERE connector = ? AND session_id = ? AND turn = ? AND turn <> 0`
	qOutGet    = `SELECT ` + outCols + ` FROM agentd_outbox WHERE id = ?`
	qOutMove   = `UPDATE agentd_outbox SET state = ?3, text = ?4, parts = ?5, message_ids = ?6, sending_part = ?7, nonce = ?8,
		tries = ?9, next_at = ?10, error = ?11, in_doubt = ?12, sent_at = ?13, updated_at = ?14
	WHERE id = ?1 AND state = ?2`
	// qOutAck: ?2 is 1 for a retry (back to pending, no tries, due now,
	// not acked: a second failure shows again), 0 to dismiss.
	qOutAck = `UPDATE agentd_outbox SET state = iif(?2, '` + store.OutPending + `', state), tries = iif(?2, 0, tries),
		next_at = iif(?2, ?3, next_at), error = iif(?2, '', error), acked = iif(?2, 0, 1), updated_at = ?3
	WHERE id = ?1 AND state = '` + store.OutFailed + `' RETURNING ` + outCols
	// agentd_outbox_due.
	qOutDue = `SELECT ` + outCols + ` FROM agentd_outbox WHERE connector = ? AND ` + sqlOutDue + ` AND next_at <= ?
		ORDER BY next_at, id LIMIT ?`
	// agentd_outbox_due and agentd_outbox_streaming, one each.
	qOutDepth = `SELECT count(*), coalesce(min(created_at), 0) FROM (
		SELECT created_at FROM agentd_outbox WHERE connector = ?1 AND ` + sqlOutDue + `
		UNION ALL
		SELECT created_at FROM agentd_outbox WHERE connector = ?1 AND ` + sqlOutStreaming + `)`

	// qPairExpire reads agentd_pairings_pending.
	qPairExpire = `UPDATE agentd_pairings SET state = '` + store.PairExpired + `'
		WHERE connector = ? AND ` + sqlPairPending + ` AND expires_at <= ?`
	qPairGet   = `SELECT ` + pairCols + ` FROM agentd_pairings WHERE connector = ? AND user_id = ?`
	qPairCount = `SELECT count(*) FROM agentd_pairings WHERE connector = ? AND ` + sqlPairPending
	// qPairPut makes a pairing, or makes an expired one pending again.
	qPairPut = `INSERT INTO agentd_pairings (` + pairCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, '')
		ON CONFLICT (connector, user_id) DO UPDATE SET name = excluded.name, chat = excluded.chat, code = excluded.code,
		state = excluded.state, created_at = excluded.created_at, expires_at = excluded.expires_at, decided_at = 0, decided_by = ''`
	// qPairDecide reads agentd_pairings_code.
	qPairDecide = `UPDATE agentd_pairings SET state = ?2, decided_at = ?3, decided_by = ?4
		WHERE code = ?1 AND ` + sqlPairPending + ` AND expires_at > ?3 RETURNING ` + pairCols
	qPairRevoke   = `DELETE FROM agentd_pairings WHERE connector = ? AND user_id = ?`
	qPairApproved = `SELECT state = '` + store.PairApproved + `' FROM agentd_pairings WHERE connector = ? AND user_id = ?`
	// qPairings shows a pending pairing past its time as expired (the
	// next Pair of its connector records it so). ?3 is now.
	qPairings = `SELECT connector, user_id, name, chat, code, state, created_at, expires_at, decided_at, decided_by FROM (
		SELECT connector, user_id, name, chat, code,
			iif(` + sqlPairPending + ` AND expires_at <= ?3, '` + store.PairExpired + `', state) AS state,
			created_at, expires_at, decided_at, decided_by
		FROM agentd_pairings WHERE ?1 = '' OR connector = ?1)
	WHERE ?2 = '' OR state = ?2 ORDER BY created_at DESC, connector, user_id LIMIT ?4`
)

// qConvsBehind reads the connector's conversations (the primary key's
// index) and each one's session by its primary key.
var qConvsBehind = `SELECT ` + prefixed("c.", convCols) + ` FROM agentd_conversations c JOIN sessions s ON s.id = c.session_id
	WHERE c.connector = ? AND s.last_seq > c.seen_seq ORDER BY c.chat LIMIT ?`

// connStmts are the writer's statements of connectors.
type connStmts struct {
	convIns, convGet, convSeen                 *sql.Stmt
	outIns, outByTurn, outGet, outMove, outAck *sql.Stmt
	pairExpire, pairGet, pairCount, pairPut    *sql.Stmt
	pairDecide, pairRevoke                     *sql.Stmt
}

func (c *connStmts) list() []struct {
	dst **sql.Stmt
	sql string
} {
	return []struct {
		dst **sql.Stmt
		sql string
	}{
		{&c.convIns, qConvIns}, {&c.convGet, qConvGet}, {&c.convSeen, qConvSeen},
		{&c.outIns, qOutIns}, {&c.outByTurn, qOutByTurn}, {&c.outGet, qOutGet}, {&c.outMove, qOutMove}, {&c.outAck, qOutAck},
		{&c.pairExpire, qPairExpire}, {&c.pairGet, qPairGet}, {&c.pairCount, qPairCount}, {&c.pairPut, qPairPut},
		{&c.pairDecide, qPairDecide}, {&c.pairRevoke, qPairRevoke},
	}
}

// PutConversation inserts a conversation unless its (connector, chat)
// has one, and returns the row as stored.
func (s *Store) PutConversation(ctx context.Context, c store.Conversation) (store.Conversation, error) {
	c, err := store.CheckConversation(c, time.Now())
	if err != nil {
		return store.Conversation{}, fmt.Errorf("sqlite: put conversation: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opConvPut)
	req.conv = c
	if err := s.send(ctx, req); err != nil {
		return store.Conversation{}, err
	}
	out, err := req.conv, req.err
	s.putRequest(req)
	return out, err
}

// SetSeen moves a conversation's SeenSeq forward, and its LastIn when
// lastIn is given; store.ErrNotFound if there is no such conversation.
func (s *Store) SetSeen(ctx context.Context, connector, chat string, seq int64, lastIn string) error {
	if err := store.CheckSeen(connector, chat, seq); err != nil {
		return fmt.Errorf("sqlite: set seen: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opConvSeen)
	req.conv = store.Conversation{Connector: connector, Chat: chat, SeenSeq: seq, LastIn: lastIn}
	if err := s.send(ctx, req); err != nil {
		return err
	}
	err := req.err
	s.putRequest(req)
	return err
}

// Conversations lists a connector's conversations by chat.
func (s *Store) Conversations(ctx context.Context, connector string) ([]store.Conversation, error) {
	if err := store.CheckExtensionKey("integration", connector); err != nil {
		return nil, fmt.Errorf("sqlite: conversations: %w: %v", ErrInvalid, err)
	}
	return connList(s, ctx, "conversations", s.r.convs, scanConversation, connector)
}

// ConversationsBehind lists up to limit (0: 100) conversations whose
// session's log has events past their SeenSeq.
func (s *Store) ConversationsBehind(ctx context.Context, connector string, limit int) ([]store.Conversation, error) {
	n, err := store.OutboxLimit(store.OutboxFilter{Limit: limit})
	if err == nil {
		err = store.CheckExtensionKey("integration", connector)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: conversations behind: %w: %v", ErrInvalid, err)
	}
	return connList(s, ctx, "conversations behind", s.r.convsBehind, scanConversation, connector, n)
}

// OpenOutbox inserts an outbox row unless its turn has one, and returns
// the row as stored and whether it was created.
func (s *Store) OpenOutbox(ctx context.Context, it store.OutboxItem) (store.OutboxItem, bool, error) {
	it, err := store.OutboxOpen(it, time.Now())
	if err != nil {
		return store.OutboxItem{}, false, fmt.Errorf("sqlite: open outbox: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opOutOpen)
	req.outbox = it
	if err := s.send(ctx, req); err != nil {
		return store.OutboxItem{}, false, err
	}
	out, created, err := req.outbox, req.created, req.err
	s.putRequest(req)
	return out, created, err
}

// MoveOutbox writes to into row id if its state is still from; false if
// it is not, store.ErrNotFound if there is no such row.
func (s *Store) MoveOutbox(ctx context.Context, id int64, from string, to store.OutboxItem) (bool, error) {
	err := store.CheckOutboxFrom(id, from)
	if err == nil {
		to, err = store.OutboxMove(to)
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: move outbox: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opOutMove)
	to.ID = id
	req.outbox, req.from = to, from
	if err := s.send(ctx, req); err != nil {
		return false, err
	}
	moved, err := req.created, req.err
	s.putRequest(req)
	return moved, err
}

// AckOutbox retries or dismisses a failed row (see store.ConnectorStore).
func (s *Store) AckOutbox(ctx context.Context, id int64, retry bool) (store.OutboxItem, error) {
	if id <= 0 {
		return store.OutboxItem{}, fmt.Errorf("sqlite: ack outbox: %w: id %d", ErrInvalid, id)
	}
	req := s.getRequest(ctx, opOutAck)
	req.outbox, req.retry = store.OutboxItem{ID: id}, retry
	if err := s.send(ctx, req); err != nil {
		return store.OutboxItem{}, err
	}
	out, err := req.outbox, req.err
	s.putRequest(req)
	return out, err
}

// DueOutbox returns up to limit (0: 100) pending or sending rows of
// connector due at now, in the order they fall due.
func (s *Store) DueOutbox(ctx context.Context, connector string, now time.Time, limit int) ([]store.OutboxItem, error) {
	n, err := store.OutboxLimit(store.OutboxFilter{Limit: limit})
	if err == nil {
		err = store.CheckExtensionKey("integration", connector)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: due outbox: %w: %v", ErrInvalid, err)
	}
	return connList(s, ctx, "due outbox", s.r.outDue, scanOutbox, connector, now.UnixNano(), n)
}

// Outbox lists the rows f selects, newest first. The query names only
// the conditions f sets.
func (s *Store) Outbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxItem, error) {
	n, err := store.OutboxLimit(f)
	if err != nil {
		return nil, fmt.Errorf("sqlite: outbox: %w: %v", ErrInvalid, err)
	}
	var where []string
	var args []any
	for _, c := range []struct {
		cond string
		set  bool
		v    any
	}{{"connector = ?", f.Connector != "", f.Connector}, {"session_id = ?", f.SessionID != 0, f.SessionID},
		{"state = ?", f.State != "", f.State}, {"id < ?", f.Before != 0, f.Before}} {
		if c.set {
			where = append(where, c.cond)
			args = append(args, c.v)
		}
	}
	q := `SELECT ` + outCols + ` FROM agentd_outbox`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.rdb.QueryContext(ctx, q, append(args, n)...)
	if err != nil {
		return nil, s.readErr("outbox", err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, func(r store.Rows) (store.OutboxItem, error) { return scanOutbox(r) })
	if err != nil {
		return nil, s.readErr("outbox", err)
	}
	return out, nil
}

// OutboxDepth counts a connector's rows not yet delivered nor given up,
// and the oldest one's creation time.
func (s *Store) OutboxDepth(ctx context.Context, connector string) (int, time.Time, error) {
	if err := store.CheckExtensionKey("integration", connector); err != nil {
		return 0, time.Time{}, fmt.Errorf("sqlite: outbox depth: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return 0, time.Time{}, store.ErrClosed
	}
	var n int
	var oldest int64
	if err := s.r.outDepth.QueryRowContext(ctx, connector).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, s.readErr("outbox depth", err)
	}
	return n, store.RunTime(oldest), nil
}

// Pair returns a user's pending code, or makes p (see
// store.ConnectorStore). The writer applies one write at a time, so the
// pending codes are counted and p made with no other write between.
func (s *Store) Pair(ctx context.Context, p store.Pairing, maxPending int, now time.Time) (store.Pairing, bool, error) {
	p, err := store.PairStart(p, maxPending, now)
	if err != nil {
		return store.Pairing{}, false, fmt.Errorf("sqlite: pair: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opPair)
	req.pairing, req.keep, req.at = p, maxPending, now
	if err := s.send(ctx, req); err != nil {
		return store.Pairing{}, false, err
	}
	out, created, err := req.pairing, req.created, req.err
	if err == nil {
		err = req.refused
	}
	s.putRequest(req)
	if err != nil {
		return store.Pairing{}, false, err
	}
	return out, created, nil
}

// DecidePairing approves or denies the pending, unexpired pairing of
// code; store.ErrNotFound if there is none.
func (s *Store) DecidePairing(ctx context.Context, code, state, by string, now time.Time, notice *store.OutboxItem) (store.Pairing, error) {
	if err := store.CheckDecision(code, state, by); err != nil {
		return store.Pairing{}, fmt.Errorf("sqlite: decide pairing: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opPairDecide)
	req.pairing, req.at = store.Pairing{Code: code, State: state, DecidedBy: by}, now
	if notice != nil {
		req.outbox, req.notice = *notice, true
	}
	if err := s.send(ctx, req); err != nil {
		return store.Pairing{}, err
	}
	out, err := req.pairing, req.err
	s.putRequest(req)
	return out, err
}

// RevokePairing removes a user's pairing; store.ErrNotFound if there is
// none.
func (s *Store) RevokePairing(ctx context.Context, connector, userID string) error {
	if err := checkPairUser(connector, userID); err != nil {
		return fmt.Errorf("sqlite: revoke pairing: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opPairRevoke)
	req.pairing = store.Pairing{Connector: connector, UserID: userID}
	if err := s.send(ctx, req); err != nil {
		return err
	}
	err := req.err
	s.putRequest(req)
	return err
}

// Approved reports whether a user's pairing on connector is approved.
func (s *Store) Approved(ctx context.Context, connector, userID string) (bool, error) {
	if err := checkPairUser(connector, userID); err != nil {
		return false, fmt.Errorf("sqlite: approved: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return false, store.ErrClosed
	}
	var ok bool
	err := s.r.pairApproved.QueryRowContext(ctx, connector, userID).Scan(&ok)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, s.readErr("approved", err)
	}
	return ok, nil
}

// Pairings lists pairings newest first, a pending one past its time as
// expired.
func (s *Store) Pairings(ctx context.Context, connector, state string) ([]store.Pairing, error) {
	if err := store.CheckPairingsFilter(connector, state); err != nil {
		return nil, fmt.Errorf("sqlite: pairings: %w: %v", ErrInvalid, err)
	}
	return connList(s, ctx, "pairings", s.r.pairings, scanPairing, connector, state, time.Now().UnixNano(),
		store.MaxConnectorList)
}

func checkPairUser(connector, userID string) error {
	if err := store.CheckExtensionKey("integration", connector); err != nil {
		return err
	}
	if userID == "" || len(userID) > store.MaxExtensionKey {
		return fmt.Errorf("user id %q: empty or longer than %d bytes", userID, store.MaxExtensionKey)
	}
	return nil
}

// connList returns the rows the read statement q with args reads, scanned
// by scan, never nil.
func connList[T any](s *Store, ctx context.Context, what string, q *stmt, scan func(scanner) (T, error), args ...any) ([]T, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := q.QueryContext(ctx, args...)
	if err != nil {
		return nil, s.readErr(what, err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, func(r store.Rows) (T, error) { return scan(r) })
	if err != nil {
		return nil, s.readErr(what, err)
	}
	return out, nil
}

func (w *writer) applyConvPut(r *request) error {
	c := &r.conv
	if _, err := w.conn.convIns.Exec(c.Connector, c.Chat, c.ChatJSON, c.SessionID, c.Instance, c.SeenSeq, c.LastIn,
		c.CreatedAt.UnixNano(), c.UpdatedAt.UnixNano()); err != nil {
		return fmt.Errorf("sqlite: put conversation %s/%s: %w", c.Connector, c.Chat, err)
	}
	got, err := scanConversation(w.conn.convGet.QueryRow(c.Connector, c.Chat))
	if err != nil {
		return fmt.Errorf("sqlite: put conversation %s/%s: %w", c.Connector, c.Chat, err)
	}
	*c = got
	return nil
}

func (w *writer) applyConvSeen(r *request, now int64) error {
	c := &r.conv
	res, err := w.conn.convSeen.Exec(c.Connector, c.Chat, c.SeenSeq, c.LastIn, now)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite: set seen of %s/%s: %w", c.Connector, c.Chat, err)
	}
	return nil
}

// insertOutbox inserts it and sets its ID; false: the turn has a row.
func (w *writer) insertOutbox(it *store.OutboxItem) (bool, error) {
	err := w.conn.outIns.QueryRow(it.Connector, it.Chat, it.SessionID, it.Turn, it.Kind, it.State, it.Text, it.Parts,
		store.MessageIDsJSON(it.MessageIDs), it.SendingPart, it.Nonce, it.Tries, it.NextAt.UnixNano(), it.Error, it.InDoubt,
		it.CreatedAt.UnixNano(), it.UpdatedAt.UnixNano(), store.RunNanos(it.SentAt)).Scan(&it.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func (w *writer) applyOutOpen(r *request) error {
	it := &r.outbox
	created, err := w.insertOutbox(it)
	if created {
		r.created = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: open outbox of %s session %d turn %d: %w", it.Connector, it.SessionID, it.Turn, err)
	}
	// The turn's row was opened before.
	got, err := scanOutbox(w.conn.outByTurn.QueryRow(it.Connector, it.SessionID, it.Turn))
	if err != nil {
		return fmt.Errorf("sqlite: open outbox of %s session %d turn %d: the row opened before: %w", it.Connector, it.SessionID, it.Turn, err)
	}
	*it, r.created = got, false
	return nil
}

func (w *writer) applyOutMove(r *request, now int64) error {
	to := &r.outbox
	res, err := w.conn.outMove.Exec(to.ID, r.from, to.State, to.Text, to.Parts, store.MessageIDsJSON(to.MessageIDs), to.SendingPart,
		to.Nonce, to.Tries, to.NextAt.UnixNano(), to.Error, to.InDoubt, store.RunNanos(to.SentAt), now)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil && n == 0 {
		if _, gerr := scanOutbox(w.conn.outGet.QueryRow(to.ID)); errors.Is(gerr, sql.ErrNoRows) {
			err = store.ErrNotFound
		} else {
			err = gerr
		}
	}
	if err != nil {
		return fmt.Errorf("sqlite: move outbox row %d: %w", to.ID, err)
	}
	r.created = n == 1
	return nil
}

func (w *writer) applyOutAck(r *request, now int64) error {
	id := r.outbox.ID
	got, err := scanOutbox(w.conn.outAck.QueryRow(id, r.retry, now))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite: ack outbox row %d (not a failed row?): %w", id, err)
	}
	r.outbox = got
	return nil
}

func (w *writer) applyPair(r *request) error {
	p := &r.pairing
	now := r.at.UnixNano()
	r.refused = nil
	if _, err := w.conn.pairExpire.Exec(p.Connector, now); err != nil {
		return fmt.Errorf("sqlite: pair %s/%s: expire: %w", p.Connector, p.UserID, err)
	}
	got, err := scanPairing(w.conn.pairGet.QueryRow(p.Connector, p.UserID))
	if err == nil && got.State != store.PairExpired {
		*p, r.created = got, false
		return nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: pair %s/%s: %w", p.Connector, p.UserID, err)
	}
	var pending int
	if err := w.conn.pairCount.QueryRow(p.Connector).Scan(&pending); err != nil {
		return fmt.Errorf("sqlite: pair %s/%s: count pending: %w", p.Connector, p.UserID, err)
	}
	// A refusal is the request's answer, not a failed write: the codes
	// expired are recorded.
	if pending >= r.keep {
		r.refused = fmt.Errorf("sqlite: pair %s/%s: %w (%d pending)", p.Connector, p.UserID, store.ErrPairingFull, pending)
		return nil
	}
	_, err = w.conn.pairPut.Exec(p.Connector, p.UserID, p.Name, p.Chat, p.Code, p.State, p.CreatedAt.UnixNano(), p.ExpiresAt.UnixNano())
	if isUnique(err) {
		return fmt.Errorf("sqlite: pair %s/%s: %w: code %s is pending for another user", p.Connector, p.UserID, store.ErrConflict, p.Code)
	}
	if err != nil {
		return fmt.Errorf("sqlite: pair %s/%s: %w", p.Connector, p.UserID, err)
	}
	r.created = true
	return nil
}

func (w *writer) applyPairDecide(r *request) error {
	p := &r.pairing
	got, err := scanPairing(w.conn.pairDecide.QueryRow(p.Code, p.State, r.at.UnixNano(), p.DecidedBy))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite: decide pairing %s: %w", p.Code, err)
	}
	*p = got
	if !r.notice {
		return nil
	}
	var session int64
	c, err := scanConversation(w.conn.convGet.QueryRow(got.Connector, got.Chat))
	switch {
	case err == nil:
		session = c.SessionID
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqlite: decide pairing %s: the chat's conversation: %w", p.Code, err)
	}
	n, ok, err := store.PairingNotice(got, &r.outbox, session, time.Now())
	if err != nil {
		return fmt.Errorf("sqlite: decide pairing %s: notice: %w: %v", p.Code, ErrInvalid, err)
	}
	if ok {
		// The request fails whole if the notice does: the decision is
		// rolled back with it (the writer's savepoint).
		r.outbox = n
		if _, err := w.insertOutbox(&r.outbox); err != nil {
			return fmt.Errorf("sqlite: decide pairing %s: notice: %w", p.Code, err)
		}
	}
	return nil
}

func (w *writer) applyPairRevoke(r *request) error {
	p := &r.pairing
	res, err := w.conn.pairRevoke.Exec(p.Connector, p.UserID)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite: revoke pairing %s/%s: %w", p.Connector, p.UserID, err)
	}
	return nil
}

func scanConversation(sc scanner) (store.Conversation, error) {
	var c store.Conversation
	var created, updated int64
	if err := sc.Scan(&c.Connector, &c.Chat, &c.ChatJSON, &c.SessionID, &c.Instance, &c.SeenSeq, &c.LastIn, &created, &updated); err != nil {
		return store.Conversation{}, err
	}
	c.CreatedAt, c.UpdatedAt = store.RunTime(created), store.RunTime(updated)
	return c, nil
}

func scanOutbox(sc scanner) (store.OutboxItem, error) {
	var it store.OutboxItem
	var ids string
	var next, created, updated, sent int64
	if err := sc.Scan(&it.ID, &it.Connector, &it.Chat, &it.SessionID, &it.Turn, &it.Kind, &it.State, &it.Text, &it.Parts, &ids,
		&it.SendingPart, &it.Nonce, &it.Tries, &next, &it.Error, &it.InDoubt, &it.Acked, &created, &updated, &sent); err != nil {
		return store.OutboxItem{}, err
	}
	var err error
	if it.MessageIDs, err = store.ParseMessageIDs(ids); err != nil {
		return store.OutboxItem{}, fmt.Errorf("outbox row %d: %w", it.ID, err)
	}
	it.NextAt, it.CreatedAt, it.UpdatedAt, it.SentAt = store.RunTime(next), store.RunTime(created), store.RunTime(updated), store.RunTime(sent)
	return it, nil
}

func scanPairing(sc scanner) (store.Pairing, error) {
	var p store.Pairing
	var created, expires, decided int64
	if err := sc.Scan(&p.Connector, &p.UserID, &p.Name, &p.Chat, &p.Code, &p.State, &created, &expires, &decided, &p.DecidedBy); err != nil {
		return store.Pairing{}, err
	}
	p.CreatedAt, p.ExpiresAt, p.DecidedAt = store.RunTime(created), store.RunTime(expires), store.RunTime(decided)
	return p, nil
}
