package gateway

// The routes of conversation history (search over every session's
// messages) and of sessions' working memory.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"agentd/internal/event"
	"agentd/internal/store"
)

// History searches conversations and keeps sessions' working memory.
type History interface {
	SearchHistory(ctx context.Context, q store.HistoryQuery) ([]store.HistoryHit, string, error)
	SessionByAddress(ctx context.Context, agent, key string) (store.Session, error)
	SetWorking(ctx context.Context, session int64, key string, value json.RawMessage) (event.Event, error)
	DeleteWorking(ctx context.Context, session int64, key string) (event.Event, error)
	Working(ctx context.Context, session int64) (map[string]json.RawMessage, error)
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
		s.fail(w, err)
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
	if name := r.PathValue("name"); store.OwnWorkingKey(name) {
		s.fail(w, badRequest(`%s: keys beginning with "_" are agentd's own (a context's state)`, name))
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
	if _, err := s.o.History.SetWorking(r.Context(), id, r.PathValue("name"), v); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]json.RawMessage{r.PathValue("name"): v})
}

func (s *Server) workingDelete(w http.ResponseWriter, r *http.Request) {
	id, ok := s.workingSession(w, r)
	if !ok {
		return
	}
	if _, err := s.o.History.DeleteWorking(r.Context(), id, r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]bool{"deleted": true})
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
