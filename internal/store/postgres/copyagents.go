package postgres

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
)

// Copying the dynamic agents' instances (see CopyFromSQLite).

// qInstCopy writes an instance of the source: see copyInstances.
var qInstCopy = `INSERT INTO agentd_instances (` + instCols + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)
	ON CONFLICT (id) DO UPDATE SET state = excluded.state, result = excluded.result, turn = excluded.turn,
		updated_at = excluded.updated_at, ended_at = excluded.ended_at,
		reported_at = greatest(agentd_instances.reported_at, excluded.reported_at),
		report_error = CASE WHEN agentd_instances.reported_at <> 0 THEN agentd_instances.report_error ELSE excluded.report_error END
	WHERE agentd_instances.ended_at = 0 OR excluded.ended_at <> 0`

// copyInstances copies the instances in chunks of copyChunk in the order
// of their id, each chunk in one transaction. An instance PostgreSQL has
// already takes the source's state, result and times, unless it has
// ended in PostgreSQL and is still live in the source (a copy run again
// after the deployment moved: PostgreSQL's end stands); a report
// recorded in either stays recorded.
func (s *Store) copyInstances(ctx context.Context, src *sql.DB) error {
	var id string
	for {
		rows, err := src.QueryContext(ctx, `SELECT `+instCols+` FROM agentd_instances WHERE id > ? ORDER BY id LIMIT ?`, id, copyChunk)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for rows.Next() {
			var typ, desc, agent, tpl, name, parent, root, payer, account, report, reportTo, call, task, state, result, repErr, budgets string
			var depth, originTurn, hops, turn, created, updated, ended, reported int64
			var limit float64
			if err := rows.Scan(&id, &typ, &desc, &agent, &tpl, &name, &parent, &root, &depth, &payer, &account, &limit, &report,
				&reportTo, &originTurn, &call, &task, &hops, &state, &result, &turn, &created, &updated, &ended, &reported, &repErr,
				&budgets); err != nil {
				rows.Close()
				return err
			}
			b.Queue(qInstCopy, id, typ, desc, agent, tpl, name, parent, root, depth, payer, account, limit, report, reportTo,
				originTurn, call, task, hops, state, result, turn, created, updated, ended, reported, repErr, budgets)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
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

// verifyInstances lists the instances ("id state") whose state, end or
// report differs between the stores, or that one of them lacks, in
// rep.DifferAgents.
func (s *Store) verifyInstances(ctx context.Context, src *sql.DB, rep *CopyReport) error {
	const q = `SELECT id || ' ' || state, ended_at + reported_at FROM agentd_instances`
	var err error
	rep.DifferAgents, err = s.differ(ctx, src, q)
	return err
}
