package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"agentd/internal/store"
)

var _ store.AgentStore = (*Store)(nil)

// schemaAgents (schema v13) holds the dynamic agents' instances, and gives
// usage rows their payer and account and inbox items their hops.
//
// agentd_instances has a row per instance, keyed by its cuid2; descriptor
// and agent are unique, so that what made an instance finds it again and
// a permanent agent has one. Its indexes serve what is asked of it: a
// parent's children by session and state (the live-children limit, the
// tree), a root's tree, a type's newest, the newest of all, the ended
// instances whose report is pending (partial), the live ones by type
// (partial: the live limit counts it, the recovery reads the open ones).
// Times are unix nanoseconds, 0 for none (ended_at, reported_at).
//
// usage.payer is empty in the rows written before it: UsageSince reads such
// a row as paid by its agent, so the upgrade rewrites no row, and a new
// row's payer is never empty (its agent by default). usage_payer_ts holds
// the rows with a payer alone, usage_account those with an account.
var schemaAgents = `
CREATE TABLE agentd_instances (
	id           TEXT PRIMARY KEY,
	type         TEXT NOT NULL,
	descriptor   TEXT NOT NULL,
	agent        TEXT NOT NULL,
	template     TEXT NOT NULL DEFAULT '',
	name         TEXT NOT NULL DEFAULT '',
	parent       TEXT NOT NULL DEFAULT '',
	root         TEXT NOT NULL DEFAULT '',
	depth        INTEGER NOT NULL DEFAULT 0,
	payer        TEXT NOT NULL DEFAULT '',
	account      TEXT NOT NULL DEFAULT '',
	turn_limit   REAL NOT NULL DEFAULT 0,
	report       TEXT NOT NULL DEFAULT '',
	report_to    TEXT NOT NULL DEFAULT '',
	origin_turn  INTEGER NOT NULL DEFAULT 0,
	origin_call  TEXT NOT NULL DEFAULT '',
	task         TEXT NOT NULL DEFAULT '',
	hops         INTEGER NOT NULL DEFAULT 0,
	state        TEXT NOT NULL,
	result       TEXT NOT NULL DEFAULT '',
	turn         INTEGER NOT NULL DEFAULT 0,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	ended_at     INTEGER NOT NULL DEFAULT 0,
	reported_at  INTEGER NOT NULL DEFAULT 0,
	report_error TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX agentd_instances_descriptor ON agentd_instances (descriptor);
CREATE UNIQUE INDEX agentd_instances_agent ON agentd_instances (agent);
CREATE INDEX agentd_instances_parent ON agentd_instances (parent, report_to, state);
CREATE INDEX agentd_instances_root ON agentd_instances (root);
CREATE INDEX agentd_instances_type ON agentd_instances (type, created_at);
CREATE INDEX agentd_instances_created ON agentd_instances (created_at, id);
CREATE INDEX agentd_instances_unreported ON agentd_instances (ended_at) WHERE ` + sqlUnreported + `;
CREATE INDEX agentd_instances_live ON agentd_instances (type) WHERE ` + sqlLive + `;

ALTER TABLE usage ADD COLUMN payer TEXT NOT NULL DEFAULT '';
ALTER TABLE usage ADD COLUMN account TEXT NOT NULL DEFAULT '';
CREATE INDEX usage_payer_ts ON usage (payer, ts) WHERE payer <> '';
CREATE INDEX usage_account ON usage (account) WHERE account <> '';

ALTER TABLE inbox ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;
`

// schemaInstanceBudgets (schema v14) gives an instance the budget options
// of its first input (store.Instance.Budgets). The rows written before it
// have none: their first input was submitted before the upgrade, or it
// is submitted again without them.
const schemaInstanceBudgets = `ALTER TABLE agentd_instances ADD COLUMN budgets TEXT NOT NULL DEFAULT '';`

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
	qInst           = `SELECT ` + instCols + ` FROM agentd_instances WHERE id = ?`
	qInstByDesc     = `SELECT ` + instCols + ` FROM agentd_instances WHERE descriptor = ?`
	qInstByAgent    = `SELECT ` + instCols + ` FROM agentd_instances WHERE agent = ?`
	qInstLineage    = `SELECT root, depth FROM agentd_instances WHERE agent = ?`
	qInstIns        = `INSERT INTO agentd_instances (` + instCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?, 0, 0, '', ?)`
	qInstChildren   = `SELECT count(*) FROM agentd_instances WHERE parent = ? AND report_to = ? AND ` + sqlLive + ` AND type = '` + store.InstanceSubagent + `'`
	qInstLiveTasks  = `SELECT count(*) FROM agentd_instances WHERE ` + sqlLive + ` AND ` + sqlTasks
	qInstContacts   = `SELECT count(*) FROM agentd_instances WHERE ` + sqlLive + ` AND ` + sqlContacts
	qInstUnreported = `SELECT ` + instCols + ` FROM agentd_instances WHERE ` + sqlUnreported + ` ORDER BY ended_at, id LIMIT ?`
	// qInstOpen reads agentd_instances_live (the unary + keeps the
	// planner off the created index, which would read every instance).
	qInstOpen = `SELECT ` + instCols + ` FROM agentd_instances WHERE ` + sqlOpen + ` ORDER BY +created_at, id`
	// qInstState moves an instance as store.InstanceTransition allows
	// (the same rule: out of no end, to another state, never to
	// starting); ?4 is 1 for an end.
	qInstState = `UPDATE agentd_instances SET state = ?2, updated_at = ?3,
		ended_at = iif(?4, ?3, ended_at), result = iif(?4, ?5, result), turn = iif(turn = 0, ?6, turn)
	WHERE id = ?1 AND ` + sqlLive + ` AND state <> ?2 AND ?2 <> '` + store.AgentStarting + `'`
	qInstReport = `UPDATE agentd_instances SET reported_at = ?2, report_error = ?3, updated_at = ?2
	WHERE id = ?1 AND reported_at = 0 AND ` + sqlEnded
	qInstRefusal = `UPDATE agentd_instances SET reported_at = iif(reported_at = 0, ?2, reported_at), report_error = ?3,
	updated_at = ?2 WHERE id = ?1 AND report_error = '' AND ` + sqlEnded
	// qMostRecent joins each live instance of a type to its sessions
	// (sessions' UNIQUE (agent, key)).
	qMostRecent = `SELECT ` + prefixed("i.", instCols) + ` FROM agentd_instances i JOIN sessions s ON s.agent = i.agent
		WHERE i.type = ? AND i.` + sqlLive + ` ORDER BY s.updated_at DESC, s.id DESC LIMIT 1`
	qUsageAccount = `SELECT coalesce(sum(cost_usd), 0) FROM usage WHERE account = ? AND account <> ''`
)

// prefixed puts p before each column of a list.
func prefixed(p, cols string) string {
	fs := strings.Split(cols, ",")
	for i, f := range fs {
		fs[i] = p + strings.TrimSpace(f)
	}
	return strings.Join(fs, ", ")
}

// agentStmts are the writer's statements of instances.
type agentStmts struct {
	byDesc, lineage, ins, children, live, contacts, state, report, refusal, get *sql.Stmt
}

func (a *agentStmts) list() []struct {
	dst **sql.Stmt
	sql string
} {
	return []struct {
		dst **sql.Stmt
		sql string
	}{
		{&a.byDesc, qInstByDesc}, {&a.lineage, qInstLineage}, {&a.ins, qInstIns}, {&a.children, qInstChildren},
		{&a.live, qInstLiveTasks}, {&a.contacts, qInstContacts}, {&a.state, qInstState}, {&a.report, qInstReport},
		{&a.refusal, qInstRefusal}, {&a.get, qInst},
	}
}

// CreateInstance inserts an instance unless its descriptor has one (see
// store.AgentStore). The writer applies one write at a time, so the
// limits are counted and the row inserted with no other write between.
func (s *Store) CreateInstance(ctx context.Context, a store.Instance, l store.InstanceLimits) (store.Instance, bool, error) {
	a, err := store.InstanceCreate(a, time.Now())
	if err != nil {
		return store.Instance{}, false, fmt.Errorf("sqlite: create instance: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opInstCreate)
	req.inst, req.limits = a, l
	if err := s.send(ctx, req); err != nil {
		return store.Instance{}, false, err
	}
	out, created, err := req.inst, req.created, req.err
	if err == nil {
		err = req.refused
	}
	s.putRequest(req)
	if err != nil {
		return store.Instance{}, false, err
	}
	return out, created, nil
}

// SetInstanceState moves an instance forward (see store.AgentStore).
func (s *Store) SetInstanceState(ctx context.Context, id, state, result string, turn int64) (bool, error) {
	result, err := store.CheckInstanceState(id, state, result, turn)
	if err != nil {
		return false, fmt.Errorf("sqlite: set instance state: %w: %v", ErrInvalid, err)
	}
	req := s.getRequest(ctx, opInstState)
	req.inst = store.Instance{ID: id, State: state, Result: result, Turn: turn}
	return s.sendInstance(ctx, req)
}

// RecordReport records an ended instance's report once (see
// store.AgentStore).
func (s *Store) RecordReport(ctx context.Context, id, failure string) (bool, error) {
	if !store.IsInstanceID(id) {
		return false, fmt.Errorf("sqlite: record report: %w: instance id %q", ErrInvalid, id)
	}
	req := s.getRequest(ctx, opInstReport)
	req.inst = store.Instance{ID: id, ReportError: store.RunText(failure, store.MaxInstanceResult)}
	return s.sendInstance(ctx, req)
}

// RecordRefusal records that an ended instance's report was refused
// after it was accepted (see store.AgentStore).
func (s *Store) RecordRefusal(ctx context.Context, id, failure string) (bool, error) {
	if !store.IsInstanceID(id) || failure == "" {
		return false, fmt.Errorf("sqlite: record refusal: %w: instance id %q, failure %q", ErrInvalid, id, failure)
	}
	req := s.getRequest(ctx, opInstRefusal)
	req.inst = store.Instance{ID: id, ReportError: store.RunText(failure, store.MaxInstanceResult)}
	return s.sendInstance(ctx, req)
}

// sendInstance hands a state or report request to the writer and returns
// whether it changed the row.
func (s *Store) sendInstance(ctx context.Context, req *request) (bool, error) {
	if err := s.send(ctx, req); err != nil {
		return false, err
	}
	changed, err := req.created, req.err
	s.putRequest(req)
	return changed, err
}

func (w *writer) applyInstCreate(r *request) error {
	a := &r.inst
	r.refused = nil
	got, err := scanInstance(w.agents.byDesc.QueryRow(a.Descriptor))
	if err == nil {
		*a, r.created = got, false
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: create instance %s: %w", a.ID, err)
	}
	var found bool
	var root string
	var depth, children, live int
	if a.Parent != "" {
		err := w.agents.lineage.QueryRow(a.Parent).Scan(&root, &depth)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: create instance %s: parent: %w", a.ID, err)
		}
		found = err == nil
	}
	a.Root, a.Depth = store.Lineage(*a, found, root, depth)
	if l := r.limits; l.MaxChildren > 0 && a.Type == store.InstanceSubagent {
		if err := w.agents.children.QueryRow(a.Parent, a.ReportTo).Scan(&children); err != nil {
			return fmt.Errorf("sqlite: create instance %s: children: %w", a.ID, err)
		}
	}
	if count, contacts := store.LiveCounted(a.Type, r.limits); count {
		q := w.agents.live
		if contacts {
			q = w.agents.contacts
		}
		if err := q.QueryRow().Scan(&live); err != nil {
			return fmt.Errorf("sqlite: create instance %s: live: %w", a.ID, err)
		}
	}
	// A refusal is the request's answer, not a failed write: the rest of
	// its group is written.
	if r.refused = store.InstanceRefusal(*a, r.limits, a.Depth, children, live); r.refused != nil {
		r.refused = fmt.Errorf("sqlite: create instance %s: %w", a.ID, r.refused)
		return nil
	}
	_, err = w.agents.ins.Exec(a.ID, a.Type, a.Descriptor, a.Agent, a.Template, a.Name, a.Parent, a.Root, a.Depth, a.Payer, a.Account,
		a.TurnLimit, a.Report, a.ReportTo, a.OriginTurn, a.OriginCall, a.Task, a.Hops, a.State, a.Turn,
		a.CreatedAt.UnixNano(), a.UpdatedAt.UnixNano(), a.Budgets)
	if isUnique(err) {
		return fmt.Errorf("sqlite: create instance %s: %w: its id or agent %q is another instance's", a.ID, store.ErrConflict, a.Agent)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create instance %s: %w", a.ID, err)
	}
	r.created = true
	return nil
}

func (w *writer) applyInstState(r *request, now int64) error {
	a := &r.inst
	ended := store.AgentEnded(a.State)
	res, err := w.agents.state.Exec(a.ID, a.State, now, ended, a.Result, a.Turn)
	return w.instChanged(r, "set instance state", res, err)
}

func (w *writer) applyInstReport(r *request, now int64) error {
	a := &r.inst
	stmt, what := w.agents.report, "record report"
	if r.op == opInstRefusal {
		stmt, what = w.agents.refusal, "record refusal"
	}
	res, err := stmt.Exec(a.ID, now, a.ReportError)
	if err := w.instChanged(r, what, res, err); err != nil || r.created {
		return err
	}
	// Not recorded: already, or the instance is still live.
	if got, gerr := scanInstance(w.agents.get.QueryRow(a.ID)); gerr == nil && !store.AgentEnded(got.State) {
		return fmt.Errorf("sqlite: record report: %w", store.ReportConflict(got))
	}
	return nil
}

// instChanged sets r.created to whether an update of instance r.inst.ID
// changed its row; one that changed nothing is ErrNotFound if there is no
// such instance.
func (w *writer) instChanged(r *request, what string, res sql.Result, err error) error {
	id := r.inst.ID
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		return fmt.Errorf("sqlite: %s of %s: %w", what, id, err)
	}
	r.created = n == 1
	if n == 0 {
		if _, err := scanInstance(w.agents.get.QueryRow(id)); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("sqlite: %s: instance %s: %w", what, id, store.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("sqlite: %s of %s: %w", what, id, err)
		}
	}
	return nil
}

// isUnique reports whether err is a write refused by a unique index or a
// primary key.
func isUnique(err error) bool {
	var se *sqlitedrv.Error
	return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

// Instance returns an instance by id, or store.ErrNotFound.
func (s *Store) Instance(ctx context.Context, id string) (store.Instance, error) {
	return s.oneInstance(ctx, "instance "+id, s.r.inst, id)
}

// InstanceByDescriptor returns the instance of a descriptor, or
// store.ErrNotFound.
func (s *Store) InstanceByDescriptor(ctx context.Context, d string) (store.Instance, error) {
	return s.oneInstance(ctx, "instance of "+d, s.r.instByDesc, d)
}

// InstanceByAgent returns the instance whose sessions run under agent, or
// store.ErrNotFound.
func (s *Store) InstanceByAgent(ctx context.Context, agent string) (store.Instance, error) {
	return s.oneInstance(ctx, "instance of agent "+agent, s.r.instByAgent, agent)
}

// MostRecent returns the live instance of typ whose session was updated
// last, or store.ErrNotFound.
func (s *Store) MostRecent(ctx context.Context, typ string) (store.Instance, error) {
	return s.oneInstance(ctx, "most recent "+typ, s.r.mostRecent, typ)
}

func (s *Store) oneInstance(ctx context.Context, what string, q *stmt, args ...any) (store.Instance, error) {
	if s.isDown.Load() {
		return store.Instance{}, store.ErrClosed
	}
	a, err := scanInstance(q.QueryRowContext(ctx, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("sqlite: %s: %w", what, store.ErrNotFound)
	}
	if err != nil {
		return a, s.readErr(what, err)
	}
	return a, nil
}

// UnreportedInstances returns ended instances whose report is pending,
// oldest end first.
func (s *Store) UnreportedInstances(ctx context.Context, limit int) ([]store.Instance, error) {
	n, _, _, err := store.InstanceQuery(store.AgentFilter{Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("sqlite: unreported instances: %w: %v", ErrInvalid, err)
	}
	return s.instanceList(ctx, "unreported instances", s.r.instUnreported.QueryContext, n)
}

// OpenInstances returns the instances starting or running, oldest first.
func (s *Store) OpenInstances(ctx context.Context) ([]store.Instance, error) {
	return s.instanceList(ctx, "open instances", s.r.instOpen.QueryContext)
}

// Instances lists the instances f selects, newest first. The query names
// only the conditions f sets, so that the planner uses the index they
// allow.
func (s *Store) Instances(ctx context.Context, f store.AgentFilter) ([]store.Instance, string, error) {
	limit, created, id, err := store.InstanceQuery(f)
	if errors.Is(err, store.ErrBadCursor) {
		return nil, "", fmt.Errorf("sqlite: instances: %w", err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("sqlite: instances: %w: %v", ErrInvalid, err)
	}
	q, args := instancesSQL(f, created, id)
	rows, err := s.instanceList(ctx, "instances", func(ctx context.Context, args ...any) (*sql.Rows, error) {
		return s.rdb.QueryContext(ctx, q, args...)
	}, append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	if len(rows) <= limit {
		return rows, "", nil
	}
	return rows[:limit], store.InstanceCursor(rows[limit-1]), nil
}

// instancesSQL builds the listing of f after the cursor (created, id);
// its last placeholder is the limit's, not among the arguments.
func instancesSQL(f store.AgentFilter, created int64, id string) (string, []any) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"type", f.Type}, {"parent", f.Parent}, {"root", f.Root}, {"state", f.State}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if f.Live {
		where = append(where, sqlLive)
	}
	if id != "" {
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, created, created, id)
	}
	q := `SELECT ` + instCols + ` FROM agentd_instances`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	return q + " ORDER BY created_at DESC, id DESC LIMIT ?", args
}

// instanceList returns the instances query reads, never nil.
func (s *Store) instanceList(ctx context.Context, what string, query func(context.Context, ...any) (*sql.Rows, error),
	args ...any) ([]store.Instance, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := query(ctx, args...)
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
		return nil, fmt.Errorf("sqlite: instance costs: %w: %d agents, at most %d", ErrInvalid, len(ids), store.MaxInstanceLimit)
	}
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	out := map[string]float64{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT agent, sum(cost_usd) FROM usage WHERE agent IN (?`+
		strings.Repeat(", ?", len(ids)-1)+`) GROUP BY agent`, args...)
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
		return 0, fmt.Errorf("sqlite: usage of account: %w: empty account", ErrInvalid)
	}
	if s.isDown.Load() {
		return 0, store.ErrClosed
	}
	var cost float64
	if err := s.r.usageAccount.QueryRowContext(ctx, account).Scan(&cost); err != nil {
		return 0, s.readErr("usage of account", err)
	}
	return cost, nil
}

func scanInstance(row scanner) (store.Instance, error) {
	var a store.Instance
	var created, updated, ended, reported int64
	err := row.Scan(&a.ID, &a.Type, &a.Descriptor, &a.Agent, &a.Template, &a.Name, &a.Parent, &a.Root, &a.Depth, &a.Payer, &a.Account,
		&a.TurnLimit, &a.Report, &a.ReportTo, &a.OriginTurn, &a.OriginCall, &a.Task, &a.Hops, &a.State, &a.Result, &a.Turn,
		&created, &updated, &ended, &reported, &a.ReportError, &a.Budgets)
	if err != nil {
		return store.Instance{}, err
	}
	a.CreatedAt, a.UpdatedAt = store.RunTime(created), store.RunTime(updated)
	a.EndedAt, a.ReportedAt = store.RunTime(ended), store.RunTime(reported)
	return a, nil
}
