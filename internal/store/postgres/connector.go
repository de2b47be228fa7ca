package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"agentd/internal/store"
)

var _ store.ConnectorStore = (*Store)(nil)

// schemaConnectors (schema v9) holds what chat connectors keep durable,
// as in SQLite: the same tables, indexes and times (unix nanoseconds, 0
// for none, so that a time reads back exactly as written). Keys are
// ordered byte by byte (COLLATE "C"), as SQLite orders them. Any node may
// open a turn's outbox row (agentd_outbox_turn makes it once); the node
// that leads the connector moves it. Pair counts and makes codes under an
// advisory lock of the connector, so that strangers on every node pass
// the pending limit one at a time.
const schemaConnectors = `
CREATE TABLE agentd_conversations (
	connector  text COLLATE "C" NOT NULL,
	chat       text COLLATE "C" NOT NULL,
	chat_json  text NOT NULL,
	session_id bigint NOT NULL,
	instance   text NOT NULL,
	seen_seq   bigint NOT NULL DEFAULT 0,
	last_in    text NOT NULL DEFAULT '',
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL,
	PRIMARY KEY (connector, chat)
);
CREATE INDEX agentd_conversations_session ON agentd_conversations (session_id);

CREATE TABLE agentd_outbox (
	id           bigserial PRIMARY KEY,
	connector    text COLLATE "C" NOT NULL,
	chat         text COLLATE "C" NOT NULL,
	session_id   bigint NOT NULL,
	turn         bigint NOT NULL,
	kind         text NOT NULL DEFAULT 'reply',
	state        text NOT NULL,
	text         text NOT NULL DEFAULT '',
	parts        bigint NOT NULL DEFAULT 0,
	message_ids  text NOT NULL DEFAULT '[]',
	sending_part bigint NOT NULL DEFAULT -1,
	nonce        text NOT NULL DEFAULT '',
	tries        bigint NOT NULL DEFAULT 0,
	next_at      bigint NOT NULL,
	error        text NOT NULL DEFAULT '',
	in_doubt     boolean NOT NULL DEFAULT false,
	acked        boolean NOT NULL DEFAULT false,
	created_at   bigint NOT NULL,
	updated_at   bigint NOT NULL,
	sent_at      bigint NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX agentd_outbox_turn ON agentd_outbox (connector, session_id, turn) WHERE turn <> 0;
CREATE INDEX agentd_outbox_due ON agentd_outbox (connector, next_at) WHERE ` + sqlOutDue + `;
CREATE INDEX agentd_outbox_streaming ON agentd_outbox (connector) WHERE ` + sqlOutStreaming + `;
CREATE INDEX agentd_outbox_failed ON agentd_outbox (session_id) WHERE ` + sqlOutFailed + `;

CREATE TABLE agentd_pairings (
	connector  text COLLATE "C" NOT NULL,
	user_id    text COLLATE "C" NOT NULL,
	name       text NOT NULL DEFAULT '',
	chat       text NOT NULL DEFAULT '',
	code       text NOT NULL,
	state      text NOT NULL,
	created_at bigint NOT NULL,
	expires_at bigint NOT NULL,
	decided_at bigint NOT NULL DEFAULT 0,
	decided_by text NOT NULL DEFAULT '',
	PRIMARY KEY (connector, user_id)
);
CREATE UNIQUE INDEX agentd_pairings_code ON agentd_pairings (code) WHERE ` + sqlPairPending + `;
CREATE INDEX agentd_pairings_pending ON agentd_pairings (connector, expires_at) WHERE ` + sqlPairPending + `;
`

// The conditions the partial indexes and the queries share.
const (
	sqlOutDue       = "state IN ('" + store.OutPending + "', '" + store.OutSending + "')"
	sqlOutStreaming = "state = '" + store.OutStreaming + "'"
	sqlOutFailed    = "state = '" + store.OutFailed + "' AND NOT acked"
	sqlPairPending  = "state = '" + store.PairPending + "'"
)

// pairLock is the first key of the advisory lock (the two-key form) under
// which a connector's pairings are counted and made: its second key is
// hashtext(connector).
const pairLock = 0x70616972 // "pair"

const (
	convCols = `connector, chat, chat_json, session_id, instance, seen_seq, last_in, created_at, updated_at`
	outCols  = `id, connector, chat, session_id, turn, kind, state, text, parts, message_ids, sending_part, nonce, tries, next_at,
	error, in_doubt, acked, created_at, updated_at, sent_at`
	pairCols = `connector, user_id, name, chat, code, state, created_at, expires_at, decided_at, decided_by`

	// qConvPut inserts unless the chat has a row (then qConvGet reads
	// it: an insert that met it waited for it to commit).
	qConvPut = `INSERT INTO agentd_conversations (` + convCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (connector, chat) DO NOTHING RETURNING ` + convCols
	qConvGet = `SELECT ` + convCols + ` FROM agentd_conversations WHERE connector = $1 AND chat = $2`
	// qConvSession is the session a chat talks to (a pairing's notice).
	qConvSession = `SELECT session_id FROM agentd_conversations WHERE connector = $1 AND chat = $2`
	qConvSeen    = `UPDATE agentd_conversations SET seen_seq = greatest(seen_seq, $3),
		last_in = CASE WHEN $4 = '' THEN last_in ELSE $4 END, updated_at = $5
		WHERE connector = $1 AND chat = $2 RETURNING 1`
	qConvs = `SELECT ` + convCols + ` FROM agentd_conversations WHERE connector = $1 ORDER BY chat`

	// qOutIns does nothing on a conflict with agentd_outbox_turn.
	qOutIns = `INSERT INTO agentd_outbox (connector, chat, session_id, turn, kind, state, text, parts, message_ids, sending_part, nonce,
		tries, next_at, error, in_doubt, acked, created_at, updated_at, sent_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, false, $16, $17, $18)
		ON CONFLICT (connector, session_id, turn) WHERE turn <> 0 DO NOTHING RETURNING id`
	qOutByTurn = `SELECT ` + outCols + ` FROM agentd_outbox WHERE connector = $1 AND session_id = $2 AND turn = $3 AND turn <> 0`
	qOutExists = `SELECT 1 FROM agentd_outbox WHERE id = $1`
	// qOutMove: the row's lock orders racing moves; the second sees the
	// first's state and does not match.
	qOutMove = `UPDATE agentd_outbox SET state = $3, text = $4, parts = $5, message_ids = $6, sending_part = $7, nonce = $8,
		tries = $9, next_at = $10, error = $11, in_doubt = $12, sent_at = $13, updated_at = $14
	WHERE id = $1 AND state = $2 RETURNING 1`
	// qOutAck: $2 true for a retry (back to pending, no tries, due now,
	// not acked: a second failure shows again), false to dismiss.
	qOutAck = `UPDATE agentd_outbox SET state = CASE WHEN $2 THEN '` + store.OutPending + `' ELSE state END,
		tries = CASE WHEN $2 THEN 0 ELSE tries END, next_at = CASE WHEN $2 THEN $3 ELSE next_at END,
		error = CASE WHEN $2 THEN '' ELSE error END, acked = NOT $2, updated_at = $3
	WHERE id = $1 AND state = '` + store.OutFailed + `' RETURNING ` + outCols
	qOutDue = `SELECT ` + outCols + ` FROM agentd_outbox WHERE connector = $1 AND ` + sqlOutDue + ` AND next_at <= $2
		ORDER BY next_at, id LIMIT $3`
	qOutDepth = `SELECT count(*), coalesce(min(created_at), 0) FROM agentd_outbox
		WHERE connector = $1 AND (` + sqlOutDue + ` OR ` + sqlOutStreaming + `)`

	qPairLock   = `SELECT pg_advisory_xact_lock($1::int4, hashtext($2))`
	qPairExpire = `UPDATE agentd_pairings SET state = '` + store.PairExpired + `'
		WHERE connector = $1 AND ` + sqlPairPending + ` AND expires_at <= $2`
	qPairGet   = `SELECT ` + pairCols + ` FROM agentd_pairings WHERE connector = $1 AND user_id = $2`
	qPairCount = `SELECT count(*) FROM agentd_pairings WHERE connector = $1 AND ` + sqlPairPending
	qPairPut   = `INSERT INTO agentd_pairings (` + pairCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, '')
		ON CONFLICT (connector, user_id) DO UPDATE SET name = excluded.name, chat = excluded.chat, code = excluded.code,
		state = excluded.state, created_at = excluded.created_at, expires_at = excluded.expires_at, decided_at = 0, decided_by = ''`
	// qPairDecide: the row's lock orders racing decisions.
	qPairDecide = `UPDATE agentd_pairings SET state = $2, decided_at = $3, decided_by = $4
		WHERE code = $1 AND ` + sqlPairPending + ` AND expires_at > $3 RETURNING ` + pairCols
	qPairRevoke   = `DELETE FROM agentd_pairings WHERE connector = $1 AND user_id = $2 RETURNING 1`
	qPairApproved = `SELECT state = '` + store.PairApproved + `' FROM agentd_pairings WHERE connector = $1 AND user_id = $2`
	// qPairings shows a pending pairing past its time as expired. $3 is
	// now.
	qPairings = `SELECT ` + pairCols + ` FROM (
		SELECT connector, user_id, name, chat, code,
			CASE WHEN ` + sqlPairPending + ` AND expires_at <= $3 THEN '` + store.PairExpired + `' ELSE state END AS state,
			created_at, expires_at, decided_at, decided_by
		FROM agentd_pairings WHERE $1 = '' OR connector = $1) p
	WHERE $2 = '' OR state = $2 ORDER BY created_at DESC, connector, user_id LIMIT $4`
)

// qConvsBehind reads the connector's conversations and each one's
// session by its primary key.
var qConvsBehind = `SELECT ` + prefixed("c.", convCols) + ` FROM agentd_conversations c JOIN sessions s ON s.id = c.session_id
	WHERE c.connector = $1 AND s.last_seq > c.seen_seq ORDER BY c.chat LIMIT $2`

// PutConversation inserts a conversation unless its (connector, chat)
// has one, and returns the row as stored.
func (s *Store) PutConversation(ctx context.Context, c store.Conversation) (store.Conversation, error) {
	c, err := store.CheckConversation(c, time.Now())
	if err != nil {
		return store.Conversation{}, fmt.Errorf("postgres: put conversation: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.Conversation{}, store.ErrClosed
	}
	what := "put conversation " + c.Connector + "/" + c.Chat
	got, err := scanConversation(s.pool.QueryRow(ctx, qConvPut, c.Connector, c.Chat, c.ChatJSON, c.SessionID, c.Instance, c.SeenSeq,
		c.LastIn, c.CreatedAt.UnixNano(), c.UpdatedAt.UnixNano()))
	if errors.Is(err, pgx.ErrNoRows) {
		got, err = scanConversation(s.pool.QueryRow(ctx, qConvGet, c.Connector, c.Chat))
	}
	if err != nil {
		return store.Conversation{}, s.readErr(what, err)
	}
	return got, nil
}

// SetSeen moves a conversation's SeenSeq forward, and its LastIn when
// lastIn is given; store.ErrNotFound if there is no such conversation.
func (s *Store) SetSeen(ctx context.Context, connector, chat string, seq int64, lastIn string) error {
	if err := store.CheckSeen(connector, chat, seq); err != nil {
		return fmt.Errorf("postgres: set seen: %w: %v", ErrInvalid, err)
	}
	return s.changeOne(ctx, "set seen of "+connector+"/"+chat, qConvSeen, connector, chat, seq, lastIn, time.Now().UnixNano())
}

// changeOne runs a statement that returns a row when it changes one;
// store.ErrNotFound when it changes none.
func (s *Store) changeOne(ctx context.Context, what, q string, args ...any) error {
	if s.isDown.Load() {
		return store.ErrClosed
	}
	var one int
	err := s.pool.QueryRow(ctx, q, args...).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return s.readErr(what, err)
	}
	return nil
}

// Conversations lists a connector's conversations by chat.
func (s *Store) Conversations(ctx context.Context, connector string) ([]store.Conversation, error) {
	if err := store.CheckExtensionKey("integration", connector); err != nil {
		return nil, fmt.Errorf("postgres: conversations: %w: %v", ErrInvalid, err)
	}
	return connList(s, ctx, "conversations", scanConversation, qConvs, connector)
}

// ConversationsBehind lists up to limit (0: 100) conversations whose
// session's log has events past their SeenSeq.
func (s *Store) ConversationsBehind(ctx context.Context, connector string, limit int) ([]store.Conversation, error) {
	n, err := store.OutboxLimit(store.OutboxFilter{Limit: limit})
	if err == nil {
		err = store.CheckExtensionKey("integration", connector)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: conversations behind: %w: %v", ErrInvalid, err)
	}
	return connList(s, ctx, "conversations behind", scanConversation, qConvsBehind, connector, n)
}

// OpenOutbox inserts an outbox row unless its turn has one, and returns
// the row as stored and whether it was created. Of racing inserts of one
// turn (any nodes), PostgreSQL lets one in; the others wait for it to
// commit, insert nothing, and read it in a statement of their own.
func (s *Store) OpenOutbox(ctx context.Context, it store.OutboxItem) (store.OutboxItem, bool, error) {
	it, err := store.OutboxOpen(it, time.Now())
	if err != nil {
		return store.OutboxItem{}, false, fmt.Errorf("postgres: open outbox: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.OutboxItem{}, false, store.ErrClosed
	}
	what := fmt.Sprintf("open outbox of %s session %d turn %d", it.Connector, it.SessionID, it.Turn)
	err = s.pool.QueryRow(ctx, qOutIns, it.Connector, it.Chat, it.SessionID, it.Turn, it.Kind, it.State, it.Text, it.Parts,
		store.MessageIDsJSON(it.MessageIDs), it.SendingPart, it.Nonce, it.Tries, it.NextAt.UnixNano(), it.Error, it.InDoubt,
		it.CreatedAt.UnixNano(), it.UpdatedAt.UnixNano(), store.RunNanos(it.SentAt)).Scan(&it.ID)
	if err == nil {
		return it, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.OutboxItem{}, false, s.readErr(what, err)
	}
	got, err := scanOutbox(s.pool.QueryRow(ctx, qOutByTurn, it.Connector, it.SessionID, it.Turn))
	if err != nil {
		return store.OutboxItem{}, false, s.readErr(what+": the row opened before", err)
	}
	return got, false, nil
}

// MoveOutbox writes to into row id if its state is still from; false if
// it is not, store.ErrNotFound if there is no such row.
func (s *Store) MoveOutbox(ctx context.Context, id int64, from string, to store.OutboxItem) (bool, error) {
	err := store.CheckOutboxFrom(id, from)
	if err == nil {
		to, err = store.OutboxMove(to)
	}
	if err != nil {
		return false, fmt.Errorf("postgres: move outbox: %w: %v", ErrInvalid, err)
	}
	what := "move outbox row " + strconv.FormatInt(id, 10)
	err = s.changeOne(ctx, what, qOutMove, id, from, to.State, to.Text, to.Parts, store.MessageIDsJSON(to.MessageIDs), to.SendingPart,
		to.Nonce, to.Tries, to.NextAt.UnixNano(), to.Error, to.InDoubt, store.RunNanos(to.SentAt), time.Now().UnixNano())
	if !errors.Is(err, store.ErrNotFound) {
		return err == nil, err
	}
	// Not moved: another state, or no row.
	return false, s.changeOne(ctx, what, qOutExists, id)
}

// AckOutbox retries or dismisses a failed row (see store.ConnectorStore).
func (s *Store) AckOutbox(ctx context.Context, id int64, retry bool) (store.OutboxItem, error) {
	if id <= 0 {
		return store.OutboxItem{}, fmt.Errorf("postgres: ack outbox: %w: id %d", ErrInvalid, id)
	}
	if s.isDown.Load() {
		return store.OutboxItem{}, store.ErrClosed
	}
	what := "ack outbox row " + strconv.FormatInt(id, 10)
	got, err := scanOutbox(s.pool.QueryRow(ctx, qOutAck, id, retry, time.Now().UnixNano()))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.OutboxItem{}, fmt.Errorf("postgres: %s (not a failed row?): %w", what, store.ErrNotFound)
	}
	if err != nil {
		return store.OutboxItem{}, s.readErr(what, err)
	}
	return got, nil
}

// DueOutbox returns up to limit (0: 100) pending or sending rows of
// connector due at now, in the order they fall due.
func (s *Store) DueOutbox(ctx context.Context, connector string, now time.Time, limit int) ([]store.OutboxItem, error) {
	n, err := store.OutboxLimit(store.OutboxFilter{Limit: limit})
	if err == nil {
		err = store.CheckExtensionKey("integration", connector)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: due outbox: %w: %v", ErrInvalid, err)
	}
	return connList(s, ctx, "due outbox", scanOutbox, qOutDue, connector, now.UnixNano(), n)
}

// Outbox lists the rows f selects, newest first. The query names only
// the conditions f sets.
func (s *Store) Outbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxItem, error) {
	n, err := store.OutboxLimit(f)
	if err != nil {
		return nil, fmt.Errorf("postgres: outbox: %w: %v", ErrInvalid, err)
	}
	var where []string
	var args []any
	for _, c := range []struct {
		col string
		set bool
		v   any
	}{{"connector =", f.Connector != "", f.Connector}, {"session_id =", f.SessionID != 0, f.SessionID},
		{"state =", f.State != "", f.State}, {"id <", f.Before != 0, f.Before}} {
		if c.set {
			args = append(args, c.v)
			where = append(where, c.col+" $"+strconv.Itoa(len(args)))
		}
	}
	q := `SELECT ` + outCols + ` FROM agentd_outbox`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, n)
	q += " ORDER BY id DESC LIMIT $" + strconv.Itoa(len(args))
	return connList(s, ctx, "outbox", scanOutbox, q, args...)
}

// OutboxDepth counts a connector's rows not yet delivered nor given up,
// and the oldest one's creation time.
func (s *Store) OutboxDepth(ctx context.Context, connector string) (int, time.Time, error) {
	if err := store.CheckExtensionKey("integration", connector); err != nil {
		return 0, time.Time{}, fmt.Errorf("postgres: outbox depth: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return 0, time.Time{}, store.ErrClosed
	}
	var n, oldest int64
	if err := s.pool.QueryRow(ctx, qOutDepth, connector).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, s.readErr("outbox depth", err)
	}
	return int(n), store.RunTime(oldest), nil
}

// Pair returns a user's pending code, or makes p (see
// store.ConnectorStore). It counts and makes codes in one transaction
// under the connector's advisory lock, so that strangers on any node pass
// the pending limit one at a time.
func (s *Store) Pair(ctx context.Context, p store.Pairing, maxPending int, now time.Time) (store.Pairing, bool, error) {
	p, err := store.PairStart(p, maxPending, now)
	if err != nil {
		return store.Pairing{}, false, fmt.Errorf("postgres: pair: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.Pairing{}, false, store.ErrClosed
	}
	what := "pair " + p.Connector + "/" + p.UserID
	var created bool
	var refused error
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qPairLock, int32(pairLock), p.Connector); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, qPairExpire, p.Connector, now.UnixNano()); err != nil {
			return err
		}
		got, err := scanPairing(tx.QueryRow(ctx, qPairGet, p.Connector, p.UserID))
		if err == nil && got.State != store.PairExpired {
			p = got
			return nil
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var pending int64
		if err := tx.QueryRow(ctx, qPairCount, p.Connector).Scan(&pending); err != nil {
			return err
		}
		// A refusal commits the codes expired.
		if pending >= int64(maxPending) {
			refused = fmt.Errorf("%w (%d pending)", store.ErrPairingFull, pending)
			return nil
		}
		_, err = tx.Exec(ctx, qPairPut, p.Connector, p.UserID, p.Name, p.Chat, p.Code, p.State, p.CreatedAt.UnixNano(), p.ExpiresAt.UnixNano())
		created = err == nil
		return err
	})
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "23505":
		return store.Pairing{}, false, fmt.Errorf("postgres: %s: %w: code %s is pending for another user", what, store.ErrConflict, p.Code)
	case err != nil:
		return store.Pairing{}, false, s.readErr(what, err)
	case refused != nil:
		return store.Pairing{}, false, fmt.Errorf("postgres: %s: %w", what, refused)
	}
	return p, created, nil
}

// DecidePairing approves or denies the pending, unexpired pairing of
// code; store.ErrNotFound if there is none.
func (s *Store) DecidePairing(ctx context.Context, code, state, by string, now time.Time, notice *store.OutboxItem) (store.Pairing, error) {
	if err := store.CheckDecision(code, state, by); err != nil {
		return store.Pairing{}, fmt.Errorf("postgres: decide pairing: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.Pairing{}, store.ErrClosed
	}
	what := "decide pairing " + code
	if !validText(code) || !validText(by) {
		return store.Pairing{}, fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound) // no code PostgreSQL keeps
	}
	var got store.Pairing
	var bad error // a notice refused: nothing written
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if got, err = scanPairing(tx.QueryRow(ctx, qPairDecide, code, state, now.UnixNano(), by)); err != nil {
			return err
		}
		var session int64
		if err := tx.QueryRow(ctx, qConvSession, got.Connector, got.Chat).Scan(&session); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		n, ok, err := store.PairingNotice(got, notice, session, time.Now())
		if err != nil || !ok {
			bad = err
			return err
		}
		return tx.QueryRow(ctx, qOutIns, n.Connector, n.Chat, n.SessionID, n.Turn, n.Kind, n.State, n.Text, n.Parts,
			store.MessageIDsJSON(n.MessageIDs), n.SendingPart, n.Nonce, n.Tries, n.NextAt.UnixNano(), n.Error, n.InDoubt,
			n.CreatedAt.UnixNano(), n.UpdatedAt.UnixNano(), store.RunNanos(n.SentAt)).Scan(&n.ID)
	})
	switch {
	case bad != nil:
		return store.Pairing{}, fmt.Errorf("postgres: %s: notice: %w: %v", what, ErrInvalid, bad)
	case errors.Is(err, pgx.ErrNoRows):
		return store.Pairing{}, fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound)
	case err != nil:
		return store.Pairing{}, s.readErr(what, err)
	}
	return got, nil
}

// RevokePairing removes a user's pairing; store.ErrNotFound if there is
// none.
func (s *Store) RevokePairing(ctx context.Context, connector, userID string) error {
	if err := checkPairUser(connector, userID); err != nil {
		return fmt.Errorf("postgres: revoke pairing: %w: %v", ErrInvalid, err)
	}
	return s.changeOne(ctx, "revoke pairing "+connector+"/"+userID, qPairRevoke, connector, userID)
}

// Approved reports whether a user's pairing on connector is approved.
func (s *Store) Approved(ctx context.Context, connector, userID string) (bool, error) {
	if err := checkPairUser(connector, userID); err != nil {
		return false, fmt.Errorf("postgres: approved: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return false, store.ErrClosed
	}
	var ok bool
	err := s.pool.QueryRow(ctx, qPairApproved, connector, userID).Scan(&ok)
	if errors.Is(err, pgx.ErrNoRows) {
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
		return nil, fmt.Errorf("postgres: pairings: %w: %v", ErrInvalid, err)
	}
	return connList(s, ctx, "pairings", scanPairing, qPairings, connector, state, time.Now().UnixNano(), store.MaxConnectorList)
}

func checkPairUser(connector, userID string) error {
	if err := store.CheckExtensionKey("integration", connector); err != nil {
		return err
	}
	if userID == "" || len(userID) > store.MaxExtensionKey || !validText(userID) {
		return fmt.Errorf("user id %q: empty, longer than %d bytes or not text", userID, store.MaxExtensionKey)
	}
	return nil
}

// connList returns the rows q with args reads, scanned by scan, never
// nil.
func connList[T any](s *Store, ctx context.Context, what string, scan func(pgx.Row) (T, error), q string, args ...any) ([]T, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, q, args...)
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

func scanConversation(row pgx.Row) (store.Conversation, error) {
	var c store.Conversation
	var created, updated int64
	if err := row.Scan(&c.Connector, &c.Chat, &c.ChatJSON, &c.SessionID, &c.Instance, &c.SeenSeq, &c.LastIn, &created, &updated); err != nil {
		return store.Conversation{}, err
	}
	c.CreatedAt, c.UpdatedAt = store.RunTime(created), store.RunTime(updated)
	return c, nil
}

func scanOutbox(row pgx.Row) (store.OutboxItem, error) {
	var it store.OutboxItem
	var ids string
	var parts, sending, tries, next, created, updated, sent int64
	if err := row.Scan(&it.ID, &it.Connector, &it.Chat, &it.SessionID, &it.Turn, &it.Kind, &it.State, &it.Text, &parts, &ids,
		&sending, &it.Nonce, &tries, &next, &it.Error, &it.InDoubt, &it.Acked, &created, &updated, &sent); err != nil {
		return store.OutboxItem{}, err
	}
	var err error
	if it.MessageIDs, err = store.ParseMessageIDs(ids); err != nil {
		return store.OutboxItem{}, fmt.Errorf("outbox row %d: %w", it.ID, err)
	}
	it.Parts, it.SendingPart, it.Tries = int(parts), int(sending), int(tries)
	it.NextAt, it.CreatedAt, it.UpdatedAt, it.SentAt = store.RunTime(next), store.RunTime(created), store.RunTime(updated), store.RunTime(sent)
	return it, nil
}

func scanPairing(row pgx.Row) (store.Pairing, error) {
	var p store.Pairing
	var created, expires, decided int64
	if err := row.Scan(&p.Connector, &p.UserID, &p.Name, &p.Chat, &p.Code, &p.State, &created, &expires, &decided, &p.DecidedBy); err != nil {
		return store.Pairing{}, err
	}
	p.CreatedAt, p.ExpiresAt, p.DecidedAt = store.RunTime(created), store.RunTime(expires), store.RunTime(decided)
	return p, nil
}
