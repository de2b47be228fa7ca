package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"agentd/internal/store"
)

var _ store.AgentStore = (*Store)(nil)

// schemaAgents (schema v7) holds the dynamic agents' instances, and gives
// usage rows their payer and account and inbox items their hops, as in
// SQLite: the same table, indexes and times (unix nanoseconds, 0 for
// none). Ids are ordered byte by byte (COLLATE "C"),
// as SQLite orders them, so that a listing's cursor means the same in
// both. Adding the columns rewrites no row (their defaults are
// constants); usage.payer is empty in the rows written before, which
// UsageSince reads as paid by their agent.
var schemaAgents = `
CREATE TABLE agentd_instances (
	id           text COLLATE "C" PRIMARY KEY,
	type         text NOT NULL,
	descriptor   text NOT NULL,
	agent        text NOT NULL,
	template     text NOT NULL DEFAULT '',
	name         text NOT NULL DEFAULT '',
	parent       text NOT NULL DEFAULT '',
	root         text NOT NULL DEFAULT '',
	depth        bigint NOT NULL DEFAULT 0,
	payer        text NOT NULL DEFAULT '',
	account      text NOT NULL DEFAULT '',
	turn_limit   double precision NOT NULL DEFAULT 0,
	report       text NOT NULL DEFAULT '',
	report_to    text NOT NULL DEFAULT '',
	origin_turn  bigint NOT NULL DEFAULT 0,
	origin_call  text NOT NULL DEFAULT '',
	task         text NOT NULL DEFAULT '',
	hops         bigint NOT NULL DEFAULT 0,
	state        text NOT NULL,
	result       text NOT NULL DEFAULT '',
	turn         bigint NOT NULL DEFAULT 0,
	created_at   bigint NOT NULL,
	updated_at   bigint NOT NULL,
	ended_at     bigint NOT NULL DEFAULT 0,
	reported_at  bigint NOT NULL DEFAULT 0,
	report_error text NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX agentd_instances_descriptor ON agentd_instances (descriptor);
CREATE UNIQUE INDEX agentd_instances_agent ON agentd_instances (agent);
CREATE INDEX agentd_instances_parent ON agentd_instances (parent, report_to, state);
CREATE INDEX agentd_instances_root ON agentd_instances (root);
CREATE INDEX agentd_instances_type ON agentd_instances (type, created_at);
CREATE INDEX agentd_instances_created ON agentd_instances (created_at, id);
CREATE INDEX agentd_instances_unreported ON agentd_instances (ended_at) WHERE ` + sqlUnreported + `;
CREATE INDEX agentd_instances_live ON agentd_instances (type) WHERE ` + sqlLive + `;

ALTER TABLE usage ADD COLUMN payer text NOT NULL DEFAULT '', ADD COLUMN account text NOT NULL DEFAULT '';
CREATE INDEX usage_payer_ts ON usage (payer, ts) WHERE payer <> '';
CREATE INDEX usage_account ON usage (account) WHERE account <> '';

ALTER TABLE inbox ADD COLUMN hops bigint NOT NULL DEFAULT 0;
`

// schemaInstanceBudgets (schema v8) gives an instance the budget options
// of its first input, as in SQLite. Its default is a constant: adding it
// rewrites no row.
const schemaInstanceBudgets = `ALTER TABLE agentd_instances ADD COLUMN budgets text NOT NULL DEFAULT '';`

// instancesLock is the advisory lock key under which CreateInstance
// counts and inserts, so that creators on every node pass a limit one at
// a time.
const instancesLock = 0x61676e746401 // "agntd\1"

// The conditions the partial indexes and the queries share, from the
// store's lists.
var (
	sqlLive       = "state IN (" + sqlList(store.LiveAgentStates()) + ")"
	sqlOpen       = sqlLive + " AND state IN ('" + store.AgentStarting + "', '" + store.AgentRunning + "')"
	sqlTasks      = "type IN (" + sqlList(store.TaskTypes()) + ")"
	sqlContacts   = "type IN (" + sqlList(store.ContactTypes()) + ")"
	sqlEnded      = "state NOT IN (" + sqlList(store.LiveAgentStates()) + ")"
	sqlUnreported = "ended_at <> 0 AND reported_at = 0 AND report <> ''"
)

// sqlList quotes words (constants of the store: no quote in them) as an
// SQL list.
func sqlList(words []string) string { return "'" + strings.Join(words, "', '") + "'" }

const instCols = `id, type, descriptor, agent, template, name, parent, root, depth, payer, account, turn_limit, report, report_to,
	origin_turn, origin_call, task, hops, state, result, turn, created_at, updated_at, ended_at, reported_at, report_error, budgets`

var (
	qInst           = `SELECT ` + instCols + ` FROM agentd_instances WHERE id = $1`
	qInstByDesc     = `SELECT ` + instCols + ` FROM agentd_instances WHERE descriptor = $1`
	qInstByAgent    = `SELECT ` + instCols + ` FROM agentd_instances WHERE agent = $1`
	qInstLineage    = `SELECT root, depth FROM agentd_instances WHERE agent = $1`
	qInstIns        = `INSERT INTO agentd_instances (` + instCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, '', $20, $21, $22, 0, 0, '', $23)`
	qInstChildren   = `SELECT count(*) FROM agentd_instances WHERE parent = $1 AND report_to = $2 AND ` + sqlLive + ` AND type = '` + store.InstanceSubagent + `'`
	qInstLiveTasks  = `SELECT count(*) FROM agentd_instances WHERE ` + sqlLive + ` AND ` + sqlTasks
	qInstContacts   = `SELECT count(*) FROM agentd_instances WHERE ` + sqlLive + ` AND ` + sqlContacts
	qInstUnreported = `SELECT ` + instCols + ` FROM agentd_instances WHERE ` + sqlUnreported + ` ORDER BY ended_at, id LIMIT $1`
	qInstOpen       = `SELECT ` + instCols + ` FROM agentd_instances WHERE ` + sqlOpen + ` ORDER BY created_at, id`
	// qInstState moves an instance as store.InstanceTransition allows
	// (the same rule); the row's lock orders racing moves.
	qInstState = `UPDATE agentd_instances SET state = $2, updated_at = $3,
		ended_at = CASE WHEN $4 THEN $3 ELSE ended_at END, result = CASE WHEN $4 THEN $5 ELSE result END,
		turn = CASE WHEN turn = 0 THEN $6 ELSE turn END
	WHERE id = $1 AND ` + sqlLive + ` AND state <> $2 AND $2 <> '` + store.AgentStarting + `' RETURNING 1`
	qInstReport = `UPDATE agentd_instances SET reported_at = $2, report_error = $3, updated_at = $2
	WHERE id = $1 AND reported_at = 0 AND ` + sqlEnded + ` RETURNING 1`
	qInstRefusal = `UPDATE agentd_instances SET reported_at = CASE WHEN reported_at = 0 THEN $2 ELSE reported_at END,
	report_error = $3, updated_at = $2 WHERE id = $1 AND report_error = '' AND ` + sqlEnded + ` RETURNING 1`
	qMostRecent = `SELECT ` + prefixed("i.", instCols) + ` FROM agentd_instances i JOIN sessions s ON s.agent = i.agent
		WHERE i.type = $1 AND i.` + sqlLive + ` ORDER BY s.updated_at DESC, s.id DESC LIMIT 1`
	qInstCosts    = `SELECT agent, sum(cost_usd) FROM usage WHERE agent = ANY($1) GROUP BY agent`
	qUsageAccount = `SELECT coalesce(sum(cost_usd), 0) FROM usage WHERE account = $1 AND account <> ''`
)

// prefixed puts p before each column of a list.
func prefixed(p, cols string) string {
	fs := strings.Split(cols, ",")
	for i, f := range fs {
		fs[i] = p + strings.TrimSpace(f)
	}
	return strings.Join(fs, ", ")
}

// CreateInstance inserts an instance unless its descriptor has one (see
// store.AgentStore). It counts the limits and inserts in one transaction
// under an advisory lock, so that creators on any node pass a limit one
// at a time; a creator that finds the descriptor taken takes no count.
func (s *Store) CreateInstance(ctx context.Context, a store.Instance, l store.InstanceLimits) (store.Instance, bool, error) {
	a, err := store.InstanceCreate(a, time.Now())
	if err != nil {
		return store.Instance{}, false, fmt.Errorf("postgres: create instance: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return store.Instance{}, false, store.ErrClosed
	}
	what := "create instance " + a.ID
	var created bool
	var refused error
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(instancesLock)); err != nil {
			return err
		}
		got, err := scanInstance(tx.QueryRow(ctx, qInstByDesc, a.Descriptor))
		if err == nil {
			a = got
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var found bool
		var root string
		var depth, children, live int64
		if a.Parent != "" {
			err := tx.QueryRow(ctx, qInstLineage, a.Parent).Scan(&root, &depth)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			found = err == nil
		}
		a.Root, a.Depth = store.Lineage(a, found, root, int(depth))
		if l.MaxChildren > 0 && a.Type == store.InstanceSubagent {
			if err := tx.QueryRow(ctx, qInstChildren, a.Parent, a.ReportTo).Scan(&children); err != nil {
				return err
			}
		}
		if count, contacts := store.LiveCounted(a.Type, l); count {
			q := qInstLiveTasks
			if contacts {
				q = qInstContacts
			}
			if err := tx.QueryRow(ctx, q).Scan(&live); err != nil {
				return err
			}
		}
		if refused = store.InstanceRefusal(a, l, a.Depth, int(children), int(live)); refused != nil {
			return nil
		}
		_, err = tx.Exec(ctx, qInstIns, a.ID, a.Type, a.Descriptor, a.Agent, a.Template, a.Name, a.Parent, a.Root, int64(a.Depth),
			a.Payer, a.Account, a.TurnLimit, a.Report, a.ReportTo, a.OriginTurn, a.OriginCall, a.Task, int64(a.Hops), a.State,
			a.Turn, a.CreatedAt.UnixNano(), a.UpdatedAt.UnixNano(), a.Budgets)
		created = err == nil
		return err
	})
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "23505":
		return store.Instance{}, false, fmt.Errorf("postgres: %s: %w: its id or agent %q is another instance's", what, store.ErrConflict, a.Agent)
	case err != nil:
		return store.Instance{}, false, s.readErr(what, err)
	case refused != nil:
		return store.Instance{}, false, fmt.Errorf("postgres: %s: %w", what, refused)
	}
	return a, created, nil
}

// SetInstanceState moves an instance forward (see store.AgentStore).
func (s *Store) SetInstanceState(ctx context.Context, id, state, result string, turn int64) (bool, error) {
	result, err := store.CheckInstanceState(id, state, result, turn)
	if err != nil {
		return false, fmt.Errorf("postgres: set instance state: %w: %v", ErrInvalid, err)
	}
	if s.isDown.Load() {
		return false, store.ErrClosed
	}
	ok, err := s.instChanged(ctx, "set instance state of "+id, id,
		qInstState, id, state, time.Now().UnixNano(), store.AgentEnded(state), result, turn)
	return ok, err
}

// RecordReport records an ended instance's report once (see
// store.AgentStore).
func (s *Store) RecordReport(ctx context.Context, id, failure string) (bool, error) {
	if !store.IsInstanceID(id) {
		return false, fmt.Errorf("postgres: record report: %w: instance id %q", ErrInvalid, id)
	}
	if s.isDown.Load() {
		return false, store.ErrClosed
	}
	what := "record report of " + id
	ok, err := s.instChanged(ctx, what, id, qInstReport, id, time.Now().UnixNano(), store.RunText(failure, store.MaxInstanceResult))
	if err != nil || ok {
		return ok, err
	}
	if got, err := s.Instance(ctx, id); err == nil && !store.AgentEnded(got.State) {
		return false, fmt.Errorf("postgres: %s: %w", what, store.ReportConflict(got))
	}
	return false, nil
}

// RecordRefusal records that an ended instance's report was refused
// after it was accepted (see store.AgentStore).
func (s *Store) RecordRefusal(ctx context.Context, id, failure string) (bool, error) {
	if !store.IsInstanceID(id) || failure == "" {
		return false, fmt.Errorf("postgres: record refusal: %w: instance id %q, failure %q", ErrInvalid, id, failure)
	}
	if s.isDown.Load() {
		return false, store.ErrClosed
	}
	what := "record refusal of " + id
	ok, err := s.instChanged(ctx, what, id, qInstRefusal, id, time.Now().UnixNano(), store.RunText(failure, store.MaxInstanceResult))
	if err != nil || ok {
		return ok, err
	}
	if got, err := s.Instance(ctx, id); err == nil && !store.AgentEnded(got.State) {
		return false, fmt.Errorf("postgres: %s: %w", what, store.ReportConflict(got))
	}
	return false, nil
}

// instChanged runs an update of instance id that returns a row when it
// changes it, and reports whether it did; one that changed nothing is
// ErrNotFound if there is no such instance.
func (s *Store) instChanged(ctx context.Context, what, id, q string, args ...any) (bool, error) {
	var one int
	err := s.pool.QueryRow(ctx, q, args...).Scan(&one)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, s.readErr(what, err)
	}
	if _, err := s.Instance(ctx, id); err != nil {
		return false, err
	}
	return false, nil
}

// Instance returns an instance by id, or store.ErrNotFound.
func (s *Store) Instance(ctx context.Context, id string) (store.Instance, error) {
	return s.oneInstance(ctx, "instance "+id, qInst, id)
}

// InstanceByDescriptor returns the instance of a descriptor, or
// store.ErrNotFound.
func (s *Store) InstanceByDescriptor(ctx context.Context, d string) (store.Instance, error) {
	return s.oneInstance(ctx, "instance of "+d, qInstByDesc, d)
}

// InstanceByAgent returns the instance whose sessions run under agent, or
// store.ErrNotFound.
func (s *Store) InstanceByAgent(ctx context.Context, agent string) (store.Instance, error) {
	return s.oneInstance(ctx, "instance of agent "+agent, qInstByAgent, agent)
}

// MostRecent returns the live instance of typ whose session was updated
// last, or store.ErrNotFound.
func (s *Store) MostRecent(ctx context.Context, typ string) (store.Instance, error) {
	return s.oneInstance(ctx, "most recent "+typ, qMostRecent, typ)
}

func (s *Store) oneInstance(ctx context.Context, what, q string, args ...any) (store.Instance, error) {
	if s.isDown.Load() {
		return store.Instance{}, store.ErrClosed
	}
	for _, a := range args {
		if t, ok := a.(string); ok && !validText(t) {
			return store.Instance{}, fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound) // no text PostgreSQL keeps
		}
	}
	a, err := scanInstance(s.pool.QueryRow(ctx, q, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return a, s.readErr(what, err)
	}
	return a, nil
}

// validText reports whether PostgreSQL's text can hold s.
func validText(s string) bool { return !strings.ContainsRune(s, 0) && strings.ToValidUTF8(s, "") == s }

// UnreportedInstances returns ended instances whose report is pending,
// oldest end first.
func (s *Store) UnreportedInstances(ctx context.Context, limit int) ([]store.Instance, error) {
	n, _, _, err := store.InstanceQuery(store.AgentFilter{Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("postgres: unreported instances: %w: %v", ErrInvalid, err)
	}
	return s.instanceList(ctx, "unreported instances", qInstUnreported, n)
}

// OpenInstances returns the instances starting or running, oldest first.
func (s *Store) OpenInstances(ctx context.Context) ([]store.Instance, error) {
	return s.instanceList(ctx, "open instances", qInstOpen)
}

// Instances lists the instances f selects, newest first. The query names
// only the conditions f sets.
func (s *Store) Instances(ctx context.Context, f store.AgentFilter) ([]store.Instance, string, error) {
	limit, created, id, err := store.InstanceQuery(f)
	if errors.Is(err, store.ErrBadCursor) {
		return nil, "", fmt.Errorf("postgres: instances: %w", err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("postgres: instances: %w: %v", ErrInvalid, err)
	}
	for _, t := range []string{f.Parent, f.Root} {
		if !validText(t) {
			return nil, "", nil // no instance has it
		}
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	for _, c := range []struct{ col, v string }{{"type", f.Type}, {"parent", f.Parent}, {"root", f.Root}, {"state", f.State}} {
		if c.v != "" {
			where = append(where, c.col+" = "+arg(c.v))
		}
	}
	if f.Live {
		where = append(where, sqlLive)
	}
	if id != "" {
		c, i := arg(created), arg(id)
		where = append(where, "(created_at, id) < ("+c+", "+i+")")
	}
	q := `SELECT ` + instCols + ` FROM agentd_instances`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT " + arg(limit+1)
	rows, err := s.instanceList(ctx, "instances", q, args...)
	if err != nil {
		return nil, "", err
	}
	if len(rows) <= limit {
		return rows, "", nil
	}
	return rows[:limit], store.InstanceCursor(rows[limit-1]), nil
}

// instanceList returns the instances query q reads, never nil.
func (s *Store) instanceList(ctx context.Context, what, q string, args ...any) ([]store.Instance, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.readErr(what, err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, func(r store.Rows) (store.Instance, error) { return scanInstance(r) })
	if err != nil {
		return nil, s.readErr(what, err)
	}
	return out, nil
}

// InstanceCosts sums the usage of agents, by agent.
func (s *Store) InstanceCosts(ctx context.Context, ids []string) (map[string]float64, error) {
	if len(ids) > store.MaxInstanceLimit {
		return nil, fmt.Errorf("postgres: instance costs: %w: %d agents, at most %d", ErrInvalid, len(ids), store.MaxInstanceLimit)
	}
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	out := map[string]float64{}
	var valid []string
	for _, id := range ids {
		if validText(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, qInstCosts, valid)
	if err != nil {
		return nil, s.readErr("instance costs", err)
	}
	defer rows.Close()
	for rows.Next() {
		var agent string
		var cost float64
		if err := rows.Scan(&agent, &cost); err != nil {
			return nil, s.readErr("instance costs", err)
		}
		out[agent] = cost
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("instance costs", err)
	}
	return out, nil
}

// UsageOfAccount sums the cost of the usage recorded with account.
func (s *Store) UsageOfAccount(ctx context.Context, account string) (float64, error) {
	if account == "" {
		return 0, fmt.Errorf("postgres: usage of account: %w: empty account", ErrInvalid)
	}
	if s.isDown.Load() {
		return 0, store.ErrClosed
	}
	if !validText(account) {
		return 0, nil
	}
	var cost float64
	if err := s.pool.QueryRow(ctx, qUsageAccount, account).Scan(&cost); err != nil {
		return 0, s.readErr("usage of account", err)
	}
	return cost, nil
}

func scanInstance(row pgx.Row) (store.Instance, error) {
	var a store.Instance
	var depth, hops, created, updated, ended, reported int64
	err := row.Scan(&a.ID, &a.Type, &a.Descriptor, &a.Agent, &a.Template, &a.Name, &a.Parent, &a.Root, &depth, &a.Payer, &a.Account,
		&a.TurnLimit, &a.Report, &a.ReportTo, &a.OriginTurn, &a.OriginCall, &a.Task, &hops, &a.State, &a.Result, &a.Turn,
		&created, &updated, &ended, &reported, &a.ReportError, &a.Budgets)
	if err != nil {
		return store.Instance{}, err
	}
	a.Depth, a.Hops = int(depth), int(hops)
	a.CreatedAt, a.UpdatedAt = store.RunTime(created), store.RunTime(updated)
	a.EndedAt, a.ReportedAt = store.RunTime(ended), store.RunTime(reported)
	return a, nil
}
