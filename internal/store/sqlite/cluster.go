package sqlite

import (
	"context"
	"os"
	"time"

	"agentd/internal/store"
)

var _ store.ClusterStore = (*Store)(nil)

// A SQLite store is one node's (its data directory is locked by the node
// that runs on it): that node holds every session's lease, at one epoch
// that never changes, and is the only node in its registry.

// SoleEpoch is the epoch of every lease of a SQLite store.
const SoleEpoch = 1

// Lease reports that this node holds the session's lease.
func (s *Store) Lease(ctx context.Context, session int64) (int64, bool, error) {
	if s.isDown.Load() {
		return 0, false, store.ErrClosed
	}
	return SoleEpoch, true, nil
}

// Unlease reports, as ClusterStore's contract says, whether the session
// has no pending inbox items; the lease stays this node's either way.
func (s *Store) Unlease(ctx context.Context, session, epoch int64) (bool, error) {
	items, err := s.Pending(ctx, session)
	return len(items) == 0 && err == nil, err
}

// Orphans returns the sessions with pending inbox items (up to max; max
// <= 0: all), every one of which is this node's to run.
func (s *Store) Orphans(ctx context.Context, max int) ([]store.Lease, error) {
	ids, err := s.PendingSessions(ctx)
	if err != nil {
		return nil, err
	}
	if max > 0 && len(ids) > max {
		ids = ids[:max]
	}
	ls := make([]store.Lease, len(ids))
	for i, id := range ids {
		ls[i] = store.Lease{Session: id, Epoch: SoleEpoch}
	}
	return ls, nil
}

// Nodes lists this node alone, owning every session.
func (s *Store) Nodes(ctx context.Context) ([]store.Node, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	var n int64
	if err := s.rdb.QueryRowContext(ctx, `SELECT count(*) FROM sessions`).Scan(&n); err != nil {
		return nil, s.readErr("nodes", err)
	}
	host, _ := os.Hostname()
	return []store.Node{{ID: "local", Name: host, StartedAt: s.opened, HeartbeatAt: time.Now().UTC(),
		Live: true, Sessions: n, Self: true}}, nil
}
