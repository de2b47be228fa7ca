package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

var _ store.ClusterStore = (*Store)(nil)

// The leases' statements: $1 the session (or a count), $2 the node's id,
// $3 the TTL in milliseconds.
//
// A node takes a lease that is free, given up or expired, or keeps its
// own; taking one another node held raises the epoch, keeping one's own
// (even given up meanwhile: no other node wrote since) keeps it, so that
// the node's cached context of the session stays good.
const (
	qLease = `INSERT INTO agentd_leases AS l (session_id, node_id, epoch, expires_at)
		VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
		ON CONFLICT (session_id) DO UPDATE SET
			epoch = CASE WHEN l.node_id = excluded.node_id THEN l.epoch ELSE l.epoch + 1 END,
			node_id = excluded.node_id, expires_at = excluded.expires_at
		WHERE l.node_id = excluded.node_id OR l.expires_at <= now()
		RETURNING epoch`
	qUnlease = `WITH p AS (SELECT EXISTS (SELECT 1 FROM inbox WHERE session_id = $1 AND state = 'pending') AS pending),
	u AS (UPDATE agentd_leases SET expires_at = '-infinity'
		WHERE session_id = $1 AND node_id = $2 AND epoch = $3 AND NOT (SELECT pending FROM p) RETURNING 1)
	SELECT NOT pending FROM p`
	// Orphans: expired or given-up leases of sessions with pending items,
	// claimed with FOR UPDATE SKIP LOCKED, so that nodes polling at once
	// take different sessions without waiting for each other (and a lease
	// locked by its holder's commit, FOR SHARE below, is left to the next
	// poll); then sessions with pending items and no lease yet.
	qOrphans = `WITH expired AS (
		SELECT l.session_id FROM agentd_leases l
		WHERE l.expires_at <= now()
			AND EXISTS (SELECT 1 FROM inbox i WHERE i.session_id = l.session_id AND i.state = 'pending')
		ORDER BY l.session_id LIMIT $1 FOR UPDATE SKIP LOCKED),
	taken AS (
		UPDATE agentd_leases l SET expires_at = now() + $3 * interval '1 millisecond',
			epoch = CASE WHEN l.node_id = $2 THEN l.epoch ELSE l.epoch + 1 END, node_id = $2
		FROM expired e WHERE l.session_id = e.session_id
		RETURNING l.session_id, l.epoch),
	fresh AS (
		INSERT INTO agentd_leases (session_id, node_id, epoch, expires_at)
		SELECT p.session_id, $2, 1, now() + $3 * interval '1 millisecond'
		FROM (SELECT DISTINCT i.session_id FROM inbox i WHERE i.state = 'pending'
			AND NOT EXISTS (SELECT 1 FROM agentd_leases l WHERE l.session_id = i.session_id)
			ORDER BY i.session_id LIMIT $1) p
		ON CONFLICT (session_id) DO NOTHING
		RETURNING session_id, epoch)
	SELECT session_id, epoch FROM taken UNION ALL SELECT session_id, epoch FROM fresh`
	// The fence of a commit, in its transaction: the lease row is locked
	// FOR SHARE until the commit ends, so that a node taking the session
	// over waits for it, then reads what it wrote; a lease taken over
	// already, or expired, refuses the commit.
	qFence = `SELECT CASE WHEN EXISTS (SELECT 1 FROM agentd_leases
		WHERE session_id = $1 AND node_id = $2 AND epoch = $3 AND expires_at > now() FOR SHARE)
		THEN 0 ELSE agentd_refuse('fenced') END`
)

// Lease takes session's lease for this node, or keeps it, for the lease
// TTL (renewed by the node's heartbeat until Unlease); held is false
// while another live node holds it.
func (s *Store) Lease(ctx context.Context, session int64) (epoch int64, held bool, err error) {
	if s.isDown.Load() {
		return 0, false, store.ErrClosed
	}
	err = s.pool.QueryRow(ctx, qLease, session, s.nodeID, s.ttl.Milliseconds()).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.readErr(fmt.Sprintf("lease session %d", session), err)
	}
	return epoch, true, nil
}

// Unlease gives up session's lease at epoch if this node holds it and
// the session has no pending inbox items (released false: it has some).
func (s *Store) Unlease(ctx context.Context, session, epoch int64) (released bool, err error) {
	if s.isDown.Load() {
		return false, store.ErrClosed
	}
	if err := s.pool.QueryRow(ctx, qUnlease, session, s.nodeID, epoch).Scan(&released); err != nil {
		return false, s.readErr(fmt.Sprintf("unlease session %d", session), err)
	}
	return released, nil
}

// Orphans takes the leases of up to max sessions (max <= 0: all) with
// pending inbox items and no live lease, and returns them.
func (s *Store) Orphans(ctx context.Context, max int) ([]store.Lease, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	limit := int64(max)
	if limit <= 0 {
		limit = 1 << 62
	}
	rows, err := s.pool.Query(ctx, qOrphans, limit, s.nodeID, s.ttl.Milliseconds())
	if err != nil {
		return nil, s.readErr("orphans", err)
	}
	ls, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Lease, error) {
		var l store.Lease
		err := r.Scan(&l.Session, &l.Epoch)
		return l, err
	})
	if err != nil {
		return nil, s.readErr("orphans", err)
	}
	return ls, nil
}
