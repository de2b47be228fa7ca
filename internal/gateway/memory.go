package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"agentd/internal/memory"
	"agentd/internal/store"
)

// Routes of conversation history and working memory (JSON):
//
//	GET    /v1/history/search?q=WORDS&agent=A&since=T&until=T&limit=N&cursor=C
//	GET    /v1/sessions/{agent}/{key}/working              the session's working memory
//	PUT    /v1/sessions/{agent}/{key}/working/{name}       body: the JSON value
//	DELETE /v1/sessions/{agent}/{key}/working/{name}

// History searches conversations and keeps sessions' working memory.
type History interface {
	SearchHistory(ctx context.Context, q store.HistoryQuery) ([]store.HistoryHit, string, error)
	SessionByAddress(ctx context.Context, agent, key string) (store.Session, error)
	SetWorking(ctx context.Context, session int64, key string, value json.RawMessage) error
	DeleteWorking(ctx context.Context, session int64, key string) error
	Working(ctx context.Context, session int64) (map[string]json.RawMessage, error)
}

func (s *Server) routeMemory() {
	m := s.mux
	m.HandleFunc("GET /v1/history/search", s.historySearch)
	m.HandleFunc("GET /v1/sessions/{agent}/{key}/working", s.workingGet)
	m.HandleFunc("PUT /v1/sessions/{agent}/{key}/working/{name}", s.workingSet)
	m.HandleFunc("DELETE /v1/sessions/{agent}/{key}/working/{name}", s.workingDelete)
}

// HistoryHit is one result of a history search.
type HistoryHit struct {
	Session string  `json:"session"`
	Seq     int64   `json:"seq"`
	Turn    int64   `json:"turn,omitempty"`
	Kind    string  `json:"kind"`
	Time    string  `json:"time"`
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet"`
}

// HistoryPage answers a history search.
type HistoryPage struct {
	Hits []HistoryHit `json:"hits"`
	Next string       `json:"next,omitempty"`
}

func timeParam(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return time.Time{}, badRequest("want an RFC 3339 time or a duration such as 72h, got %q", v)
	}
	return time.Now().Add(-d), nil
}

func (s *Server) historySearch(w http.ResponseWriter, r *http.Request) {
	if s.o.History == nil {
		s.unavailable(w, "history search")
		return
	}
	q := r.URL.Query()
	hq := store.HistoryQuery{Query: q.Get("q"), Cursor: q.Get("cursor")}
	if strings.TrimSpace(hq.Query) == "" {
		s.fail(w, badRequest("q: required"))
		return
	}
	if a := q.Get("agent"); a != "" {
		hq.Agents = strings.Split(a, ",")
	}
	var err error
	if hq.Since, err = timeParam(q.Get("since")); err != nil {
		s.fail(w, err)
		return
	}
	if hq.Until, err = timeParam(q.Get("until")); err != nil {
		s.fail(w, err)
		return
	}
	if l := q.Get("limit"); l != "" {
		if hq.Limit, err = strconv.Atoi(l); err != nil || hq.Limit < 0 {
			s.fail(w, badRequest("limit: want a positive number"))
			return
		}
	}
	hits, next, err := s.o.History.SearchHistory(r.Context(), hq)
	if err != nil {
		s.fail(w, badRequestIfInvalid(err))
		return
	}
	page := HistoryPage{Hits: make([]HistoryHit, 0, len(hits)), Next: next}
	for _, h := range hits {
		page.Hits = append(page.Hits, HistoryHit{Session: h.Agent + "/" + h.Key, Seq: h.Event.Seq, Turn: h.Event.Turn,
			Kind: string(h.Event.Kind), Time: h.Event.Time.Format(time.RFC3339), Score: h.Score, Snippet: h.Snippet})
	}
	writeJSON(w, 200, page)
}

// workingSession finds the session of a working-memory request.
func (s *Server) workingSession(w http.ResponseWriter, r *http.Request) (int64, bool) {
	if s.o.History == nil {
		s.unavailable(w, "working memory")
		return 0, false
	}
	sess, err := s.o.History.SessionByAddress(r.Context(), r.PathValue("agent"), r.PathValue("key"))
	if errors.Is(err, store.ErrNotFound) {
		err = notFound("session %s", addr(r))
	}
	if err != nil {
		s.fail(w, err)
		return 0, false
	}
	return sess.ID, true
}

func (s *Server) workingGet(w http.ResponseWriter, r *http.Request) {
	id, ok := s.workingSession(w, r)
	if !ok {
		return
	}
	m, err := s.o.History.Working(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	writeJSON(w, 200, m)
}

func (s *Server) workingSet(w http.ResponseWriter, r *http.Request) {
	id, ok := s.workingSession(w, r)
	if !ok {
		return
	}
	var v json.RawMessage
	if !s.decode(w, r, &v) {
		return
	}
	if err := s.o.History.SetWorking(r.Context(), id, r.PathValue("name"), v); err != nil {
		s.fail(w, badRequestIfInvalid(err))
		return
	}
	writeJSON(w, 200, map[string]json.RawMessage{r.PathValue("name"): v})
}

func (s *Server) workingDelete(w http.ResponseWriter, r *http.Request) {
	id, ok := s.workingSession(w, r)
	if !ok {
		return
	}
	if err := s.o.History.DeleteWorking(r.Context(), id, r.PathValue("name")); err != nil {
		s.fail(w, badRequestIfInvalid(err))
		return
	}
	writeJSON(w, 200, map[string]bool{"deleted": true})
}

// badRequestIfInvalid shows a store's refusal of a bad key, value or query.
func badRequestIfInvalid(err error) error {
	if errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrBadCursor) {
		return badRequest("%v", err)
	}
	return err
}

// SearchHistory searches conversations through the API.
func (c *Client) SearchHistory(ctx context.Context, query string, agents []string, limit int, cursor string) (HistoryPage, error) {
	v := url.Values{"q": {query}}
	if len(agents) > 0 {
		v.Set("agent", strings.Join(agents, ","))
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	var page HistoryPage
	err := c.do(ctx, "GET", "/v1/history/search?"+v.Encode(), nil, &page)
	return page, err
}

// Routes of long-term memory (JSON; agent is the memory's scope):
//
//	GET  /v1/memory?agent=A&q=WORDS&limit=N&shared=true   recall (with q) or the newest memories
//	GET  /v1/memory/entities/{name}?agent=A              an entity with its observations and relations
//	POST /v1/memory/forget                                {agent, entities, observations, relations, insights}

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

func memoryErr(err error) error {
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return notFound("%v", err)
	case errors.Is(err, memory.ErrInvalid), errors.Is(err, memory.ErrBadArgs):
		return badRequest("%v", err)
	}
	return err
}

func (s *Server) routeLongTerm() {
	m := s.mux
	m.HandleFunc("GET /v1/memory", s.memorySearch)
	m.HandleFunc("GET /v1/memory/entities/{name}", s.memoryEntity)
	m.HandleFunc("POST /v1/memory/forget", s.memoryForget)
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
			s.fail(w, memoryErr(err))
			return
		}
		for _, it := range res.Items {
			page.Items = append(page.Items, memoryItem(it))
		}
		page.Degraded, page.Reason = res.Degraded, res.Reason
	} else {
		items, err := s.o.Memory.List(r.Context(), agentID, limit)
		if err != nil {
			s.fail(w, memoryErr(err))
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
		s.fail(w, memoryErr(err))
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
		s.fail(w, memoryErr(err))
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
