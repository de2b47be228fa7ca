package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"agentd/internal/vector"
)

// Backoff bounds for retrying a failing embedder.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// Run embeds memories in the background until ctx is done or the Store is
// closed, and returns nil then. It starts with the memories left pending by
// an earlier run. While the embedder fails, Run retries with exponential
// backoff and recall stays BM25 only. With no embedder Run only waits.
// The Store's owner runs it once, in its own goroutine.
func (s *Store) Run(ctx context.Context) error {
	select { // the first use opens the database
	case <-s.opened:
	case <-ctx.Done():
		return nil
	case <-s.done:
		return nil
	}
	if s.emb == nil {
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		return nil
	}
	backoff := time.Duration(0)
	var retry *time.Timer
	for {
		n, err := s.embedBatch(ctx)
		if ctx.Err() != nil || s.closing.Load() {
			return nil
		}
		var wait <-chan time.Time
		switch {
		case err != nil:
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			s.log.Warn("memory: embedding failed", "err", err, "retry_in", backoff)
			if retry == nil {
				retry = time.NewTimer(backoff)
				defer retry.Stop()
			} else {
				retry.Reset(backoff)
			}
			wait = retry.C
		case n == s.batch:
			backoff = 0
			continue
		default:
			backoff = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.done:
			return nil
		case <-s.wake:
		case <-wait:
		}
	}
}

type pendingItem struct {
	key   int64
	scope string
	text  string
}

// embedBatch embeds up to s.batch pending memories and stores their
// vectors. It returns how many items it took from the queue. When nothing
// is pending but the embedder is marked down, it probes the embedder so
// that recovery is noticed.
func (s *Store) embedBatch(ctx context.Context) (int, error) {
	if s.emb == nil {
		return 0, nil
	}
	items, orphans, err := s.nextPending(ctx)
	if err != nil {
		return 0, err
	}
	if len(orphans) > 0 {
		if err := s.dropPending(ctx, orphans); err != nil {
			return 0, err
		}
	}
	if len(items) == 0 {
		s.smu.Lock()
		down := s.down
		s.smu.Unlock()
		if down != nil {
			if _, err := s.emb.Embed(ctx, []string{"status probe"}); err != nil {
				err = fmt.Errorf("embed: %w", err)
				s.setDown(err)
				return 0, err
			}
		}
		s.setDown(nil)
		return len(orphans), nil
	}
	texts := make([]string, len(items))
	for i, it := range items {
		texts[i] = it.text
	}
	vecs, err := s.emb.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("%d vectors for %d texts", len(vecs), len(texts))
	}
	if err != nil {
		err = fmt.Errorf("embed: %w", err)
		if ctx.Err() == nil {
			s.setDown(err)
		}
		return 0, err
	}
	if err := s.storeVectors(ctx, items, vecs); err != nil {
		return 0, err
	}
	s.setDown(nil)
	return len(items) + len(orphans), nil
}

func (s *Store) nextPending(ctx context.Context) (items []pendingItem, orphans []int64, err error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT k, `+itemScope+`, `+itemText+`
		FROM (SELECT key AS k FROM pending ORDER BY key LIMIT ?) p`+itemJoin, s.batch)
	if err != nil {
		return nil, nil, s.dbErr("embed: read pending", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key int64
		var scope, text sql.NullString
		if err := rows.Scan(&key, &scope, &text); err != nil {
			return nil, nil, s.dbErr("embed: read pending", err)
		}
		if !scope.Valid || !text.Valid {
			orphans = append(orphans, key)
			continue
		}
		items = append(items, pendingItem{key: key, scope: scope.String, text: text.String})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, s.dbErr("embed: read pending", err)
	}
	return items, orphans, nil
}

func (s *Store) dropPending(ctx context.Context, keys []int64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.check(); err != nil {
		return err
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr("embed: drop pending", err)
	}
	defer tx.Rollback()
	for _, k := range keys {
		if _, err := tx.ExecContext(ctx, `DELETE FROM pending WHERE key = ?`, k); err != nil {
			return s.dbErr("embed: drop pending", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr("embed: drop pending", err)
	}
	s.countBacklog(ctx)
	return nil
}

// storeVectors writes the vectors of items that are still pending (a
// memory forgotten meanwhile is skipped) and adds them to the index.
func (s *Store) storeVectors(ctx context.Context, items []pendingItem, vecs [][]float32) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.check(); err != nil {
		return err
	}
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return s.dbErr("embed: store", err)
	}
	defer tx.Rollback()
	added := make([]bool, len(items))
	var blob []byte
	for i, it := range items {
		v := vecs[i]
		ok := len(v) > 0 && vector.Normalize(v)
		if ok {
			blob = vector.AppendEncode(blob[:0], v)
			// Only for an item still pending: one forgotten meanwhile
			// has no row to join its vector to.
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM pending WHERE key = ?`, it.key).Scan(&one)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return s.dbErr("embed: store", err)
			}
			if err == nil {
				if _, err := tx.ExecContext(ctx, `INSERT INTO vectors (key, model, vec) VALUES (?, ?, ?)
					ON CONFLICT (key) DO UPDATE SET model = excluded.model, vec = excluded.vec`, it.key, s.model, blob); err != nil {
					return s.dbErr("embed: store", err)
				}
				added[i] = true
			}
		}
		// A zero vector (a text with nothing to embed) leaves the item to
		// keyword search.
		if _, err := tx.ExecContext(ctx, `DELETE FROM pending WHERE key = ?`, it.key); err != nil {
			return s.dbErr("embed: store", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.dbErr("embed: store", err)
	}
	for i, it := range items {
		if added[i] {
			s.addVector(it.scope, it.key, vecs[i])
		}
	}
	s.countBacklog(ctx)
	return nil
}

func (s *Store) countBacklog(ctx context.Context) {
	var n int64
	if err := s.wdb.QueryRowContext(ctx, `SELECT count(*) FROM pending`).Scan(&n); err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("memory: count pending", "err", err)
		}
		return
	}
	s.backlog.Store(n)
}

// Drain embeds every memory still waiting for its vector, now, in the
// caller's goroutine (for tools and benchmarks that must not wait for Run).
func (s *Store) Drain(ctx context.Context) error {
	select {
	case <-s.opened:
	default:
		return nil // not opened: nothing written since the start
	}
	for {
		n, err := s.embedBatch(ctx)
		if err != nil || n == 0 {
			return err
		}
	}
}
