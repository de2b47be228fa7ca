package postgres

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
)

// Copying the runs of jobs (see CopyFromSQLite).

// qRunCopy writes a run of the source: see copyJobRuns.
const qRunCopy = `INSERT INTO agentd_job_runs (` + runCols + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
	ON CONFLICT (job, run) DO UPDATE SET status = excluded.status, started_at = excluded.started_at,
		ended_at = excluded.ended_at, steps = excluded.steps, tokens_in = excluded.tokens_in,
		tokens_out = excluded.tokens_out, cost_usd = excluded.cost_usd, output = excluded.output,
		error = excluded.error, delivered_at = excluded.delivered_at, delivery_error = excluded.delivery_error
	WHERE agentd_job_runs.status IN (` + sqlQueued + `, ` + sqlRunning + `)
		OR excluded.status NOT IN (` + sqlQueued + `, ` + sqlRunning + `)`

// copyJobRuns copies the runs in chunks of copyChunk in the order of
// their key, each chunk in one transaction. A run PostgreSQL has already
// takes the source's status, times, figures and texts, unless it has
// ended in PostgreSQL and is still open in the source (a copy run again
// after the deployment moved: PostgreSQL's end stands). A fire taken
// before the copy stays taken after it.
func (s *Store) copyJobRuns(ctx context.Context, src *sql.DB) error {
	var job, run string
	for {
		rows, err := src.QueryContext(ctx, `SELECT `+runCols+` FROM agentd_job_runs
			WHERE (job, run) > (?, ?) ORDER BY job, run LIMIT ?`, job, run, copyChunk)
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		for rows.Next() {
			var trigger, session, status, output, errText, payload, node, delivery, deliveryErr, mac string
			var sched, started, ended, steps, in, out, delivered int64
			var cost float64
			if err := rows.Scan(&job, &run, &sched, &trigger, &session, &status, &started, &ended, &steps, &in, &out, &cost,
				&output, &errText, &payload, &node, &delivery, &delivered, &deliveryErr, &mac); err != nil {
				rows.Close()
				return err
			}
			b.Queue(qRunCopy, job, run, sched, trigger, session, status, started, ended, steps, in, out, cost, output, errText,
				payload, node, delivery, delivered, deliveryErr, mac)
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

// verifyJobRuns lists the runs ("job/run") whose status or end differs
// between the stores, or that one of them lacks, in rep.DifferRuns.
func (s *Store) verifyJobRuns(ctx context.Context, src *sql.DB, rep *CopyReport) error {
	const q = `SELECT job || '/' || run || ' ' || status, ended_at FROM agentd_job_runs`
	var err error
	rep.DifferRuns, err = s.differ(ctx, src, q)
	return err
}
