package gateway_test

import (
	"encoding/json"
	"testing"

	"agentd/internal/gateway"
)

// GET /v1/nodes lists the nodes sharing the store: with SQLite, the node
// that answers alone, live, owning every session.
func TestNodesRoute(t *testing.T) {
	e := newOpsEnv(t)
	if _, _, err := e.st.Session(t.Context(), "a", "one"); err != nil {
		t.Fatal(err)
	}
	status, _, body := e.do("GET", "/v1/nodes", "")
	if status != 200 {
		t.Fatalf("GET /v1/nodes: %d %s", status, body)
	}
	var r gateway.NodesResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes) != 1 || !r.Nodes[0].Self || r.Nodes[0].State != gateway.NodeLive || r.Nodes[0].Sessions != 1 {
		t.Fatalf("nodes = %+v, want this node alone, live, with the one session", r.Nodes)
	}
}
