package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"agentd/internal/store"
)

// Node registry defaults.
const (
	DefaultHeartbeat = 2 * time.Second
	DefaultLeaseTTL  = 10 * time.Second
	// forgetNodes is how long a dead node stays in the registry (agentd
	// nodes lists it as dead) before a live node deletes its row.
	forgetNodes = time.Hour
)

// The registry's statements. Durations are given in milliseconds.
const (
	qRegister = `INSERT INTO agentd_nodes (id, name, addr, version) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()`
	// A heartbeat renews the node's row and every lease it holds that has
	// not expired: an expired lease is lost, even if no node took it yet.
	qHeartbeat = `UPDATE agentd_nodes SET heartbeat_at = now() WHERE id = $1`
	qRenew     = `UPDATE agentd_leases SET expires_at = now() + $2 * interval '1 millisecond'
		WHERE node_id = $1 AND expires_at > now()`
	qForget = `DELETE FROM agentd_nodes WHERE heartbeat_at < now() - $1 * interval '1 millisecond'`
	qLeave  = `UPDATE agentd_leases SET expires_at = '-infinity' WHERE node_id = $1`
	qDelete = `DELETE FROM agentd_nodes WHERE id = $1`
	qNodes  = `SELECT n.id, n.name, n.addr, n.version, n.started_at, n.heartbeat_at,
		n.heartbeat_at > now() - $1 * interval '1 millisecond',
		(SELECT count(*) FROM agentd_leases l WHERE l.node_id = n.id AND l.expires_at > now())
		FROM agentd_nodes n ORDER BY n.started_at, n.id`
)

// newNodeID is a node's id: random, so that a restarted node is a new one
// and a dead node's leases are never mistaken for its successor's.
func newNodeID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// hostName is a node's default name.
func hostName() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}

// NodeID returns this node's id in the registry.
func (s *Store) NodeID() string { return s.nodeID }

// register adds the node to the registry.
func (s *Store) register(ctx context.Context, o *Options) error {
	if _, err := s.pool.Exec(ctx, qRegister, s.nodeID, o.NodeName, o.NodeAddr, o.Version); err != nil {
		return fmt.Errorf("register node: %w", err)
	}
	return nil
}

// beat keeps the node's heartbeat and leases until stop is closed. A
// heartbeat that fails is logged and tried again at the next tick: the
// leases it could not renew expire, and the node's commits to those
// sessions are then fenced.
func (s *Store) beat(stop <-chan struct{}, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if err := s.heartbeat(every); err != nil {
			s.log.Warn("node heartbeat failed; leases not renewed", "err", err)
		}
	}
}

// heartbeat writes one heartbeat, renews the node's live leases and
// forgets nodes long dead, in one round trip, bounded by every.
func (s *Store) heartbeat(every time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), max(every, time.Second))
	defer cancel()
	b := &pgx.Batch{}
	b.Queue(qHeartbeat, s.nodeID)
	b.Queue(qRenew, s.nodeID, s.ttl.Milliseconds())
	b.Queue(qForget, forgetNodes.Milliseconds())
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("postgres: heartbeat: %w", err)
	}
	return nil
}

// forget gives up the leases of node, known dead, and removes it from
// the registry, in one transaction. It locks the node's lease rows in
// the order it finds them, while another transaction may lock some of
// them in another order: one of the node's own, still running on the
// server after its process died (a commit locks the leases of its
// sessions, in the order of its batches). PostgreSQL then aborts one of
// the two (deadlock_detected); forget is tried again, up to
// forgetTries times: the other transaction ends meanwhile.
func (s *Store) forget(ctx context.Context, node string) error {
	for try := 1; ; try++ {
		b := &pgx.Batch{}
		b.Queue(qLeave, node)
		b.Queue(qDelete, node)
		err := s.pool.SendBatch(ctx, b).Close()
		if err == nil {
			return nil
		}
		if !conflict(err) || try == forgetTries {
			return fmt.Errorf("forget node %s: %w", node, err)
		}
		select {
		case <-time.After(time.Duration(try) * 50 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("forget node %s: %w", node, err)
		}
	}
}

// forgetTries bounds forget's tries (see forget).
const forgetTries = 5

// conflict reports whether err is PostgreSQL aborting a transaction for
// another's sake (deadlock_detected, serialization_failure): tried again,
// it may succeed.
func conflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// leave gives up the node's leases, so that other nodes take its
// sessions at once, and removes it from the registry: a clean stop.
func (s *Store) leave() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.forget(ctx, s.nodeID)
}

// Nodes lists the nodes sharing the database, oldest first: live when
// their heartbeat is younger than this node's lease TTL.
func (s *Store) Nodes(ctx context.Context) ([]store.Node, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, qNodes, s.ttl.Milliseconds())
	if err != nil {
		return nil, s.readErr("nodes", err)
	}
	nodes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Node, error) {
		var n store.Node
		err := r.Scan(&n.ID, &n.Name, &n.Addr, &n.Version, &n.StartedAt, &n.HeartbeatAt, &n.Live, &n.Sessions)
		n.Self = n.ID == s.nodeID
		n.StartedAt, n.HeartbeatAt = n.StartedAt.UTC(), n.HeartbeatAt.UTC()
		return n, err
	})
	if err != nil {
		return nil, s.readErr("nodes", err)
	}
	return nodes, nil
}
