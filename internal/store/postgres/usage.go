package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

// The operator's queries.
const (
	qQueueDepth    = `SELECT count(*) FROM inbox WHERE state = 'pending'`
	qSessionStates = `SELECT state, count(*) FROM sessions GROUP BY state`
	// Whether the database takes writes: not a standby, not read-only.
	qWritable = `SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'`

	usageSums = `coalesce(sum(u.input_tokens), 0)::bigint, coalesce(sum(u.output_tokens), 0)::bigint,
		coalesce(sum(u.cost_usd), 0)::float8, count(*)`
	dayNanos = int64(24 * time.Hour)
)

// usageGroups gives, per grouping, the key expression, the join it needs
// and the order of its rows.
var usageGroups = map[string]struct{ key, join, order string }{
	store.UsageByDay:     {key: fmt.Sprintf("(u.ts / %d)::bigint", dayNanos), order: "1"},
	store.UsageByAgent:   {key: "u.agent", order: "4 DESC, 1"},
	store.UsageByModel:   {key: "u.model", order: "4 DESC, 1"},
	store.UsageBySession: {key: "coalesce(s.agent || '/' || s.key, '#' || u.session_id)", join: " LEFT JOIN sessions s ON s.id = u.session_id", order: "4 DESC, 1"},
}

// usageSQL returns the grouped query and the total query for q, with their
// arguments; the grouped query's limit is the argument after them.
func usageSQL(q store.UsageQuery) (grouped, total string, args []any, err error) {
	g, ok := usageGroups[q.Group]
	if !ok {
		return "", "", nil, fmt.Errorf("postgres: usage: %w: group %q: want one of %s", store.ErrInvalid, q.Group,
			strings.Join(store.UsageGroups(), ", "))
	}
	var where []string
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	agent := q.Agent
	if q.Session != "" {
		a, key, ok := strings.Cut(q.Session, "/")
		if !ok || a == "" || key == "" {
			return "", "", nil, fmt.Errorf("postgres: usage: %w: session %q: want <agent>/<key>", store.ErrInvalid, q.Session)
		}
		if agent != "" && agent != a {
			return "", "", nil, fmt.Errorf("postgres: usage: %w: session %q is not agent %q's", store.ErrInvalid, q.Session, agent)
		}
		agent = a
		where = append(where, "u.session_id = (SELECT id FROM sessions WHERE agent = "+arg(a)+" AND key = "+arg(key)+")")
	}
	if agent != "" {
		where = append(where, "u.agent = "+arg(agent))
	}
	if !q.Since.IsZero() {
		where = append(where, "u.ts >= "+arg(q.Since.UnixNano()))
	}
	if !q.Until.IsZero() {
		where = append(where, "u.ts < "+arg(q.Until.UnixNano()))
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Until.After(q.Since) {
		return "", "", nil, fmt.Errorf("postgres: usage: %w: until must be after since", store.ErrInvalid)
	}
	for _, a := range args {
		if s, ok := a.(string); ok && !utf8.ValidString(s) {
			return "", "", nil, fmt.Errorf("postgres: usage: %w: %q is not UTF-8", store.ErrInvalid, s)
		}
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	grouped = "SELECT " + g.key + ", " + usageSums + " FROM usage u" + g.join + cond +
		" GROUP BY 1 ORDER BY " + g.order + " LIMIT $" + strconv.Itoa(len(args)+1)
	total = "SELECT " + usageSums + " FROM usage u" + cond
	return grouped, total, args, nil
}

// UsageReport groups the usage q selects. Both the rows and the total are
// read from one snapshot of the database.
func (s *Store) UsageReport(ctx context.Context, q store.UsageQuery) (store.UsageReport, error) {
	if s.isDown.Load() {
		return store.UsageReport{}, store.ErrClosed
	}
	limit := q.Limit
	switch {
	case limit < 0 || limit > store.MaxUsageLimit:
		return store.UsageReport{}, fmt.Errorf("postgres: usage: %w: limit %d: want 1 to %d", store.ErrInvalid, limit, store.MaxUsageLimit)
	case limit == 0:
		limit = store.DefaultUsageLimit
	}
	grouped, total, args, err := usageSQL(q)
	if err != nil {
		return store.UsageReport{}, err
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return store.UsageReport{}, s.readErr("usage", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only: nothing to undo
	var rep store.UsageReport
	t := &rep.Total
	if err := tx.QueryRow(ctx, total, args...).Scan(&t.InputTokens, &t.OutputTokens, &t.CostUSD, &t.Calls); err != nil {
		return store.UsageReport{}, s.readErr("usage", err)
	}
	rows, err := tx.Query(ctx, grouped, append(args, limit+1)...)
	if err != nil {
		return store.UsageReport{}, s.readErr("usage", err)
	}
	defer rows.Close()
	rep.Rows = []store.UsageRow{}
	for rows.Next() {
		var r store.UsageRow
		var key any
		if err := rows.Scan(&key, &r.InputTokens, &r.OutputTokens, &r.CostUSD, &r.Calls); err != nil {
			return store.UsageReport{}, s.readErr("usage", err)
		}
		if len(rep.Rows) == limit {
			rep.Truncated = true
			break
		}
		r.Key = usageKey(q.Group, key)
		rep.Rows = append(rep.Rows, r)
	}
	if err := rows.Err(); err != nil {
		return store.UsageReport{}, s.readErr("usage", err)
	}
	return rep, nil
}

// usageKey formats a group's key: a day number as its date, text as is.
func usageKey(group string, key any) string {
	switch k := key.(type) {
	case int64:
		if group == store.UsageByDay {
			return time.Unix(k*int64(24*time.Hour/time.Second), 0).UTC().Format(time.DateOnly)
		}
		return strconv.FormatInt(k, 10)
	case string:
		return k
	case nil:
		return ""
	}
	return fmt.Sprint(key)
}

// QueueDepth counts the pending inbox items of every session.
func (s *Store) QueueDepth(ctx context.Context) (int64, error) {
	if s.isDown.Load() {
		return 0, store.ErrClosed
	}
	var n int64
	if err := s.pool.QueryRow(ctx, qQueueDepth).Scan(&n); err != nil {
		return 0, s.readErr("queue depth", err)
	}
	return n, nil
}

// SessionStates counts sessions by state.
func (s *Store) SessionStates(ctx context.Context) (map[string]int64, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, qSessionStates)
	if err != nil {
		return nil, s.readErr("session states", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			return nil, s.readErr("session states", err)
		}
		out[state] = n
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("session states", err)
	}
	return out, nil
}

// Ping reads from the database: nil when it answers.
func (s *Store) Ping(ctx context.Context) error {
	if s.isDown.Load() {
		return store.ErrClosed
	}
	if err := s.pool.Ping(ctx); err != nil {
		return s.readErr("ping", err)
	}
	return nil
}

// errReadOnly is a database that takes no writes (a standby, or
// default_transaction_read_only).
var errReadOnly = errors.New("the database is read-only")

// Writable reports whether the store can take writes: nil, or an error
// when the database is read-only (a standby, or
// default_transaction_read_only) or does not answer. A server whose disk
// is full fails the writes themselves, as store.ErrFull (disk_full);
// PostgreSQL stops altogether when it cannot write its WAL, and then
// does not answer.
func (s *Store) Writable(ctx context.Context) error {
	if s.isDown.Load() {
		return store.ErrClosed
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, qWritable).Scan(&ok); err != nil {
		return s.readErr("writable", err)
	}
	if !ok {
		return fmt.Errorf("postgres: writable: %w", errReadOnly)
	}
	return nil
}
