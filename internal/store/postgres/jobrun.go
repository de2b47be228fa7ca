package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

var _ store.JobRunStore = (*Store)(nil)

// schemaJobRuns holds the runs of jobs, as in SQLite: a row per (job,
// run), taken by StartRun's INSERT … ON CONFLICT DO NOTHING, which is
// what makes a fire happen once whichever nodes race for it. Jobs and run
// ids are ordered byte by byte (COLLATE "C"), as SQLite orders them; run
// ids start with their scheduled time (store.RunID), so the primary key's
// index serves a job's runs newest first, its last run and a prune. Times
// are unix nanoseconds, 0 for none; payload is compact JSON text, empty
// for none.
const schemaJobRuns = `
CREATE TABLE agentd_job_runs (
	job          text COLLATE "C" NOT NULL,
	run          text COLLATE "C" NOT NULL,
	scheduled_at bigint NOT NULL,
	trigger_kind text NOT NULL,
	session      text NOT NULL DEFAULT '',
	status       text NOT NULL,
	started_at   bigint NOT NULL,
	ended_at     bigint NOT NULL DEFAULT 0,
	steps        bigint NOT NULL DEFAULT 0,
	tokens_in    bigint NOT NULL DEFAULT 0,
	tokens_out   bigint NOT NULL DEFAULT 0,
	cost_usd     double precision NOT NULL DEFAULT 0,
	output       text NOT NULL DEFAULT '',
	error        text NOT NULL DEFAULT '',
	payload      text NOT NULL DEFAULT '',
	node         text NOT NULL DEFAULT '',
	PRIMARY KEY (job, run)
);
`

// schemaJobDelivery (schema v6) records each run's delivery and the
// webhook delivery and MAC it was taken for, as in SQLite: delivery and
// mac are each unique per job where they are set, so that of nodes
// racing to take one delivery (or one request, sent again under another
// delivery id) one inserts and the others' inserts do nothing (StartRun); delivered_at is
// 0 while a done, error or skipped run's delivery is pending, and the partial
// index agentd_job_runs_undelivered holds those runs alone. The runs that
// ended before the column existed count as delivered.
const schemaJobDelivery = `
ALTER TABLE agentd_job_runs ADD COLUMN delivery text NOT NULL DEFAULT '',
	ADD COLUMN delivered_at bigint NOT NULL DEFAULT 0,
	ADD COLUMN delivery_error text NOT NULL DEFAULT '',
	ADD COLUMN mac text NOT NULL DEFAULT '';
UPDATE agentd_job_runs SET delivered_at = ended_at WHERE ` + sqlUndelivered + `;
CREATE UNIQUE INDEX agentd_job_runs_delivery ON agentd_job_runs (job, delivery) WHERE delivery <> '';
CREATE UNIQUE INDEX agentd_job_runs_mac ON agentd_job_runs (job, mac) WHERE mac <> '';
CREATE INDEX agentd_job_runs_undelivered ON agentd_job_runs (job, run) WHERE ` + sqlUndelivered + `;
`

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
	// qRunIns does nothing on a conflict with the primary key (the fire
	// is taken) or with the delivery's or the MAC's unique index (the
	// delivery or the request is).
	qRunIns = `INSERT INTO agentd_job_runs (` + runCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, 0, 0, 0, '', $9, $10, $11, $12, 0, '', $13)
	ON CONFLICT DO NOTHING RETURNING ` + runCols
	qRun           = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = $1 AND run = $2`
	qRunOfDelivery = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = $1 AND delivery = $2 AND delivery <> ''`
	qRunOfMAC      = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = $1 AND mac = $2 AND mac <> ''`
	qRuns          = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = $1 ORDER BY run DESC LIMIT $2`
	qRunsFrom      = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = $1 AND run < $2 ORDER BY run DESC LIMIT $3`
	// qRunsOpen reads a job's open runs through its primary key's
	// index: the job's rows, filtered.
	qRunsOpen = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = $1 AND status IN (` + sqlQueued + `, ` + sqlRunning + `) ORDER BY run`
	// qRunsUndelivered reads agentd_job_runs_undelivered.
	qRunsUndelivered = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = $1 AND ` + sqlUndelivered + ` ORDER BY run LIMIT $2`
	// qRunLast: $2 is store.RunTriggerSet's ",cron,every," or '' for any.
	qRunLast = `SELECT ` + runCols + ` FROM agentd_job_runs WHERE job = $1
		AND ($2 = '' OR strpos($2, ',' || trigger_kind || ',') > 0) ORDER BY run DESC LIMIT 1`
	// qRunFinish moves an open run as store.RunTransition allows (the
	// same rule; a run that does not move is told apart by reading it).
	// The row's lock orders racing finishes: the second sees the first's
	// status and does not match.
	qRunFinish = `UPDATE agentd_job_runs SET status = $3, started_at = CASE WHEN $3 = ` + sqlRunning + ` THEN $4 ELSE started_at END,
		ended_at = $5, steps = $6, tokens_in = $7, tokens_out = $8, cost_usd = $9, output = $10, error = $11
	WHERE job = $1 AND run = $2 AND (status = ` + sqlQueued + ` OR (status = ` + sqlRunning + ` AND $3 <> ` + sqlRunning + `))
	RETURNING ` + runCols
	// qRunDeliver records an ended run's delivery once: the row's lock
	// orders racing records, and the second does not match.
	qRunDeliver = `UPDATE agentd_job_runs SET delivered_at = $3, delivery_error = $4
	WHERE job = $1 AND run = $2 AND delivered_at = 0 AND status NOT IN (` + sqlQueued + `, ` + sqlRunning + `)
	RETURNING ` + runCols
	// qRunPrune removes the ended runs, their delivery not pending,
	// beyond the job's newest $2 (none if it has no more runs than that)
	// and, $3 not '', older than the run id $3; never the newest.
	qRunPrune = `DELETE FROM agentd_job_runs WHERE job = $1 AND status NOT IN (` + sqlQueued + `, ` + sqlRunning + `)
		AND NOT (` + sqlUndelivered + `)
		AND run < (SELECT max(run) FROM agentd_job_runs WHERE job = $1)
		AND run < (SELECT run FROM agentd_job_runs WHERE job = $1 ORDER BY run DESC LIMIT 1 OFFSET $2)
		AND ($3 = '' OR run < $3)`
)

// StartRun records a run taken, or returns the run its job has of that
// id already with created false (see store.JobRunStore). Of racing
// inserts of one run (any nodes), PostgreSQL lets one in; the others wait
// for it to commit, insert nothing, and read it in a statement of their
// own.
func (s *Store) StartRun(ctx context.Context, r store.JobRun) (store.JobRun, bool, error) {
	r, err := store.RunStart(r, time.Now())
	if err != nil {
		return store.JobRun{}, false, fmt.Errorf("postgres: start run: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.JobRun{}, false, store.ErrClosed
	}
	what := "start run " + r.Job + "/" + r.Run
	got, err := scanJobRun(s.pool.QueryRow(ctx, qRunIns, r.Job, r.Run, r.ScheduledAt.UnixNano(), r.Trigger, r.Session, r.Status,
		r.StartedAt.UnixNano(), store.RunNanos(r.EndedAt), r.Error, string(r.Payload), r.Node, r.Delivery, r.MAC))
	if err == nil {
		return got, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.JobRun{}, false, s.readErr(what, err)
	}
	got, err = s.oneRun(ctx, what+": the run taken before", qRun, r.Job, r.Run)
	if errors.Is(err, store.ErrNotFound) && r.Delivery != "" {
		got, err = s.oneRun(ctx, what+": the run of its delivery", qRunOfDelivery, r.Job, r.Delivery)
	}
	if errors.Is(err, store.ErrNotFound) && r.MAC != "" {
		got, err = s.oneRun(ctx, what+": the run of its MAC", qRunOfMAC, r.Job, r.MAC)
	}
	return got, false, err
}

// FinishRun records the end of an open run, or its move from queued to
// running (see store.JobRunStore).
func (s *Store) FinishRun(ctx context.Context, end store.JobRun) (store.JobRun, error) {
	end, err := store.RunEnd(end, time.Now())
	if err != nil {
		return store.JobRun{}, fmt.Errorf("postgres: finish run: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.JobRun{}, store.ErrClosed
	}
	what := "finish run " + end.Job + "/" + end.Run
	got, err := scanJobRun(s.pool.QueryRow(ctx, qRunFinish, end.Job, end.Run, end.Status, store.RunNanos(end.StartedAt),
		store.RunNanos(end.EndedAt), end.Steps, end.TokensIn, end.TokensOut, end.CostUSD, end.Output, end.Error))
	if err == nil {
		return got, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.JobRun{}, s.readErr(what, err)
	}
	now, err := s.oneRun(ctx, what, qRun, end.Job, end.Run)
	if err != nil {
		return store.JobRun{}, err
	}
	return store.JobRun{}, fmt.Errorf("postgres: %s: %w", what, store.RunTransition(now.Status, end.Status))
}

// RecordDelivery records an ended run's delivery, once (see
// store.JobRunStore).
func (s *Store) RecordDelivery(ctx context.Context, job, run string, at time.Time, failure string) (store.JobRun, error) {
	at, failure, err := store.DeliveryRecord(job, run, at, failure, time.Now())
	if err != nil {
		return store.JobRun{}, fmt.Errorf("postgres: record delivery: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.JobRun{}, store.ErrClosed
	}
	what := "record delivery of " + job + "/" + run
	got, err := scanJobRun(s.pool.QueryRow(ctx, qRunDeliver, job, run, at.UnixNano(), failure))
	if err == nil {
		return got, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.JobRun{}, s.readErr(what, err)
	}
	now, err := s.oneRun(ctx, what, qRun, job, run)
	if err != nil {
		return store.JobRun{}, err
	}
	return store.JobRun{}, fmt.Errorf("postgres: %s: %w", what, store.DeliveryConflict(now))
}

// PruneRuns removes the ended, delivered runs of job older than its
// newest keep or scheduled before before (see store.JobRunStore).
func (s *Store) PruneRuns(ctx context.Context, job string, keep int, before time.Time) (int64, error) {
	if err := store.CheckPrune(job, keep); err != nil {
		return 0, fmt.Errorf("postgres: prune runs: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return 0, store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, qRunPrune, job, keep-1, store.PruneBefore(before))
	if err != nil {
		return 0, s.readErr("prune runs of "+job, err)
	}
	return tag.RowsAffected(), nil
}

// JobRuns returns a job's runs newest first, before a run id.
func (s *Store) JobRuns(ctx context.Context, job, before string, limit int) ([]store.JobRun, error) {
	n, err := store.RunLimit(limit)
	if err == nil {
		err = store.CheckExtensionKey("job", job)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: job runs: %w: %v", ErrInvalid, err)
	}
	if before == "" {
		return s.runList(ctx, "job runs", qRuns, job, n)
	}
	return s.runList(ctx, "job runs", qRunsFrom, job, before, n)
}

// OpenRuns returns a job's queued and running runs, oldest first.
func (s *Store) OpenRuns(ctx context.Context, job string) ([]store.JobRun, error) {
	if err := store.CheckExtensionKey("job", job); err != nil {
		return nil, fmt.Errorf("postgres: open runs: %w: %v", ErrInvalid, err)
	}
	return s.runList(ctx, "open runs", qRunsOpen, job)
}

// UndeliveredRuns returns a job's done and error runs whose delivery is
// pending, oldest first.
func (s *Store) UndeliveredRuns(ctx context.Context, job string, limit int) ([]store.JobRun, error) {
	n, err := store.RunLimit(limit)
	if err == nil {
		err = store.CheckExtensionKey("job", job)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: undelivered runs: %w: %v", ErrInvalid, err)
	}
	return s.runList(ctx, "undelivered runs", qRunsUndelivered, job, n)
}

// DeliveryRun returns the run job took for a webhook delivery, or
// store.ErrNotFound.
func (s *Store) DeliveryRun(ctx context.Context, job, delivery string) (store.JobRun, error) {
	err := store.CheckExtensionKey("job", job)
	if err == nil {
		err = store.CheckDelivery(delivery)
	}
	if err != nil {
		return store.JobRun{}, fmt.Errorf("postgres: delivery run: %w: %v", ErrInvalid, err)
	}
	return s.oneRun(ctx, "run of delivery "+job+"/"+delivery, qRunOfDelivery, job, delivery)
}

// MACRun returns the run job took for a webhook request's MAC, or
// store.ErrNotFound.
func (s *Store) MACRun(ctx context.Context, job, mac string) (store.JobRun, error) {
	err := store.CheckExtensionKey("job", job)
	if err == nil {
		err = store.CheckMAC(mac)
	}
	if err != nil {
		return store.JobRun{}, fmt.Errorf("postgres: MAC run: %w: %v", ErrInvalid, err)
	}
	return s.oneRun(ctx, "run of MAC "+job+"/"+mac, qRunOfMAC, job, mac)
}

// runList returns the runs query q with args reads (what names it in
// errors), never nil.
func (s *Store) runList(ctx context.Context, what, q string, args ...any) ([]store.JobRun, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, q, args...)
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
		return store.JobRun{}, fmt.Errorf("postgres: job run: %w: %v", ErrInvalid, err)
	}
	return s.oneRun(ctx, "job run "+job+"/"+run, qRun, job, run)
}

// LastRun returns the newest run of job one of triggers took (any if
// none given), or store.ErrNotFound.
func (s *Store) LastRun(ctx context.Context, job string, triggers ...string) (store.JobRun, error) {
	set, err := store.RunTriggerSet(triggers)
	if err == nil {
		err = store.CheckExtensionKey("job", job)
	}
	if err != nil {
		return store.JobRun{}, fmt.Errorf("postgres: last run: %w: %v", ErrInvalid, err)
	}
	return s.oneRun(ctx, "last run of "+job, qRunLast, job, set)
}

func (s *Store) oneRun(ctx context.Context, what, q string, args ...any) (store.JobRun, error) {
	if s.isDown.Load() {
		return store.JobRun{}, store.ErrClosed
	}
	r, err := scanJobRun(s.pool.QueryRow(ctx, q, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return r, s.readErr(what, err)
	}
	return r, nil
}

func scanJobRun(row pgx.Row) (store.JobRun, error) {
	var r store.JobRun
	var sched, started, ended, steps, delivered int64
	var payload string
	err := row.Scan(&r.Job, &r.Run, &sched, &r.Trigger, &r.Session, &r.Status, &started, &ended, &steps,
		&r.TokensIn, &r.TokensOut, &r.CostUSD, &r.Output, &r.Error, &payload, &r.Node, &r.Delivery, &delivered, &r.DeliveryError, &r.MAC)
	if err != nil {
		return store.JobRun{}, err
	}
	r.Steps = int(steps)
	r.ScheduledAt, r.StartedAt, r.EndedAt = store.RunTime(sched), store.RunTime(started), store.RunTime(ended)
	r.DeliveredAt = store.RunTime(delivered)
	if payload != "" {
		r.Payload = []byte(payload)
	}
	return r, nil
}
