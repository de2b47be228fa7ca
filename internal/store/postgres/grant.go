package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

var _ store.GrantStore = (*Store)(nil)

// schemaGrants (schema v10) holds the standing permissions people gave
// with their answers to approvals, as in SQLite: a row per grant, deleted
// when it is revoked; exact is bytes (an exec card's holds a NUL, which
// text cannot). Times are unix nanoseconds.
const schemaGrants = `
CREATE TABLE agentd_grants (
	id         text COLLATE "C" PRIMARY KEY,
	agent      text COLLATE "C" NOT NULL,
	session    text NOT NULL,
	tool       text NOT NULL,
	exact      bytea NOT NULL,
	approval   text NOT NULL,
	by_whom    text NOT NULL,
	created_at bigint NOT NULL
);
CREATE INDEX agentd_grants_agent ON agentd_grants (agent, created_at);
`

const (
	grantCols    = `id, agent, session, tool, exact, approval, by_whom, created_at`
	qGrantPut    = `INSERT INTO agentd_grants (` + grantCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING 1`
	qGrantDelete = `DELETE FROM agentd_grants WHERE id = $1 RETURNING 1`
	qGrants      = `SELECT ` + grantCols + ` FROM agentd_grants WHERE $1 = '' OR agent = $1 ORDER BY created_at, id`
)

// PutGrant records g; it is durable when PutGrant returns.
func (s *Store) PutGrant(ctx context.Context, g *store.Grant) error {
	if err := store.CheckGrant(g); err != nil {
		return fmt.Errorf("postgres: put grant: %w: %v", ErrInvalid, err)
	}
	return s.changeOne(ctx, "put grant "+g.ID, qGrantPut, g.ID, g.Agent, g.Session, g.Tool, []byte(g.Exact), g.Approval,
		g.By, store.RunNanos(g.CreatedAt))
}

// DeleteGrant revokes the grant id; store.ErrNotFound when there is none.
func (s *Store) DeleteGrant(ctx context.Context, id string) error {
	if !validText(id) {
		return fmt.Errorf("postgres: delete grant %q: %w", id, store.ErrNotFound)
	}
	return s.changeOne(ctx, "delete grant "+id, qGrantDelete, id)
}

// Grants lists an agent's grants ("" every agent's), oldest first.
func (s *Store) Grants(ctx context.Context, agent string) ([]store.Grant, error) {
	if !validText(agent) {
		return []store.Grant{}, nil
	}
	return connList(s, ctx, "grants", scanGrant, qGrants, agent)
}

func scanGrant(row pgx.Row) (store.Grant, error) {
	var g store.Grant
	var created int64
	var exact []byte
	if err := row.Scan(&g.ID, &g.Agent, &g.Session, &g.Tool, &exact, &g.Approval, &g.By, &created); err != nil {
		return store.Grant{}, err
	}
	g.Exact, g.CreatedAt = string(exact), store.RunTime(created)
	return g, nil
}
