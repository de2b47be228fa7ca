package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

var (
	_ store.IdentityStore  = (*Store)(nil)
	_ store.IdentityOutbox = (*Store)(nil)
)

// schemaIdentity holds an identity server's characters and logs, and a
// node's queue of lifecycles for identity servers, as in SQLite. Several
// nodes may append to one agent's log at once: AppendIdentityLog takes a
// transaction-scoped advisory lock on the pubkey, so seq stays gapless
// and (pubkey, message_id) unique. Times are unix nanoseconds.
const schemaIdentity = `
CREATE TABLE agentd_identity_characters (
	pubkey     text COLLATE "C" PRIMARY KEY,
	name       text COLLATE "C" NOT NULL,
	file       text NOT NULL,
	created_at bigint NOT NULL,
	updated_at bigint NOT NULL
);
CREATE INDEX agentd_identity_characters_name ON agentd_identity_characters (name, updated_at);
CREATE TABLE agentd_identity_logs (
	pubkey     text COLLATE "C" NOT NULL,
	seq        bigint NOT NULL,
	message_id text COLLATE "C" NOT NULL,
	lifecycle  text NOT NULL,
	created_at bigint NOT NULL,
	PRIMARY KEY (pubkey, seq),
	UNIQUE (pubkey, message_id)
);
CREATE TABLE agentd_identity_outbox (
	id         bigserial PRIMARY KEY,
	server     text COLLATE "C" NOT NULL,
	pubkey     text COLLATE "C" NOT NULL,
	agent      text COLLATE "C" NOT NULL,
	turn       bigint NOT NULL,
	lifecycle  text NOT NULL,
	tries      integer NOT NULL DEFAULT 0,
	error      text NOT NULL DEFAULT '',
	created_at bigint NOT NULL,
	sent_at    bigint NOT NULL DEFAULT 0,
	UNIQUE (server, agent, turn)
);
CREATE INDEX agentd_identity_outbox_due ON agentd_identity_outbox (server, pubkey, id) WHERE sent_at = 0;
`

const (
	charCols  = `pubkey, name, file, created_at, updated_at`
	idLogCols = `pubkey, seq, message_id, lifecycle, created_at`
	idOutCols = `id, server, pubkey, agent, turn, lifecycle, tries, error, created_at, sent_at`
	qCharPut  = `INSERT INTO agentd_identity_characters (` + charCols + `) VALUES ($1, $2, $3, $4, $4)
		ON CONFLICT (pubkey) DO UPDATE SET name = excluded.name, file = excluded.file, updated_at = excluded.updated_at
		RETURNING created_at`
	qIDLock     = `SELECT pg_advisory_xact_lock(hashtextextended('agentd_identity_log:' || $1, 0))`
	qIDLogByMsg = `SELECT ` + idLogCols + ` FROM agentd_identity_logs WHERE pubkey = $1 AND message_id = $2`
	qIDLogIns   = `INSERT INTO agentd_identity_logs (` + idLogCols + `)
		SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4 FROM agentd_identity_logs WHERE pubkey = $1 RETURNING seq`
	qIDOutIns = `INSERT INTO agentd_identity_outbox (server, pubkey, agent, turn, lifecycle, created_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (server, agent, turn) DO NOTHING RETURNING ` + idOutCols
	qIDOutByKey = `SELECT ` + idOutCols + ` FROM agentd_identity_outbox WHERE server = $1 AND agent = $2 AND turn = $3`
	qIDOutMark  = `UPDATE agentd_identity_outbox SET sent_at = $1, tries = tries + $2, error = $3 WHERE id = $4 RETURNING 1`

	qChar       = `SELECT ` + charCols + ` FROM agentd_identity_characters WHERE pubkey = $1`
	qCharsNamed = `SELECT ` + charCols + ` FROM agentd_identity_characters WHERE name = $1 ORDER BY updated_at DESC, pubkey`
	qIDLogs     = `SELECT ` + idLogCols + ` FROM agentd_identity_logs WHERE pubkey = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	qIDOutDue   = `SELECT ` + idOutCols + ` FROM agentd_identity_outbox WHERE server = $1 AND pubkey = $2 AND sent_at = 0 ORDER BY id LIMIT $3`
	qIDTurns    = `SELECT i.id FROM inbox i JOIN sessions s ON s.id = i.session_id
		WHERE s.agent = $2 AND i.id > $3 AND i.state = 'done' AND i.kind <> 'reset' AND NOT i.silent
		AND NOT EXISTS (SELECT 1 FROM agentd_identity_outbox o WHERE o.server = $1 AND o.agent = $2 AND o.turn = i.id)
		ORDER BY i.id LIMIT $4`
	qIDFirstTurn = `SELECT coalesce(min(turn), 0) FROM agentd_identity_outbox WHERE server = $1 AND agent = $2`
)

// PutCharacter stores c under c.Pubkey, replacing an earlier file.
func (s *Store) PutCharacter(ctx context.Context, c store.Character) (store.Character, error) {
	if err := store.CheckCharacter(&c); err != nil {
		return store.Character{}, fmt.Errorf("postgres: put character: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.Character{}, store.ErrClosed
	}
	var created int64
	if err := s.pool.QueryRow(ctx, qCharPut, c.Pubkey, c.Name, string(c.File), c.UpdatedAt.UnixNano()).Scan(&created); err != nil {
		return store.Character{}, s.readErr("put character "+c.Pubkey, err)
	}
	c.CreatedAt = store.RunTime(created)
	return c, nil
}

// Character returns pubkey's character.
func (s *Store) Character(ctx context.Context, pubkey string) (store.Character, error) {
	if !validText(pubkey) {
		return store.Character{}, fmt.Errorf("postgres: character %q: %w", pubkey, store.ErrNotFound)
	}
	cs, err := connList(s, ctx, "character", scanCharacter, qChar, pubkey)
	if err != nil {
		return store.Character{}, err
	}
	if len(cs) == 0 {
		return store.Character{}, fmt.Errorf("postgres: character %s: %w", pubkey, store.ErrNotFound)
	}
	return cs[0], nil
}

// CharactersNamed lists the characters called name, newest first.
func (s *Store) CharactersNamed(ctx context.Context, name string) ([]store.Character, error) {
	if !validText(name) {
		return []store.Character{}, nil
	}
	return connList(s, ctx, "characters", scanCharacter, qCharsNamed, name)
}

// AppendIdentityLog appends l with the next seq of its pubkey, once per
// message id, under the pubkey's advisory lock.
func (s *Store) AppendIdentityLog(ctx context.Context, l store.IdentityLog) (store.IdentityLog, bool, error) {
	if err := store.CheckIdentityLog(&l); err != nil {
		return store.IdentityLog{}, false, fmt.Errorf("postgres: append identity log: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.IdentityLog{}, false, store.ErrClosed
	}
	got, created := l, true
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, qIDLock, l.Pubkey); err != nil {
			return err
		}
		old, err := scanIdentityLog(tx.QueryRow(ctx, qIDLogByMsg, l.Pubkey, l.MessageID))
		if err == nil {
			got, created = old, false
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return tx.QueryRow(ctx, qIDLogIns, l.Pubkey, l.MessageID, string(l.Lifecycle), l.CreatedAt.UnixNano()).Scan(&got.Seq)
	})
	if err != nil {
		return store.IdentityLog{}, false, s.readErr("append identity log of "+l.Pubkey, err)
	}
	return got, created, nil
}

// IdentityLogs lists pubkey's logs after seq after, in order.
func (s *Store) IdentityLogs(ctx context.Context, pubkey string, after int64, limit int) ([]store.IdentityLog, error) {
	if !validText(pubkey) {
		return []store.IdentityLog{}, nil
	}
	return connList(s, ctx, "identity logs", scanIdentityLog, qIDLogs, pubkey, after, store.IdentityLimit(limit))
}

// QueueIdentityLog queues it once per (server, agent, turn). Of racing
// inserts (any nodes) one gets in; the others read its row.
func (s *Store) QueueIdentityLog(ctx context.Context, it store.IdentityOutboxItem) (store.IdentityOutboxItem, bool, error) {
	if err := store.CheckIdentityOutboxItem(&it); err != nil {
		return store.IdentityOutboxItem{}, false, fmt.Errorf("postgres: queue identity log: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.IdentityOutboxItem{}, false, store.ErrClosed
	}
	what := fmt.Sprintf("queue identity log of turn %d", it.Turn)
	got, err := scanIdentityOut(s.pool.QueryRow(ctx, qIDOutIns, it.Server, it.Pubkey, it.Agent, it.Turn, string(it.Lifecycle), it.CreatedAt.UnixNano()))
	if err == nil {
		return got, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.IdentityOutboxItem{}, false, s.readErr(what, err)
	}
	got, err = scanIdentityOut(s.pool.QueryRow(ctx, qIDOutByKey, it.Server, it.Agent, it.Turn))
	if err != nil {
		return store.IdentityOutboxItem{}, false, s.readErr(what+": the row queued before", err)
	}
	return got, false, nil
}

// MarkIdentityLog records a delivery of row id.
func (s *Store) MarkIdentityLog(ctx context.Context, id int64, sentAt time.Time, errText string) error {
	tries := 1
	if !sentAt.IsZero() {
		tries = 0
	}
	return s.changeOne(ctx, fmt.Sprintf("mark identity log %d", id), qIDOutMark, store.RunNanos(sentAt), tries, errText, id)
}

// DueIdentityLogs lists server's undelivered rows of pubkey, oldest
// first.
func (s *Store) DueIdentityLogs(ctx context.Context, server, pubkey string, limit int) ([]store.IdentityOutboxItem, error) {
	if !validText(server) || !validText(pubkey) {
		return []store.IdentityOutboxItem{}, nil
	}
	return connList(s, ctx, "due identity logs", scanIdentityOut, qIDOutDue, server, pubkey, store.IdentityLimit(limit))
}

// IdentityTurns lists agent's ended turns after after that server has no
// row of.
func (s *Store) IdentityTurns(ctx context.Context, server, agent string, after int64, limit int) ([]int64, error) {
	if !validText(server) || !validText(agent) {
		return []int64{}, nil
	}
	return connList(s, ctx, "identity turns", scanID, qIDTurns, server, agent, after, store.IdentityLimit(limit))
}

// FirstIdentityTurn is the lowest turn queued of agent for server.
func (s *Store) FirstIdentityTurn(ctx context.Context, server, agent string) (int64, error) {
	if !validText(server) || !validText(agent) {
		return 0, nil
	}
	ids, err := connList(s, ctx, "first identity turn", scanID, qIDFirstTurn, server, agent)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

func scanID(row pgx.Row) (int64, error) {
	var id int64
	return id, row.Scan(&id)
}

func scanCharacter(row pgx.Row) (store.Character, error) {
	var c store.Character
	var file string
	var created, updated int64
	if err := row.Scan(&c.Pubkey, &c.Name, &file, &created, &updated); err != nil {
		return store.Character{}, err
	}
	c.File, c.CreatedAt, c.UpdatedAt = []byte(file), store.RunTime(created), store.RunTime(updated)
	return c, nil
}

func scanIdentityLog(row pgx.Row) (store.IdentityLog, error) {
	var l store.IdentityLog
	var doc string
	var created int64
	if err := row.Scan(&l.Pubkey, &l.Seq, &l.MessageID, &doc, &created); err != nil {
		return store.IdentityLog{}, err
	}
	l.Lifecycle, l.CreatedAt = []byte(doc), store.RunTime(created)
	return l, nil
}

func scanIdentityOut(row pgx.Row) (store.IdentityOutboxItem, error) {
	var it store.IdentityOutboxItem
	var doc string
	var created, sent int64
	if err := row.Scan(&it.ID, &it.Server, &it.Pubkey, &it.Agent, &it.Turn, &doc, &it.Tries, &it.Error, &created, &sent); err != nil {
		return store.IdentityOutboxItem{}, err
	}
	it.Lifecycle, it.CreatedAt, it.SentAt = []byte(doc), store.RunTime(created), store.RunTime(sent)
	return it, nil
}
