package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"agentd/internal/event"
	"agentd/internal/store"
)

// A session's context is read in two steps: where it starts (the last
// reset, the latest summary after it and what that summary folds), then
// the conversation events after that point. Events are append-only, so the
// second step can read fixed seq ranges in parallel on several read
// connections and still return exactly what one snapshot would.
const (
	qContextStart = `WITH r AS (SELECT coalesce(max(seq), 0) AS seq FROM events WHERE session_id = ?1 AND kind = 'reset'),
		s AS (SELECT seq, coalesce(json_extract(CAST(data AS TEXT), '$.through'), 0) AS through FROM events
			WHERE session_id = ?1 AND kind = 'summary' AND seq > (SELECT seq FROM r) ORDER BY seq DESC LIMIT 1)
		SELECT coalesce((SELECT seq FROM s), 0), max((SELECT seq FROM r), coalesce((SELECT through FROM s), 0)),
			coalesce((SELECT last_seq FROM sessions WHERE id = ?1), 0)`
	qContextRange = `SELECT seq, turn, kind, ts, data FROM events WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3
		AND kind IN ('input', 'system_message', 'text', 'tool_call', 'tool_result', 'turn_end') ORDER BY seq`
	qEventAt = `SELECT seq, turn, kind, ts, data FROM events WHERE session_id = ?1 AND seq = ?2`
)

// contextSplit is the number of events above which a context is read in
// parallel ranges.
const contextSplit = 2048

// ContextEvents returns the events a session's conversation is built from:
// those after its last reset marker (inputs, messages, text, tool calls and
// results, turn ends), the latest summary since then standing in for the
// events it folds.
func (s *Store) ContextEvents(ctx context.Context, session int64) ([]event.Event, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	var summary, from, last int64
	if err := s.r.contextStart.QueryRowContext(ctx, session).Scan(&summary, &from, &last); err != nil {
		return nil, s.readErr("context events", err)
	}
	var sum []event.Event
	if summary > 0 {
		evs, err := s.eventRange(ctx, qEventAt, session, summary, 0, 1)
		if err != nil {
			return nil, s.readErr("context events", err)
		}
		sum = evs
	}
	n := last - from
	if n <= 0 {
		return sum, nil
	}
	parts := 1
	if n > contextSplit {
		parts = int(min(int64(runtime.GOMAXPROCS(0)), 4, n/(contextSplit/2)))
	}
	chunks := make([][]event.Event, parts)
	g, gctx := errgroup.WithContext(ctx)
	for i := range parts {
		lo, hi := from+n*int64(i)/int64(parts), from+n*int64(i+1)/int64(parts)
		g.Go(func() error {
			evs, err := s.eventRange(gctx, qContextRange, session, lo, hi, int(hi-lo))
			chunks[i] = evs
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, s.readErr("context events", err)
	}
	total := len(sum)
	for _, c := range chunks {
		total += len(c)
	}
	out := make([]event.Event, 0, total)
	for _, c := range chunks {
		out = append(out, c...)
	}
	if len(sum) > 0 {
		// In seq order, as the log has it.
		i, _ := slices.BinarySearchFunc(out, sum[0].Seq, func(e event.Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
		out = slices.Insert(out, i, sum[0])
	}
	return out, nil
}

// eventRange runs q (selecting seq, turn, kind, ts, data) with (session,
// a, b) on a read connection of its own, through the driver directly: a
// context read is thousands of rows, and database/sql's per-row
// conversions would cost as much as SQLite itself.
func (s *Store) eventRange(ctx context.Context, q string, session, a, b int64, hint int) ([]event.Event, error) {
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var out []event.Event
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("driver cannot prepare with a context")
		}
		st, err := c.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer st.Close()
		sq, ok := st.(driver.StmtQueryContext)
		if !ok {
			return errors.New("driver cannot query with a context")
		}
		args := []driver.NamedValue{{Ordinal: 1, Value: session}, {Ordinal: 2, Value: a}, {Ordinal: 3, Value: b}}
		if q == qEventAt {
			args = args[:2]
		}
		rows, err := sq.QueryContext(ctx, args)
		if err != nil {
			return err
		}
		defer rows.Close()
		out = make([]event.Event, 0, min(hint, 1<<16))
		dest := make([]driver.Value, 5)
		for {
			if err := rows.Next(dest); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			e := event.Event{Session: session}
			var ok1, ok2, ok3 bool
			e.Seq, ok1 = dest[0].(int64)
			e.Turn, ok2 = dest[1].(int64)
			var ts int64
			ts, ok3 = dest[3].(int64)
			if !ok1 || !ok2 || !ok3 {
				return fmt.Errorf("event row: unexpected column types %T %T %T", dest[0], dest[1], dest[3])
			}
			e.Kind, e.Time = kindOf(dest[2]), unixTime(ts)
			switch d := dest[4].(type) {
			case []byte:
				e.Data = d
			case string:
				e.Data = []byte(d)
			}
			out = append(out, e)
		}
	})
	if errors.Is(err, driver.ErrBadConn) {
		err = fmt.Errorf("%w", sql.ErrConnDone)
	}
	return out, err
}

// contextKinds are the kinds a context is read in.
var contextKinds = [...]event.Kind{event.Input, event.SystemMessage, event.Text, event.ToolCall,
	event.ToolResult, event.TurnEnd, event.Summary}

// kindOf returns a row's kind, sharing the strings of the kinds a context
// holds instead of keeping one copy per row.
func kindOf(v any) event.Kind {
	var k string
	switch v := v.(type) {
	case string:
		k = v
	case []byte:
		k = string(v)
	}
	for _, known := range contextKinds {
		if string(known) == k {
			return known
		}
	}
	return event.Kind(k)
}
