package gateway

// GET /v1/agents/tree: the dynamic agents as a forest, each node with the
// cost of its subtree.

import (
	"net/http"

	"agentd/internal/agentsys"
	"agentd/internal/store"
)

// AgentTree answers GET /v1/agents/tree.
type AgentTree struct {
	Nodes []AgentNode `json:"nodes"`
}

// AgentNode is an agent of the tree: its AgentInfo (CostTreeUSD is its
// subtree's cost) and the agents it started, depth first. Children, the
// list, stands for AgentInfo's count of live children in JSON.
type AgentNode struct {
	AgentInfo
	Children []AgentNode `json:"children"`
}

func (s *Server) agentTree(w http.ResponseWriter, r *http.Request) {
	if s.o.DynamicAgents == nil {
		s.unavailable(w, "the tree of dynamic agents")
		return
	}
	root := r.URL.Query().Get("root")
	if len(root) > store.MaxInstanceText {
		s.fail(w, badRequest("root: longer than %d bytes", store.MaxInstanceText))
		return
	}
	nodes, err := s.o.DynamicAgents.Tree(r.Context(), root)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, AgentTree{Nodes: nodesOf(nodes)})
}

// nodesOf is the agent system's forest as the API shows it.
func nodesOf(ns []agentsys.Node) []AgentNode {
	out := make([]AgentNode, len(ns))
	for i, n := range ns {
		out[i] = AgentNode{AgentInfo: infoOf(n.Info), Children: nodesOf(n.Children)}
		out[i].CostTreeUSD = n.CostTreeUSD
	}
	return out
}
