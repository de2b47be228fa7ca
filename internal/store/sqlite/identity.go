package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentd/internal/store"
)

var (
	_ store.IdentityStore  = (*Store)(nil)
	_ store.IdentityOutbox = (*Store)(nil)
)

// schemaIdentity holds an identity server's characters and logs, and a
// node's queue of lifecycles for identity servers. A log's seq numbers one
// agent's logs from 1, given by the single writer (max + 1); (pubkey,
// message_id) is unique, which makes a resent log store nothing new. An
// outbox row is one turn's lifecycle for one server, made once whoever
// queues it first (the Ended hook or the start-up sweep); sent_at 0 is
// undelivered. Times are unix nanoseconds.
const schemaIdentity = `
CREATE TABLE agentd_identity_characters (
	pubkey     TEXT PRIMARY KEY,
	name       TEXT NOT NULL,
	file       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE INDEX agentd_identity_characters_name ON agentd_identity_characters (name, updated_at);
CREATE TABLE agentd_identity_logs (
	pubkey     TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	message_id TEXT NOT NULL,
	lifecycle  TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (pubkey, seq),
	UNIQUE (pubkey, message_id)
);
CREATE TABLE agentd_identity_outbox (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	server     TEXT NOT NULL,
	pubkey     TEXT NOT NULL,
	agent      TEXT NOT NULL,
	turn       INTEGER NOT NULL,
	lifecycle  TEXT NOT NULL,
	tries      INTEGER NOT NULL DEFAULT 0,
	error      TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	sent_at    INTEGER NOT NULL DEFAULT 0,
	UNIQUE (server, agent, turn)
);
CREATE INDEX agentd_identity_outbox_due ON agentd_identity_outbox (server, pubkey, id) WHERE sent_at = 0;`

const (
	charCols  = `pubkey, name, file, created_at, updated_at`
	idLogCols = `pubkey, seq, message_id, lifecycle, created_at`
	idOutCols = `id, server, pubkey, agent, turn, lifecycle, tries, error, created_at, sent_at`
	qCharPut  = `INSERT INTO agentd_identity_characters (` + charCols + `) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (pubkey) DO UPDATE SET name = excluded.name, file = excluded.file, updated_at = excluded.updated_at
		RETURNING created_at`
	qIDLogByMsg = `SELECT ` + idLogCols + ` FROM agentd_identity_logs WHERE pubkey = ? AND message_id = ?`
	qIDLogNext  = `SELECT coalesce(max(seq), 0) + 1 FROM agentd_identity_logs WHERE pubkey = ?`
	qIDLogIns   = `INSERT INTO agentd_identity_logs (` + idLogCols + `) VALUES (?, ?, ?, ?, ?)`
	qIDOutIns   = `INSERT INTO agentd_identity_outbox (server, pubkey, agent, turn, lifecycle, created_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (server, agent, turn) DO NOTHING`
	qIDOutByKey = `SELECT ` + idOutCols + ` FROM agentd_identity_outbox WHERE server = ? AND agent = ? AND turn = ?`
	qIDOutMark  = `UPDATE agentd_identity_outbox SET sent_at = ?, tries = tries + ?, error = ? WHERE id = ?`

	qChar       = `SELECT ` + charCols + ` FROM agentd_identity_characters WHERE pubkey = ?`
	qCharsNamed = `SELECT ` + charCols + ` FROM agentd_identity_characters WHERE name = ? ORDER BY updated_at DESC, pubkey`
	qIDLogs     = `SELECT ` + idLogCols + ` FROM agentd_identity_logs WHERE pubkey = ? AND seq > ? ORDER BY seq LIMIT ?`
	qIDOutDue   = `SELECT ` + idOutCols + ` FROM agentd_identity_outbox WHERE server = ? AND pubkey = ? AND sent_at = 0 ORDER BY id LIMIT ?`
	qIDTurns    = `SELECT i.id FROM inbox i JOIN sessions s ON s.id = i.session_id
		WHERE s.agent = ?2 AND i.id > ?3 AND i.state = 'done' AND i.kind <> 'reset' AND i.silent = 0
		AND NOT EXISTS (SELECT 1 FROM agentd_identity_outbox o WHERE o.server = ?1 AND o.agent = ?2 AND o.turn = i.id)
		ORDER BY i.id LIMIT ?4`
	qIDFirstTurn = `SELECT coalesce(min(turn), 0) FROM agentd_identity_outbox WHERE server = ? AND agent = ?`
)

// identStmts are the writer's statements of identity tables.
type identStmts struct{ charPut, logByMsg, logNext, logIns, outIns, outByKey, outMark *sql.Stmt }

func (g *identStmts) list() []struct {
	dst **sql.Stmt
	sql string
} {
	return []struct {
		dst **sql.Stmt
		sql string
	}{{&g.charPut, qCharPut}, {&g.logByMsg, qIDLogByMsg}, {&g.logNext, qIDLogNext}, {&g.logIns, qIDLogIns},
		{&g.outIns, qIDOutIns}, {&g.outByKey, qIDOutByKey}, {&g.outMark, qIDOutMark}}
}

// identReads are the read pool's statements of identity tables.
type identReads struct{ char, charsNamed, logs, outDue, turns, firstTurn *stmt }

func (g *identReads) list() []struct {
	dst **stmt
	sql string
} {
	return []struct {
		dst **stmt
		sql string
	}{{&g.char, qChar}, {&g.charsNamed, qCharsNamed}, {&g.logs, qIDLogs}, {&g.outDue, qIDOutDue},
		{&g.turns, qIDTurns}, {&g.firstTurn, qIDFirstTurn}}
}

// identityWrite runs fn in the writer, in the group's transaction. fn may
// run twice (a group is applied again when one of its requests fails), so
// it sets its results, never adds to them.
func (s *Store) identityWrite(ctx context.Context, fn func(w *writer) error) error {
	req := s.getRequest(ctx, opIdentity)
	req.identity = fn
	return s.sendErr(ctx, req)
}

// PutCharacter stores c under c.Pubkey, replacing an earlier file.
func (s *Store) PutCharacter(ctx context.Context, c store.Character) (store.Character, error) {
	if err := store.CheckCharacter(&c); err != nil {
		return store.Character{}, fmt.Errorf("sqlite: put character: %w: %v", ErrInvalid, err)
	}
	var created int64
	err := s.identityWrite(ctx, func(w *writer) error {
		return w.ident.charPut.QueryRow(c.Pubkey, c.Name, string(c.File), c.UpdatedAt.UnixNano(), c.UpdatedAt.UnixNano()).Scan(&created)
	})
	if err != nil {
		return store.Character{}, fmt.Errorf("sqlite: put character %s: %w", c.Pubkey, err)
	}
	c.CreatedAt = store.RunTime(created)
	return c, nil
}

// Character returns pubkey's character.
func (s *Store) Character(ctx context.Context, pubkey string) (store.Character, error) {
	cs, err := connList(s, ctx, "character", s.r.ident.char, scanCharacter, pubkey)
	if err != nil {
		return store.Character{}, err
	}
	if len(cs) == 0 {
		return store.Character{}, fmt.Errorf("sqlite: character %s: %w", pubkey, store.ErrNotFound)
	}
	return cs[0], nil
}

// CharactersNamed lists the characters called name, newest first.
func (s *Store) CharactersNamed(ctx context.Context, name string) ([]store.Character, error) {
	return connList(s, ctx, "characters", s.r.ident.charsNamed, scanCharacter, name)
}

// AppendIdentityLog appends l with the next seq of its pubkey, once per
// message id.
func (s *Store) AppendIdentityLog(ctx context.Context, l store.IdentityLog) (store.IdentityLog, bool, error) {
	if err := store.CheckIdentityLog(&l); err != nil {
		return store.IdentityLog{}, false, fmt.Errorf("sqlite: append identity log: %w: %v", ErrInvalid, err)
	}
	var got store.IdentityLog
	var created bool
	err := s.identityWrite(ctx, func(w *writer) error {
		old, err := scanIdentityLog(w.ident.logByMsg.QueryRow(l.Pubkey, l.MessageID))
		if err == nil {
			got, created = old, false
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		got, created = l, true
		if err := w.ident.logNext.QueryRow(l.Pubkey).Scan(&got.Seq); err != nil {
			return err
		}
		_, err = w.ident.logIns.Exec(l.Pubkey, got.Seq, l.MessageID, string(l.Lifecycle), l.CreatedAt.UnixNano())
		return err
	})
	if err != nil {
		return store.IdentityLog{}, false, fmt.Errorf("sqlite: append identity log of %s: %w", l.Pubkey, err)
	}
	return got, created, nil
}

// IdentityLogs lists pubkey's logs after seq after, in order.
func (s *Store) IdentityLogs(ctx context.Context, pubkey string, after int64, limit int) ([]store.IdentityLog, error) {
	return connList(s, ctx, "identity logs", s.r.ident.logs, scanIdentityLog, pubkey, after, store.IdentityLimit(limit))
}

// QueueIdentityLog queues it once per (server, agent, turn).
func (s *Store) QueueIdentityLog(ctx context.Context, it store.IdentityOutboxItem) (store.IdentityOutboxItem, bool, error) {
	if err := store.CheckIdentityOutboxItem(&it); err != nil {
		return store.IdentityOutboxItem{}, false, fmt.Errorf("sqlite: queue identity log: %w: %v", ErrInvalid, err)
	}
	var got store.IdentityOutboxItem
	var created bool
	err := s.identityWrite(ctx, func(w *writer) error {
		res, err := w.ident.outIns.Exec(it.Server, it.Pubkey, it.Agent, it.Turn, string(it.Lifecycle), it.CreatedAt.UnixNano())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		created = n == 1
		got, err = scanIdentityOut(w.ident.outByKey.QueryRow(it.Server, it.Agent, it.Turn))
		return err
	})
	if err != nil {
		return store.IdentityOutboxItem{}, false, fmt.Errorf("sqlite: queue identity log of turn %d: %w", it.Turn, err)
	}
	return got, created, nil
}

// MarkIdentityLog records a delivery of row id.
func (s *Store) MarkIdentityLog(ctx context.Context, id int64, sentAt time.Time, errText string) error {
	tries := 1
	if !sentAt.IsZero() {
		tries = 0
	}
	err := s.identityWrite(ctx, func(w *writer) error {
		res, err := w.ident.outMark.Exec(store.RunNanos(sentAt), tries, errText, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, store.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: mark identity log %d: %w", id, err)
	}
	return nil
}

// DueIdentityLogs lists server's undelivered rows of pubkey, oldest
// first.
func (s *Store) DueIdentityLogs(ctx context.Context, server, pubkey string, limit int) ([]store.IdentityOutboxItem, error) {
	return connList(s, ctx, "due identity logs", s.r.ident.outDue, scanIdentityOut, server, pubkey, store.IdentityLimit(limit))
}

// IdentityTurns lists agent's ended turns after after that server has no
// row of.
func (s *Store) IdentityTurns(ctx context.Context, server, agent string, after int64, limit int) ([]int64, error) {
	return connList(s, ctx, "identity turns", s.r.ident.turns, func(sc scanner) (int64, error) {
		var id int64
		return id, sc.Scan(&id)
	}, server, agent, after, store.IdentityLimit(limit))
}

// FirstIdentityTurn is the lowest turn queued of agent for server.
func (s *Store) FirstIdentityTurn(ctx context.Context, server, agent string) (int64, error) {
	ids, err := connList(s, ctx, "first identity turn", s.r.ident.firstTurn, func(sc scanner) (int64, error) {
		var id int64
		return id, sc.Scan(&id)
	}, server, agent)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[0], nil
}

func scanCharacter(sc scanner) (store.Character, error) {
	var c store.Character
	var file string
	var created, updated int64
	if err := sc.Scan(&c.Pubkey, &c.Name, &file, &created, &updated); err != nil {
		return store.Character{}, err
	}
	c.File, c.CreatedAt, c.UpdatedAt = json.RawMessage(file), store.RunTime(created), store.RunTime(updated)
	return c, nil
}

func scanIdentityLog(sc scanner) (store.IdentityLog, error) {
	var l store.IdentityLog
	var doc string
	var created int64
	if err := sc.Scan(&l.Pubkey, &l.Seq, &l.MessageID, &doc, &created); err != nil {
		return store.IdentityLog{}, err
	}
	l.Lifecycle, l.CreatedAt = json.RawMessage(doc), store.RunTime(created)
	return l, nil
}

func scanIdentityOut(sc scanner) (store.IdentityOutboxItem, error) {
	var it store.IdentityOutboxItem
	var doc string
	var created, sent int64
	if err := sc.Scan(&it.ID, &it.Server, &it.Pubkey, &it.Agent, &it.Turn, &doc, &it.Tries, &it.Error, &created, &sent); err != nil {
		return store.IdentityOutboxItem{}, err
	}
	it.Lifecycle, it.CreatedAt, it.SentAt = json.RawMessage(doc), store.RunTime(created), store.RunTime(sent)
	return it, nil
}
