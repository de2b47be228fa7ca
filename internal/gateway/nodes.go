package gateway

import (
	"context"
	"net/http"
	"time"

	"agentd/internal/store"
)

// Nodes lists the agentd nodes sharing the store (store.ClusterStore's).
type Nodes interface {
	Nodes(ctx context.Context) ([]store.Node, error)
}

// Node states, as GET /v1/nodes shows them.
const (
	NodeLive = "live"
	NodeDead = "dead"
)

// NodeInfo is a node as GET /v1/nodes shows it.
type NodeInfo struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Addr        string    `json:"addr,omitempty"`
	Version     string    `json:"version,omitempty"`
	State       string    `json:"state"` // NodeLive or NodeDead
	Sessions    int64     `json:"sessions"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	Self        bool      `json:"self,omitempty"` // the node that answers
}

// NodesResponse is the body of GET /v1/nodes.
type NodesResponse struct {
	Nodes []NodeInfo `json:"nodes"`
}

// nodes answers GET /v1/nodes.
func (s *Server) nodes(w http.ResponseWriter, r *http.Request) {
	if s.o.Nodes == nil {
		s.unavailable(w, "the node registry")
		return
	}
	list, err := s.o.Nodes.Nodes(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	out := NodesResponse{Nodes: make([]NodeInfo, 0, len(list))}
	for _, n := range list {
		st := NodeDead
		if n.Live {
			st = NodeLive
		}
		out.Nodes = append(out.Nodes, NodeInfo{ID: n.ID, Name: n.Name, Addr: n.Addr, Version: n.Version, State: st,
			Sessions: n.Sessions, StartedAt: n.StartedAt, HeartbeatAt: n.HeartbeatAt, Self: n.Self})
	}
	writeJSON(w, http.StatusOK, out)
}

// Nodes lists the agentd nodes sharing the store of the node that answers.
func (c *Client) Nodes(ctx context.Context) ([]NodeInfo, error) {
	var out NodesResponse
	return out.Nodes, c.do(ctx, "GET", "/v1/nodes", nil, &out)
}
