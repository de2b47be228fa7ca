package postgres

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
)

// Copying the chat connectors' conversations, outbox and pairings (see
// CopyFromSQLite).

// The writes of a row of the source. A copy run again after the
// deployment moved keeps what PostgreSQL moved further: a conversation's
// bookmark only goes forward, an outbox row written later in PostgreSQL
// than in the source stands, a pairing decided in PostgreSQL stays
// decided.
const (
	qConvCopy = `INSERT INTO agentd_conversations (` + convCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
	ON CONFLICT (connector, chat) DO UPDATE SET seen_seq = greatest(agentd_conversations.seen_seq, excluded.seen_seq),
		last_in = CASE WHEN excluded.updated_at > agentd_conversations.updated_at THEN excluded.last_in ELSE agentd_conversations.last_in END,
		updated_at = greatest(agentd_conversations.updated_at, excluded.updated_at)`
	qOutCopy = `INSERT INTO agentd_outbox (` + outCols + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
	ON CONFLICT (id) DO UPDATE SET state = excluded.state, text = excluded.text, parts = excluded.parts,
		message_ids = excluded.message_ids, sending_part = excluded.sending_part, nonce = excluded.nonce, tries = excluded.tries,
		next_at = excluded.next_at, error = excluded.error, in_doubt = excluded.in_doubt, acked = excluded.acked,
		updated_at = excluded.updated_at, sent_at = excluded.sent_at
	WHERE agentd_outbox.updated_at <= excluded.updated_at`
	qPairCopy = `INSERT INTO agentd_pairings (` + pairCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (connector, user_id) DO UPDATE SET name = excluded.name, chat = excluded.chat, code = excluded.code,
		state = excluded.state, created_at = excluded.created_at, expires_at = excluded.expires_at,
		decided_at = excluded.decided_at, decided_by = excluded.decided_by
	WHERE agentd_pairings.decided_at = 0 OR excluded.decided_at <> 0`
)

// copyConversations copies the conversations in chunks of copyChunk in
// the order of their key, each chunk in one transaction.
func (s *Store) copyConversations(ctx context.Context, src *sql.DB) error {
	var connector, chat string
	return s.copyChunks(ctx, func(b *pgx.Batch) error {
		rows, err := src.QueryContext(ctx, `SELECT `+convCols+` FROM agentd_conversations
			WHERE (connector, chat) > (?, ?) ORDER BY connector, chat LIMIT ?`, connector, chat, copyChunk)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var chatJSON, instance, lastIn string
			var session, seen, created, updated int64
			if err := rows.Scan(&connector, &chat, &chatJSON, &session, &instance, &seen, &lastIn, &created, &updated); err != nil {
				return err
			}
			b.Queue(qConvCopy, connector, chat, chatJSON, session, instance, seen, lastIn, created, updated)
		}
		return rows.Err()
	})
}

// copyOutbox copies the outbox rows, keeping their ids, in chunks of
// copyChunk in the order of their id, each chunk in one transaction.
func (s *Store) copyOutbox(ctx context.Context, src *sql.DB) error {
	var id int64
	return s.copyChunks(ctx, func(b *pgx.Batch) error {
		rows, err := src.QueryContext(ctx, `SELECT `+outCols+` FROM agentd_outbox WHERE id > ? ORDER BY id LIMIT ?`, id, copyChunk)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var connector, chat, kind, state, text, ids, nonce, errText string
			var session, turn, parts, sending, tries, next, created, updated, sent int64
			var inDoubt, acked bool
			if err := rows.Scan(&id, &connector, &chat, &session, &turn, &kind, &state, &text, &parts, &ids, &sending, &nonce, &tries,
				&next, &errText, &inDoubt, &acked, &created, &updated, &sent); err != nil {
				return err
			}
			b.Queue(qOutCopy, id, connector, chat, session, turn, kind, state, text, parts, ids, sending, nonce, tries, next, errText,
				inDoubt, acked, created, updated, sent)
		}
		return rows.Err()
	})
}

// copyPairings copies the pairings in chunks of copyChunk in the order
// of their key, each chunk in one transaction.
func (s *Store) copyPairings(ctx context.Context, src *sql.DB) error {
	var connector, user string
	return s.copyChunks(ctx, func(b *pgx.Batch) error {
		rows, err := src.QueryContext(ctx, `SELECT `+pairCols+` FROM agentd_pairings
			WHERE (connector, user_id) > (?, ?) ORDER BY connector, user_id LIMIT ?`, connector, user, copyChunk)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, chat, code, state, by string
			var created, expires, decided int64
			if err := rows.Scan(&connector, &user, &name, &chat, &code, &state, &created, &expires, &decided, &by); err != nil {
				return err
			}
			b.Queue(qPairCopy, connector, user, name, chat, code, state, created, expires, decided, by)
		}
		return rows.Err()
	})
}

// copyChunks writes the chunks read queues, each in one transaction,
// until one is empty; read carries its own cursor.
func (s *Store) copyChunks(ctx context.Context, read func(*pgx.Batch) error) error {
	for {
		b := &pgx.Batch{}
		if err := read(b); err != nil {
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

// qGrantCopy writes a grant of the source; grants never change, so one
// already there stands.
const qGrantCopy = `INSERT INTO agentd_grants (` + grantCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	ON CONFLICT (id) DO NOTHING`

// copyGrants copies the approvals' grants in chunks of copyChunk in the
// order of their id, each chunk in one transaction.
func (s *Store) copyGrants(ctx context.Context, src *sql.DB) error {
	var id string
	return s.copyChunks(ctx, func(b *pgx.Batch) error {
		rows, err := src.QueryContext(ctx, `SELECT `+grantCols+` FROM agentd_grants WHERE id > ? ORDER BY id LIMIT ?`, id, copyChunk)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var agent, session, tool, approval, by string
			var exact []byte
			var created int64
			if err := rows.Scan(&id, &agent, &session, &tool, &exact, &approval, &by, &created); err != nil {
				return err
			}
			b.Queue(qGrantCopy, id, agent, session, tool, exact, approval, by, created)
		}
		return rows.Err()
	})
}
