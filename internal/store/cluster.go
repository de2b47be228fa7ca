package store

import (
	"context"
	"errors"
	"time"
)

// ErrFenced is returned (wrapped) by Commit for a batch whose Epoch is
// no longer the session's lease at this node: another node has taken the
// session over (or this node's lease expired), and nothing of the batch
// was written. The node stops running that session's turns.
var ErrFenced = errors.New("session lease lost to another node")

// Lease is a node's claim to run one session's turns: only the node that
// holds a session's lease at its Epoch may commit the session's turns
// (Batch.Epoch). A lease taken over from another node has a higher epoch.
type Lease struct {
	Session int64
	Epoch   int64
}

// Node is an agentd node sharing the store, as the node registry has it.
type Node struct {
	ID          string    // random per process start: a restarted node is a new node
	Name        string    // the host's name, as the node gave it
	Addr        string    // where its API listens ("" if it does not)
	Version     string    // its agentd version
	StartedAt   time.Time // when it opened the store
	HeartbeatAt time.Time // its last heartbeat
	Live        bool      // its heartbeat is younger than the lease TTL
	Sessions    int64     // the sessions whose live lease it holds
	Self        bool      // the node answering
}

// ClusterStore is what a store offers for several nodes to share it:
// session leases and the node registry. The SQLite store is one node's,
// which holds every session's lease; the PostgreSQL store coordinates
// the nodes on one database.
type ClusterStore interface {
	// Lease takes the session's lease for this node, or keeps it if this
	// node holds it, and returns its epoch; held is false while another
	// live node holds it.
	Lease(ctx context.Context, session int64) (epoch int64, held bool, err error)
	// Unlease gives up the session's lease at epoch, if this node still
	// holds it, so another node may take it at once, unless the session
	// has pending inbox items: then released is false and the node keeps
	// the lease, to run them. The check and the release are one
	// statement, so an input accepted elsewhere meanwhile is either seen
	// here or finds the lease free.
	Unlease(ctx context.Context, session, epoch int64) (released bool, err error)
	// Orphans takes the leases of up to max sessions (max <= 0: all) that
	// have pending inbox items and no live lease (their node died, or
	// none took them), and returns them.
	Orphans(ctx context.Context, max int) ([]Lease, error)
	// Nodes lists the nodes sharing the store, oldest first.
	Nodes(ctx context.Context) ([]Node, error)
}

// epochKey is the context key of WithEpoch.
type epochKey struct{}

type epochOf struct{ session, epoch int64 }

// WithEpoch returns ctx carrying the epoch of session's lease that this
// node holds, under which the writes of session's log that a store makes
// on its own (working memory: SetWorking, DeleteWorking) are fenced, as
// Batch.Epoch fences a batch: a node that lost the lease cannot make
// them. The runtime sets it for a turn's tools and for the writes it
// makes outside turns.
func WithEpoch(ctx context.Context, session, epoch int64) context.Context {
	return context.WithValue(ctx, epochKey{}, epochOf{session, epoch})
}

// EpochFrom returns the epoch WithEpoch put in ctx for session, 0 if none.
func EpochFrom(ctx context.Context, session int64) int64 {
	if e, ok := ctx.Value(epochKey{}).(epochOf); ok && e.session == session {
		return e.epoch
	}
	return 0
}
