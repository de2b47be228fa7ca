// Package webfake runs fake web search backends — SearXNG, Brave Search
// and Tavily — as local HTTP servers that answer the way each one's API
// documentation says, for tests of web_search in process and through the
// binary. Each handler cites the page it follows.
package webfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// Result is one search hit a fake returns.
type Result struct {
	Title, URL, Snippet string
}

// DefaultResults are what a fake returns when given none.
var DefaultResults = []Result{
	{"agentd — a runtime for agents", "https://agentd.example/", "A self-hosted runtime for <strong>LLM agents</strong>."},
	{"Installing agentd", "https://agentd.example/docs/install", "One static binary; run agentd serve."},
	{"agentd on GitHub", "https://github.example/agentd/agentd", "Source code and issues."},
}

// Server is a fake backend. Its URL is the base a web_search
// configuration's url takes.
type Server struct {
	*httptest.Server
	Backend string // searxng, brave or tavily
	Key     string // the API key it expects ("" for searxng: none)

	mu      sync.Mutex
	results []Result
	queries []string
	fail    int
}

// New starts a fake of backend expecting key, returning results (nil:
// DefaultResults). Close it when done.
func New(backend, key string, results []Result) *Server {
	if results == nil {
		results = DefaultResults
	}
	s := &Server{Backend: backend, Key: key, results: results}
	mux := http.NewServeMux()
	switch backend {
	case "searxng":
		mux.HandleFunc("/search", s.searxng)
	case "brave":
		mux.HandleFunc("/res/v1/web/search", s.brave)
	case "tavily":
		mux.HandleFunc("/search", s.tavily)
	default:
		panic("webfake: unknown backend " + strconv.Quote(backend))
	}
	s.Server = httptest.NewServer(mux)
	return s
}

// Queries returns the queries the fake has answered, in order.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

// FailWith makes the next searches fail with status code (0: answer
// again). The failing answer's body quotes the credentials the request
// carried, as a careless proxy might, so that tests can check they are
// not passed on.
func (s *Server) FailWith(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = code
}

// answer records q and returns the first n results, or false after
// writing the failure FailWith asked for.
func (s *Server) answer(w http.ResponseWriter, q string, n int, creds string) ([]Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != 0 {
		http.Error(w, fmt.Sprintf(`{"error": "failed for credentials %q"}`, creds), s.fail)
		return nil, false
	}
	s.queries = append(s.queries, q)
	if n <= 0 || n > len(s.results) {
		n = len(s.results)
	}
	return s.results[:n], true
}

// searxng answers GET /search?q=…&format=json as SearXNG's search API
// does (https://docs.searxng.org/dev/search_api.html): q is required;
// format=json must be asked for (an instance answers 403 Forbidden when the
// format is not enabled); results[] hold url, title and content.
func (s *Server) searxng(w http.ResponseWriter, r *http.Request) {
	q := r.FormValue("q")
	if r.FormValue("format") != "json" {
		http.Error(w, "403 Forbidden", http.StatusForbidden)
		return
	}
	if q == "" {
		http.Error(w, "missing q", http.StatusBadRequest)
		return
	}
	res, ok := s.answer(w, q, 0, r.Header.Get("Authorization"))
	if !ok {
		return
	}
	type item struct {
		URL     string   `json:"url"`
		Title   string   `json:"title"`
		Content string   `json:"content"`
		Engine  string   `json:"engine"`
		Engines []string `json:"engines"`
		Score   float64  `json:"score"`
	}
	out := struct {
		Query           string   `json:"query"`
		NumberOfResults int      `json:"number_of_results"`
		Results         []item   `json:"results"`
		Answers         []string `json:"answers"`
		Suggestions     []string `json:"suggestions"`
	}{Query: q, NumberOfResults: len(res), Results: []item{}, Answers: []string{}, Suggestions: []string{}}
	for i, x := range res {
		out.Results = append(out.Results, item{x.URL, x.Title, x.Snippet, "fake", []string{"fake"}, float64(len(res) - i)})
	}
	writeJSON(w, out)
}

// brave answers GET /res/v1/web/search as Brave's Web Search API does
// (https://api-dashboard.search.brave.com/api-reference/web/search/get):
// the X-Subscription-Token header carries the key; q is required (at most
// 400 characters); count is 1 to 20 (default 20); web.results[] hold
// title, url and description (which may hold <strong> marks).
func (s *Server) brave(w http.ResponseWriter, r *http.Request) {
	token := r.Header.Get("X-Subscription-Token")
	if token != s.Key {
		writeJSONStatus(w, http.StatusUnauthorized, map[string]any{"type": "ErrorResponse", "error": map[string]any{"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401}})
		return
	}
	q := r.URL.Query().Get("q")
	if q == "" || len(q) > 400 {
		writeJSONStatus(w, http.StatusUnprocessableEntity, map[string]any{"type": "ErrorResponse", "error": map[string]any{"code": "VALIDATION", "status": 422}})
		return
	}
	n, _ := strconv.Atoi(r.URL.Query().Get("count"))
	if n < 0 || n > 20 {
		writeJSONStatus(w, http.StatusUnprocessableEntity, map[string]any{"type": "ErrorResponse", "error": map[string]any{"code": "VALIDATION", "status": 422}})
		return
	}
	res, ok := s.answer(w, q, n, token)
	if !ok {
		return
	}
	type item struct {
		Title       string `json:"title"`
		URL         string `json:"url"`
		Description string `json:"description"`
	}
	items := []item{}
	for _, x := range res {
		items = append(items, item{x.Title, x.URL, x.Snippet})
	}
	writeJSON(w, map[string]any{
		"type":  "search",
		"query": map[string]any{"original": q},
		"web":   map[string]any{"type": "search", "results": items},
	})
}

// tavily answers POST /search as Tavily's search API does
// (https://docs.tavily.com/api-reference/endpoint/search): a JSON body
// with query (required) and max_results (0 to 20, default 5); the key as
// "Authorization: Bearer <key>" (older clients put it in the body as
// api_key, which is accepted too); results[] hold title, url, content
// and score.
func (s *Server) tavily(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var body struct {
		Query      string `json:"query"`
		MaxResults *int   `json:"max_results"`
		APIKey     string `json:"api_key"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSONStatus(w, http.StatusBadRequest, map[string]any{"detail": map[string]string{"error": "invalid JSON"}})
		return
	}
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if key == "" {
		key = body.APIKey
	}
	if key != s.Key {
		writeJSONStatus(w, http.StatusUnauthorized, map[string]any{"detail": map[string]string{"error": "Unauthorized: missing or invalid API key."}})
		return
	}
	n := 5
	if body.MaxResults != nil {
		n = *body.MaxResults
	}
	if body.Query == "" || n < 0 || n > 20 {
		writeJSONStatus(w, http.StatusBadRequest, map[string]any{"detail": map[string]string{"error": "invalid request"}})
		return
	}
	res, ok := s.answer(w, body.Query, n, key)
	if !ok {
		return
	}
	type item struct {
		Title   string  `json:"title"`
		URL     string  `json:"url"`
		Content string  `json:"content"`
		Score   float64 `json:"score"`
	}
	items := []item{}
	for i, x := range res {
		items = append(items, item{x.Title, x.URL, x.Snippet, 1 / float64(i+1)})
	}
	writeJSON(w, map[string]any{"query": body.Query, "answer": nil, "images": []any{}, "results": items, "response_time": "0.01"})
}

func writeJSON(w http.ResponseWriter, v any) { writeJSONStatus(w, http.StatusOK, v) }

func writeJSONStatus(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
