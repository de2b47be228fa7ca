package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"agentd/internal/store"
)

var _ store.JobRunStore = (*Store)(nil)

// schemaJobRuns holds the runs of jobs: a row per (job, run), taken by
// StartRun's INSERT … ON CONFLICT DO NOTHING, which is what makes a fire
// happen once. Run ids start with their scheduled time (store.RunID), so
// the primary key's index serves a job's runs newest first, its last run
// and a prune. Times are unix nanoseconds, 0 for none (ended_at of an
// open run); payload is compact JSON text, empty for none. The rows hold up
// to 64 KiB of output, so the table keeps its row ids (a WITHOUT ROWID
// table suits small rows).
const schemaJobRuns = `
CREATE TABLE agentd_job_runs (
	job          TEXT NOT NULL,
	run          TEXT NOT NULL,
	scheduled_at INTEGER NOT NULL,
	trigger_kind TEXT NOT NULL,
	session      TEXT NOT NULL DEFAULT '',
	status       TEXT NOT NULL,
	started_at   INTEGER NOT NULL,
	ended_at     INTEGER NOT NULL DEFAULT 0,
	steps        INTEGER NOT NULL DEFAULT 0,
	tokens_in    INTEGER NOT NULL DEFAULT 0,
	tokens_out   INTEGER NOT NULL DEFAULT 0,
	cost_usd     REAL NOT NULL DEFAULT 0,
	output       TEXT NOT NULL DEFAULT '',
	error        TEXT NOT NULL DEFAULT '',
	payload      TEXT NOT NULL DEFAULT '',
	node         TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (job, run)
);`

// schemaJobDelivery (schema v12) records each run's delivery and the
// webhook delivery and MAC it was taken for. delivery and mac are each
// unique per job where they are set: of two nodes taking one delivery
// (or one request, sent again under another delivery id), one inserts,
// and the other's insert does nothing (StartRun). delivered_at (unix nanoseconds) is 0
// while a done, error or skipped run's delivery is pending: the partial index
// agentd_job_runs_undelivered holds those runs alone, so a recovery
// finds them without reading the history. The runs that ended before the
// column existed count as delivered (what a crash lost then is lost).
const schemaJobDelivery = `
ALTER TABLE agentd_job_runs ADD COLUMN delivery TEXT NOT NULL DEFAULT '';
ALTER TABLE agentd_job_runs ADD COLUMN delivered_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE agentd_job_runs ADD COLUMN delivery_error TEXT NOT NULL DEFAULT '';
ALTER TABLE agentd_job_runs ADD COLUMN mac TEXT NOT NULL DEFAULT '';
UPDATE agentd_job_runs SET delivered_at = ended_at WHERE ` + sqlUndelivered + `;
CREATE UNIQUE INDEX agentd_job_runs_delivery ON agentd_job_runs (job, delivery) WHERE delivery <> '';
CREATE UNIQUE INDEX agentd_job_runs_mac ON agentd_job_runs (job, mac) WHERE mac <> '';
CREATE INDEX agentd_job_runs_undelivered ON agentd_job_runs (job, run) WHERE ` + sqlUndelivered + `;`

// The open statuses as the queries' literals; sqlUndelivered is
// store.JobRun.Undelivered as the queries and the index say it.
const (
	sqlQueued      = "'" + store.RunQueued + "'"
	sqlRunning     = "'" + store.RunRunning + "'"
	sqlUndelivered = "delivered_at = 0 AND status IN ('" + store.RunDone + "', '" + store.RunError + "', '" + store.RunSkipped + "')"
)

const (
	runCols = `job, run, scheduled_at, trigger_kind, session, status, started_at, ended_at, steps, tokens_in, tokens_out, cost_usd, output, error, payload, node,
	delivery, delivered_at, delivery_error, mac`
	// qRunIns does nothing on a conflict with the primary key (the
	// fire is taken) or with the delivery's or the MAC's unique index
	// (the delivery or the request is).
	qRunIns        = `INSERT INTO agentd_job_runs (` + runCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, '', ?, ?, ?, ?, 0, '', ?) ON CONFLICT DO NOTHING`
	qRun           = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = ? AND run = ?`
	qRunOfDelivery = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = ? AND delivery = ? AND delivery <> ''`
	qRunOfMAC      = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = ? AND mac = ? AND mac <> ''`
	qRuns          = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = ? ORDER BY run DESC LIMIT ?`
	qRunsFrom      = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = ? AND run < ? ORDER BY run DESC LIMIT ?`
	// qRunsOpen reads a job's open runs through its primary key's
	// index: the job's rows, filtered.
	qRunsOpen = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = ? AND status IN (` + sqlQueued + `, ` + sqlRunning + `) ORDER BY run`
	// qRunsUndelivered reads agentd_job_runs_undelivered.
	qRunsUndelivered = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = ? AND ` + sqlUndelivered + ` ORDER BY run LIMIT ?`
	// qRunLast: ?2 is store.RunTriggerSet's ",cron,every," or '' for any.
	qRunLast = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = ?1
		AND (?2 = '' OR instr(?2, ',' || trigger_kind || ',') > 0) ORDER BY run DESC LIMIT 1`
	// qRunFinish moves an open run as store.RunTransition allows (the
	// same rule; a run that does not move is told apart by reading it).
	qRunFinish = `UPDATE agentd_job_runs SET status = ?3, started_at = iif(?3 = ` + sqlRunning + `, ?4, started_at), ended_at = ?5,
		steps = ?6, tokens_in = ?7, tokens_out = ?8, cost_usd = ?9, output = ?10, error = ?11
	WHERE job = ?1 AND run = ?2 AND (status = ` + sqlQueued + ` OR (status = ` + sqlRunning + ` AND ?3 <> ` + sqlRunning + `))
	RETURNING ` + runCols
	// qRunDeliver records an ended run's delivery once (a run that does
	// not match is told apart by reading it).
	qRunDeliver = `UPDATE agentd_job_runs SET delivered_at = ?3, delivery_error = ?4
	WHERE job = ?1 AND run = ?2 AND delivered_at = 0 AND status NOT IN (` + sqlQueued + `, ` + sqlRunning + `)
	RETURNING ` + runCols
	// qRunPrune removes the ended runs, their delivery not pending,
	// beyond the job's newest ?2 (none if it has no more runs than that)
	// and, ?3 not '', older than the run id ?3; never the newest.
	qRunPrune = `DELETE FROM agentd_job_runs WHERE job = ?1 AND status NOT IN (` + sqlQueued + `, ` + sqlRunning + `)
		AND NOT (` + sqlUndelivered + `)
		AND run < (SELECT max(run) FROM agentd_job_runs WHERE job = ?1)
		AND run < (SELECT run FROM agentd_job_runs WHERE job = ?1 ORDER BY run DESC LIMIT 1 OFFSET ?2)
		AND (?3 = '' OR run < ?3)`
)

// StartRun records a run taken, or returns the run its job has of that
// id already with created false (see store.JobRunStore). The writer
// applies one write at a time, so of two racing calls the second finds
// the first's row.
func (s *Store) StartRun(ctx context.Context, r store.JobRun) (store.JobRun, bool, error) {
	r, err := store.RunStart(r, time.Now())
	if err != nil {
		return store.JobRun{}, false, fmt.Errorf("sqlite: start run: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opRunStart)
	req.jobRun = r
	if err := s.send(ctx, req); err != nil {
		return store.JobRun{}, false, err
	}
	out, created, err := req.jobRun, req.created, req.err
	s.putRequest(req)
	return out, created, err
}

// FinishRun records the end of an open run, or its move from queued to
// running (see store.JobRunStore).
func (s *Store) FinishRun(ctx context.Context, end store.JobRun) (store.JobRun, error) {
	end, err := store.RunEnd(end, time.Now())
	if err != nil {
		return store.JobRun{}, fmt.Errorf("sqlite: finish run: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opRunFinish)
	req.jobRun = end
	if err := s.send(ctx, req); err != nil {
		return store.JobRun{}, err
	}
	out, err := req.jobRun, req.err
	s.putRequest(req)
	return out, err
}

// RecordDelivery records an ended run's delivery, once (see
// store.JobRunStore).
func (s *Store) RecordDelivery(ctx context.Context, job, run string, at time.Time, failure string) (store.JobRun, error) {
	at, failure, err := store.DeliveryRecord(job, run, at, failure, time.Now())
	if err != nil {
		return store.JobRun{}, fmt.Errorf("sqlite: record delivery: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opRunDeliver)
	req.jobRun = store.JobRun{Job: job, Run: run, DeliveredAt: at, DeliveryError: failure}
	if err := s.send(ctx, req); err != nil {
		return store.JobRun{}, err
	}
	out, err := req.jobRun, req.err
	s.putRequest(req)
	return out, err
}

// PruneRuns removes the ended, delivered runs of job older than its
// newest keep or scheduled before before (see store.JobRunStore).
func (s *Store) PruneRuns(ctx context.Context, job string, keep int, before time.Time) (int64, error) {
	if err := store.CheckPrune(job, keep); err != nil {
		return 0, fmt.Errorf("sqlite: prune runs: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opRunPrune)
	req.jobRun, req.keep = store.JobRun{Job: job, ScheduledAt: before}, keep
	if err := s.send(ctx, req); err != nil {
		return 0, err
	}
	n, err := req.pruned, req.err
	s.putRequest(req)
	return n, err
}

// JobRuns returns a job's runs newest first, before a run id.
func (s *Store) JobRuns(ctx context.Context, job, before string, limit int) ([]store.JobRun, error) {
	n, err := store.RunLimit(limit)
	if err == nil {
		err = store.CheckExtensionKey("job", job)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: job runs: %w: %v", ErrInvalid, err)
	}
	if before == "" {
		return s.runList(ctx, "job runs", s.r.runs, job, n)
	}
	return s.runList(ctx, "job runs", s.r.runsFrom, job, before, n)
}

// OpenRuns returns a job's queued and running runs, oldest first.
func (s *Store) OpenRuns(ctx context.Context, job string) ([]store.JobRun, error) {
	if err := store.CheckExtensionKey("job", job); err != nil {
		return nil, fmt.Errorf("sqlite: open runs: %w: %v", ErrInvalid, err)
	}
	return s.runList(ctx, "open runs", s.r.runsOpen, job)
}

// UndeliveredRuns returns a job's done and error runs whose delivery is
// pending, oldest first.
func (s *Store) UndeliveredRuns(ctx context.Context, job string, limit int) ([]store.JobRun, error) {
	n, err := store.RunLimit(limit)
	if err == nil {
		err = store.CheckExtensionKey("job", job)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: undelivered runs: %w: %v", ErrInvalid, err)
	}
	return s.runList(ctx, "undelivered runs", s.r.runsUndelivered, job, n)
}

// DeliveryRun returns the run job took for a webhook delivery, or
// store.ErrNotFound.
func (s *Store) DeliveryRun(ctx context.Context, job, delivery string) (store.JobRun, error) {
	err := store.CheckExtensionKey("job", job)
	if err == nil {
		err = store.CheckDelivery(delivery)
	}
	if err != nil {
		return store.JobRun{}, fmt.Errorf("sqlite: delivery run: %w: %v", ErrInvalid, err)
	}
	return s.oneRun(ctx, "run of delivery "+job+"/"+delivery, s.r.runOfDelivery, job, delivery)
}

// MACRun returns the run job took for a webhook request's MAC, or
// store.ErrNotFound.
func (s *Store) MACRun(ctx context.Context, job, mac string) (store.JobRun, error) {
	err := store.CheckExtensionKey("job", job)
	if err == nil {
		err = store.CheckMAC(mac)
	}
	if err != nil {
		return store.JobRun{}, fmt.Errorf("sqlite: MAC run: %w: %v", ErrInvalid, err)
	}
	return s.oneRun(ctx, "run of MAC "+job+"/"+mac, s.r.runOfMAC, job, mac)
}

// runList returns the runs the read statement q with args reads (what
// names it in errors), never nil.
func (s *Store) runList(ctx context.Context, what string, q *stmt, args ...any) ([]store.JobRun, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := q.QueryContext(ctx, args...)
	if err != nil {
		return nil, s.readErr(what, err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, func(r store.Rows) (store.JobRun, error) { return scanJobRun(r) })
	if err != nil {
		return nil, s.readErr(what, err)
	}
	return out, nil
}

// JobRun returns one run, or store.ErrNotFound.
func (s *Store) JobRun(ctx context.Context, job, run string) (store.JobRun, error) {
	if err := store.CheckRunKey(job, run); err != nil {
		return store.JobRun{}, fmt.Errorf("sqlite: job run: %w: %v", ErrInvalid, err)
	}
	return s.oneRun(ctx, "job run "+job+"/"+run, s.r.run, job, run)
}

// LastRun returns the newest run of job one of triggers took (any if
// none given), or store.ErrNotFound.
func (s *Store) LastRun(ctx context.Context, job string, triggers ...string) (store.JobRun, error) {
	set, err := store.RunTriggerSet(triggers)
	if err == nil {
		err = store.CheckExtensionKey("job", job)
	}
	if err != nil {
		return store.JobRun{}, fmt.Errorf("sqlite: last run: %w: %v", ErrInvalid, err)
	}
	return s.oneRun(ctx, "last run of "+job, s.r.runLast, job, set)
}

// oneRun returns the run the read statement q with args reads, or
// store.ErrNotFound.
func (s *Store) oneRun(ctx context.Context, what string, q *stmt, args ...any) (store.JobRun, error) {
	if s.isDown.Load() {
		return store.JobRun{}, store.ErrClosed
	}
	r, err := scanJobRun(q.QueryRowContext(ctx, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("sqlite: %s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return r, s.readErr(what, err)
	}
	return r, nil
}

func (w *writer) applyRunStart(r *request) error {
	j := &r.jobRun
	res, err := w.runIns.Exec(j.Job, j.Run, j.ScheduledAt.UnixNano(), j.Trigger, j.Session, j.Status,
		j.StartedAt.UnixNano(), store.RunNanos(j.EndedAt), j.Error, string(j.Payload), j.Node, j.Delivery, j.MAC)
	if err != nil {
		return fmt.Errorf("sqlite: start run %s/%s: %w", j.Job, j.Run, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: start run %s/%s: %w", j.Job, j.Run, err)
	}
	r.created = n == 1
	if r.created {
		return nil
	}
	// The row the insert met: of its id, its delivery or its MAC.
	got, err := scanJobRun(w.runGet.QueryRow(j.Job, j.Run))
	if errors.Is(err, sql.ErrNoRows) && j.Delivery != "" {
		got, err = scanJobRun(w.runOfDelivery.QueryRow(j.Job, j.Delivery))
	}
	if errors.Is(err, sql.ErrNoRows) && j.MAC != "" {
		got, err = scanJobRun(w.runOfMAC.QueryRow(j.Job, j.MAC))
	}
	if err != nil {
		return fmt.Errorf("sqlite: start run %s/%s: the run taken before: %w", j.Job, j.Run, err)
	}
	*j = got
	return nil
}

func (w *writer) applyRunFinish(r *request) error {
	e := &r.jobRun
	got, err := scanJobRun(w.runFinish.QueryRow(e.Job, e.Run, e.Status, store.RunNanos(e.StartedAt), store.RunNanos(e.EndedAt),
		e.Steps, e.TokensIn, e.TokensOut, e.CostUSD, e.Output, e.Error))
	if errors.Is(err, sql.ErrNoRows) {
		now, gerr := scanJobRun(w.runGet.QueryRow(e.Job, e.Run))
		switch {
		case errors.Is(gerr, sql.ErrNoRows):
			err = store.ErrNotFound
		case gerr != nil:
			err = gerr
		default:
			err = store.RunTransition(now.Status, e.Status)
		}
	}
	if err != nil {
		return fmt.Errorf("sqlite: finish run %s/%s: %w", e.Job, e.Run, err)
	}
	*e = got
	return nil
}

func (w *writer) applyRunDeliver(r *request) error {
	d := &r.jobRun
	got, err := scanJobRun(w.runDeliver.QueryRow(d.Job, d.Run, d.DeliveredAt.UnixNano(), d.DeliveryError))
	if errors.Is(err, sql.ErrNoRows) {
		now, gerr := scanJobRun(w.runGet.QueryRow(d.Job, d.Run))
		switch {
		case errors.Is(gerr, sql.ErrNoRows):
			err = store.ErrNotFound
		case gerr != nil:
			err = gerr
		default:
			err = store.DeliveryConflict(now)
		}
	}
	if err != nil {
		return fmt.Errorf("sqlite: record delivery of %s/%s: %w", d.Job, d.Run, err)
	}
	*d = got
	return nil
}

func (w *writer) applyRunPrune(r *request) error {
	res, err := w.runPrune.Exec(r.jobRun.Job, r.keep-1, store.PruneBefore(r.jobRun.ScheduledAt))
	if err == nil {
		r.pruned, err = res.RowsAffected()
	}
	if err != nil {
		return fmt.Errorf("sqlite: prune runs of %s: %w", r.jobRun.Job, err)
	}
	return nil
}

func scanJobRun(row scanner) (store.JobRun, error) {
	var r store.JobRun
	var sched, started, ended, delivered int64
	var payload string
	err := row.Scan(&r.Job, &r.Run, &sched, &r.Trigger, &r.Session, &r.Status, &started, &ended, &r.Steps,
		&r.TokensIn, &r.TokensOut, &r.CostUSD, &r.Output, &r.Error, &payload, &r.Node, &r.Delivery, &delivered, &r.DeliveryError, &r.MAC)
	if err != nil {
		return store.JobRun{}, err
	}
	r.ScheduledAt, r.StartedAt, r.EndedAt = store.RunTime(sched), store.RunTime(started), store.RunTime(ended)
	r.DeliveredAt = store.RunTime(delivered)
	if payload != "" {
		r.Payload = []byte(payload)
	}
	return r, nil
}
