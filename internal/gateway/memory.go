package gateway

// The routes of agents' long-term memory: recall, an entity, forgetting.

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"agentd/internal/memory"
)

// Memory is agents' long-term memory.
type Memory interface {
	Recall(ctx context.Context, q memory.Query) (memory.Recall, error)
	List(ctx context.Context, scope string, limit int) ([]memory.Item, error)
	Get(ctx context.Context, scope, entity string) (memory.Entity, error)
	Forget(ctx context.Context, scope string, f memory.Forget) (int, error)
}

// MemoryItem is a memory as the API shows it.
type MemoryItem struct {
	Kind    string    `json:"kind"`
	ID      int64     `json:"id"`
	Scope   string    `json:"scope"`
	Entity  string    `json:"entity,omitempty"`
	Text    string    `json:"text"`
	Snippet string    `json:"snippet,omitempty"`
	Score   float64   `json:"score,omitempty"`
	Created time.Time `json:"created"`
	Session string    `json:"session,omitempty"`
	Turn    int64     `json:"turn,omitempty"`
}

// MemoryPage answers GET /v1/memory.
type MemoryPage struct {
	Items    []MemoryItem `json:"items"`
	Degraded bool         `json:"degraded,omitempty"` // recall was keyword-only
	Reason   string       `json:"reason,omitempty"`
}

// ForgetRequest is the body of POST /v1/memory/forget.
type ForgetRequest struct {
	Agent        string   `json:"agent"`
	Entities     []string `json:"entities,omitempty"`
	Observations []int64  `json:"observations,omitempty"`
	Relations    []int64  `json:"relations,omitempty"`
	Insights     []int64  `json:"insights,omitempty"`
}

func memoryItem(it memory.Item) MemoryItem {
	return MemoryItem{Kind: it.Kind, ID: it.ID, Scope: it.Scope, Entity: it.Entity, Text: it.Text, Snippet: it.Snippet,
		Score: it.Score, Created: it.Created, Session: it.Provenance.Session, Turn: it.Provenance.Turn}
}

func (s *Server) memoryScope(w http.ResponseWriter, agentID string) bool {
	if s.o.Memory == nil {
		s.unavailable(w, "long-term memory")
		return false
	}
	if agentID == "" {
		s.fail(w, badRequest("agent: required (the memory's owner)"))
		return false
	}
	return true
}

func (s *Server) memorySearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	agentID := q.Get("agent")
	if !s.memoryScope(w, agentID) {
		return
	}
	limit := 20
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			s.fail(w, badRequest("limit: want a positive number"))
			return
		}
		limit = n
	}
	shared, err := boolParam(q, "shared")
	if err != nil {
		s.fail(w, err)
		return
	}
	page := MemoryPage{Items: []MemoryItem{}}
	if text := q.Get("q"); text != "" {
		res, err := s.o.Memory.Recall(r.Context(), memory.Query{Scope: agentID, Text: text, K: limit, Shared: shared})
		if err != nil {
			s.fail(w, err)
			return
		}
		for _, it := range res.Items {
			page.Items = append(page.Items, memoryItem(it))
		}
		page.Degraded, page.Reason = res.Degraded, res.Reason
	} else {
		items, err := s.o.Memory.List(r.Context(), agentID, limit)
		if err != nil {
			s.fail(w, err)
			return
		}
		for _, it := range items {
			page.Items = append(page.Items, memoryItem(it))
		}
	}
	writeJSON(w, 200, page)
}

func (s *Server) memoryEntity(w http.ResponseWriter, r *http.Request) {
	agentID := r.URL.Query().Get("agent")
	if !s.memoryScope(w, agentID) {
		return
	}
	e, err := s.o.Memory.Get(r.Context(), agentID, r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, e)
}

func (s *Server) memoryForget(w http.ResponseWriter, r *http.Request) {
	var req ForgetRequest
	if !s.decode(w, r, &req) || !s.memoryScope(w, req.Agent) {
		return
	}
	n, err := s.o.Memory.Forget(r.Context(), req.Agent, memory.Forget{Entities: req.Entities, Observations: req.Observations,
		Relations: req.Relations, Insights: req.Insights})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]int{"forgotten": n})
}

// Memories recalls (query not empty) or lists an agent's memories.
func (c *Client) Memories(ctx context.Context, agentID, query string, limit int) (MemoryPage, error) {
	v := url.Values{"agent": {agentID}}
	if query != "" {
		v.Set("q", query)
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	var page MemoryPage
	err := c.do(ctx, "GET", "/v1/memory?"+v.Encode(), nil, &page)
	return page, err
}

// MemoryEntity returns an entity of an agent's memory.
func (c *Client) MemoryEntity(ctx context.Context, agentID, name string) (memory.Entity, error) {
	var e memory.Entity
	err := c.do(ctx, "GET", "/v1/memory/entities/"+url.PathEscape(name)+"?"+url.Values{"agent": {agentID}}.Encode(), nil, &e)
	return e, err
}

// Forget removes memories.
func (c *Client) Forget(ctx context.Context, req ForgetRequest) (int, error) {
	var out struct {
		Forgotten int `json:"forgotten"`
	}
	err := c.do(ctx, "POST", "/v1/memory/forget", req, &out)
	return out.Forgotten, err
}
