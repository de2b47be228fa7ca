package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentd/internal/store"
)

// lost reports whether err (not a PostgreSQL error) means the database
// could not be reached or the connection to it broke. A caller's ctx that
// ended is not that (context.DeadlineExceeded is a net.Error too).
func lost(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err)
}

// acquire takes a connection for a writer's group. While the database
// cannot be reached it tries again, for up to Options.RetryFor (less if
// the store closes): nothing of the group was sent, so it is written once
// when the database is back. Meanwhile Reachable reports false, so that
// the node takes no new work, and the writes queued behind the group wait
// in memory (at most the writer's queue; new writes wait for room).
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	deadline := time.Now().Add(s.retryFor)
	wait := 50 * time.Millisecond
	for {
		conn, err := s.pool.Acquire(ctx)
		if err == nil {
			if s.unreachable.CompareAndSwap(true, false) {
				s.log.Info("store reachable again: held writes are being committed")
			}
			return conn, nil
		}
		if !lost(err) || s.retryFor <= 0 || time.Now().After(deadline) || s.isDown.Load() {
			return nil, err
		}
		if s.unreachable.CompareAndSwap(false, true) {
			s.log.Error("store unreachable: writes are held in memory and retried", "for", s.retryFor, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// Reachable reports whether the store's writers reach the database: false
// while one holds writes it cannot send.
func (s *Store) Reachable() bool { return !s.unreachable.Load() }

// reach is how a new input is refused while the database cannot be
// reached: a writer holding writes says so, and a quick ping checks
// whether it is back (the input then waits behind the held writes).
func (s *Store) reach(ctx context.Context) error {
	if !s.unreachable.Load() {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.pool.Ping(pctx); err != nil {
		return fmt.Errorf("postgres: %w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// lostConn drops the pool's idle connections when err says the database
// was lost: they are likely broken too, and the writes after a group that
// failed so should wait in acquire for the database to be back (held and
// retried) rather than fail one by one on dead connections. A group whose
// connection broke while it was in flight is not retried: whether it
// committed is not known.
func (s *Store) lostConn(err error) {
	if errors.Is(err, store.ErrUnavailable) || lost(err) {
		s.pool.Reset()
	}
}
