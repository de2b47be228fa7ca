package postgres

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
)

// Copying an identity server's characters and logs, and a node's queue
// of lifecycles for identity servers (see CopyFromSQLite). A copy run
// again keeps what PostgreSQL moved further: a character updated later
// there stands, a log row never changes, a queue row sent there stays
// sent.
const (
	qCharCopy = `INSERT INTO agentd_identity_characters (` + charCols + `) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (pubkey) DO UPDATE SET name = excluded.name, file = excluded.file, updated_at = excluded.updated_at
	WHERE agentd_identity_characters.updated_at < excluded.updated_at`
	qIDLogCopy = `INSERT INTO agentd_identity_logs (` + idLogCols + `) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`
	qIDOutCopy = `INSERT INTO agentd_identity_outbox (` + idOutCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (id) DO UPDATE SET tries = excluded.tries, error = excluded.error, sent_at = excluded.sent_at
	WHERE agentd_identity_outbox.sent_at = 0`
)

// copyIdentity copies the characters, the logs and the queue, each in
// chunks of copyChunk in the order of its key, each chunk in one
// transaction.
func (s *Store) copyIdentity(ctx context.Context, src *sql.DB) error {
	var pubkey string
	err := s.copyChunks(ctx, func(b *pgx.Batch) error {
		rows, err := src.QueryContext(ctx, `SELECT `+charCols+` FROM agentd_identity_characters WHERE pubkey > ? ORDER BY pubkey LIMIT ?`, pubkey, copyChunk)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, file string
			var created, updated int64
			if err := rows.Scan(&pubkey, &name, &file, &created, &updated); err != nil {
				return err
			}
			b.Queue(qCharCopy, pubkey, name, file, created, updated)
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	pubkey = ""
	var seq int64
	err = s.copyChunks(ctx, func(b *pgx.Batch) error {
		rows, err := src.QueryContext(ctx, `SELECT `+idLogCols+` FROM agentd_identity_logs WHERE (pubkey, seq) > (?, ?) ORDER BY pubkey, seq LIMIT ?`,
			pubkey, seq, copyChunk)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var msg, doc string
			var created int64
			if err := rows.Scan(&pubkey, &seq, &msg, &doc, &created); err != nil {
				return err
			}
			b.Queue(qIDLogCopy, pubkey, seq, msg, doc, created)
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	var id int64
	return s.copyChunks(ctx, func(b *pgx.Batch) error {
		rows, err := src.QueryContext(ctx, `SELECT `+idOutCols+` FROM agentd_identity_outbox WHERE id > ? ORDER BY id LIMIT ?`, id, copyChunk)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var server, pubkey, agent, doc, errText string
			var turn, tries, created, sent int64
			if err := rows.Scan(&id, &server, &pubkey, &agent, &turn, &doc, &tries, &errText, &created, &sent); err != nil {
				return err
			}
			b.Queue(qIDOutCopy, id, server, pubkey, agent, turn, doc, tries, errText, created, sent)
		}
		return rows.Err()
	})
}
