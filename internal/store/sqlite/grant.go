package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"agentd/internal/store"
)

var _ store.GrantStore = (*Store)(nil)

// schemaGrants holds the standing permissions people gave with their
// answers to approvals (store.Grant): a row per grant, deleted when it is
// revoked. Times are unix nanoseconds, as everywhere else.
const schemaGrants = `
CREATE TABLE agentd_grants (
	id         TEXT PRIMARY KEY,
	agent      TEXT NOT NULL,
	session    TEXT NOT NULL,
	tool       TEXT NOT NULL,
	exact      BLOB NOT NULL, -- may hold NUL
	approval   TEXT NOT NULL,
	by_whom    TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE INDEX agentd_grants_agent ON agentd_grants (agent, created_at);`

const (
	grantCols    = `id, agent, session, tool, exact, approval, by_whom, created_at`
	qGrantPut    = `INSERT INTO agentd_grants (` + grantCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qGrantDelete = `DELETE FROM agentd_grants WHERE id = ?`
	qGrants      = `SELECT ` + grantCols + ` FROM agentd_grants WHERE ?1 = '' OR agent = ?1 ORDER BY created_at, id`
)

// grantStmts are the writer's statements of grants.
type grantStmts struct{ put, del *sql.Stmt }

func (g *grantStmts) list() []struct {
	dst **sql.Stmt
	sql string
} {
	return []struct {
		dst **sql.Stmt
		sql string
	}{{&g.put, qGrantPut}, {&g.del, qGrantDelete}}
}

// PutGrant records g; it is durable when PutGrant returns.
func (s *Store) PutGrant(ctx context.Context, g *store.Grant) error {
	if err := store.CheckGrant(g); err != nil {
		return fmt.Errorf("sqlite: put grant: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opGrantPut)
	req.grant = *g
	return s.sendErr(ctx, req)
}

// DeleteGrant revokes the grant id; store.ErrNotFound when there is none.
func (s *Store) DeleteGrant(ctx context.Context, id string) error {
	req := s.getRequest(ctx, opGrantDelete)
	req.grant = store.Grant{ID: id}
	return s.sendErr(ctx, req)
}

// sendErr sends req and returns the error its write ended with.
func (s *Store) sendErr(ctx context.Context, req *request) error {
	if err := s.send(ctx, req); err != nil {
		return err
	}
	err := req.err
	s.putRequest(req)
	return err
}

// Grants lists an agent's grants ("" every agent's), oldest first.
func (s *Store) Grants(ctx context.Context, agent string) ([]store.Grant, error) {
	return connList(s, ctx, "grants", s.r.grants, scanGrant, agent)
}

func (w *writer) applyGrantPut(r *request) error {
	g := &r.grant
	if _, err := w.grants.put.Exec(g.ID, g.Agent, g.Session, g.Tool, []byte(g.Exact), g.Approval, g.By, g.CreatedAt.UnixNano()); err != nil {
		return fmt.Errorf("sqlite: put grant %s: %w", g.ID, err)
	}
	return nil
}

func (w *writer) applyGrantDelete(r *request) error {
	res, err := w.grants.del.Exec(r.grant.ID)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil && n == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("sqlite: delete grant %s: %w", r.grant.ID, err)
	}
	return nil
}

func scanGrant(sc scanner) (store.Grant, error) {
	var g store.Grant
	var created int64
	var exact []byte
	if err := sc.Scan(&g.ID, &g.Agent, &g.Session, &g.Tool, &exact, &g.Approval, &g.By, &created); err != nil {
		return store.Grant{}, err
	}
	g.Exact, g.CreatedAt = string(exact), store.RunTime(created)
	return g, nil
}
