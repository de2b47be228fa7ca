package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/netguard"
	"agentd/internal/secret"
	"agentd/internal/tool"
)

// Errors of web_search.
var (
	// ErrNoKey is wrapped by the error of a search whose API key is not
	// set: the variable or secret it names is missing.
	ErrNoKey = errors.New("web_search: the API key is not set")
	// ErrNoEndpoint is wrapped by the error of a SearXNG search without
	// the instance's URL.
	ErrNoEndpoint = errors.New("web_search: no backend URL")
)

// search is the web_search tool.
type search struct {
	cfg     agent.WebSearchConfig
	be      backend
	client  *http.Client
	cache   *cache
	secrets Secrets
	env     func(string) (string, bool)
	log     *slog.Logger
}

func newSearch(o *Options) *search {
	cfg := o.Search
	if cfg.Results <= 0 {
		cfg.Results = agent.DefaultSearchResults
	}
	cfg.Results = min(cfg.Results, maxCount)
	timeout := cfg.Timeout.D()
	if timeout <= 0 {
		timeout = agent.DefaultSearchTimeout
	}
	client := guard(cfg.AllowNetworks, o.Logger).Client(timeout)
	client.CheckRedirect = sameOrigin
	return &search{
		cfg:     cfg,
		be:      backends[cfg.Backend],
		client:  client,
		cache:   newCache(o.CacheEntries, o.CacheTTL, o.Now),
		secrets: o.Secrets,
		env:     o.LookupEnv,
		log:     o.Logger,
	}
}

// ErrRedirectElsewhere is wrapped by the error of a search whose backend
// redirects to another origin (scheme, host or port).
var ErrRedirectElsewhere = errors.New("the backend redirects to another origin")

// sameOrigin is the search client's CheckRedirect: the key is for the
// backend alone, and Go's client copies X-Subscription-Token (and, on a
// 307 or 308, Tavily's body) onto a redirect to any host, so a redirect
// is followed only within the origin of the first request, and as the
// SSRF guard allows.
func sameOrigin(req *http.Request, via []*http.Request) error {
	if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("%w: %s", ErrRedirectElsewhere, req.URL.Redacted())
	}
	return netguard.CheckRedirect(req, via)
}

// maxCount is the most results a search returns, what the APIs allow.
const maxCount = 20

const searchSchema = `{
	"type": "object",
	"properties": {
		"query": {"type": "string", "minLength": 1, "maxLength": 400, "description": "What to search the web for."},
		"count": {"type": "integer", "minimum": 1, "maximum": 20, "description": "How many results (default set by the agent's configuration)."}
	},
	"required": ["query"],
	"additionalProperties": false
}`

func (s *search) Spec() tool.Spec {
	return tool.Spec{
		Name: "web_search",
		Description: "Searches the web and returns numbered results: title — URL, then a snippet. " +
			"Use web_fetch to read a result. The same query in a session is answered from a cache for 15 minutes.",
		InputSchema: json.RawMessage(searchSchema),
		// Idempotent, not ReadOnly: a read-only tool may be run where
		// nobody approves (a widget's action), and a search spends the
		// backend's quota.
		Idempotent: true,
		AskFirst:   true,
		OptIn:      true,
	}
}

type searchArgs struct {
	Query string `json:"query"`
	Count int    `json:"count"`
}

func (s *search) args(raw json.RawMessage) (searchArgs, error) {
	var a searchArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("web_search: %w", err)
	}
	a.Query = strings.TrimSpace(a.Query)
	if a.Query == "" {
		return a, errors.New("web_search: the query is empty")
	}
	if a.Count <= 0 {
		a.Count = s.cfg.Results
	}
	a.Count = min(a.Count, maxCount)
	return a, nil
}

// Preview says which backend will be asked what; there is no "always"
// for a search (Exact "").
func (s *search) Preview(_ context.Context, c *tool.Call) (tool.Card, error) {
	a, err := s.args(c.Args)
	if err != nil {
		return tool.Card{}, err
	}
	base, err := s.base()
	if err != nil {
		return tool.Card{}, err
	}
	method := http.MethodGet
	if s.cfg.Backend == agent.SearchTavily {
		method = http.MethodPost
	}
	return tool.Card{
		Kind:   tool.CardURL,
		Title:  fmt.Sprintf("Search %s for %q", s.cfg.Backend, a.Query),
		URL:    base.Redacted(),
		Method: method,
	}, nil
}

// base returns the backend's base URL.
func (s *search) base() (*url.URL, error) {
	raw := s.cfg.URL
	if raw == "" {
		raw = s.be.base
	}
	if raw == "" {
		return nil, fmt.Errorf("%w: tools.web_search.url must give the %s instance's address", ErrNoEndpoint, s.cfg.Backend)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("web_search: the backend URL: %v", errors.Unwrap(err))
	}
	if err := netguard.CheckURL(u); err != nil {
		return nil, fmt.Errorf("web_search: the backend URL: %w", err)
	}
	return u, nil
}

func (s *search) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	a, err := s.args(c.Args)
	if err != nil {
		return tool.Result{}, err
	}
	cacheKey := c.Session + "\x00" + strconv.Itoa(a.Count) + "\x00" + a.Query
	if text, ok := s.cache.get(cacheKey); ok {
		s.log.Debug("web search from the cache", "backend", s.cfg.Backend, "session", c.Session)
		return tool.Result{Output: text}, nil
	}
	base, err := s.base()
	if err != nil {
		return tool.Result{}, err
	}
	key, ref, err := s.key()
	if err != nil {
		return tool.Result{}, err
	}
	results, err := s.ask(ctx, base, key, a)
	if err != nil {
		if key != "" && strings.Contains(err.Error(), key) {
			// An answer or a transport error quoted what was sent.
			err = errors.New(strings.ReplaceAll(err.Error(), key, ref))
		}
		s.log.Info("web search failed", "backend", s.cfg.Backend, "session", c.Session, "err", err)
		return tool.Result{}, err
	}
	s.log.Debug("web search", "backend", s.cfg.Backend, "session", c.Session, "results", len(results))
	text := format(a.Query, results)
	s.cache.put(cacheKey, text)
	return tool.Result{Output: text}, nil
}

// key resolves the API key, and names where it came from ("${env:X}",
// the secret reference) for messages. SearXNG needs none.
func (s *search) key() (key, ref string, err error) {
	switch {
	case s.cfg.KeyEnv != "":
		ref = "${env:" + s.cfg.KeyEnv + "}"
		v, ok := s.env(s.cfg.KeyEnv)
		if !ok || v == "" {
			return "", ref, fmt.Errorf("%w: the environment variable %s (tools.web_search.key_env) is empty", ErrNoKey, s.cfg.KeyEnv)
		}
		return v, ref, nil
	case s.cfg.Key != "":
		ref = s.cfg.Key
		parts, err := secret.Parse(s.cfg.Key)
		if err != nil || len(parts) != 1 || parts[0].Ref.Kind == "" {
			// A literal key is refused: it would sit in a file readable
			// as configuration, and be echoed by every dump of it.
			return "", "[key]", fmt.Errorf("%w: tools.web_search.key must be a secret reference such as ${secret:NAME}", ErrNoKey)
		}
		if s.secrets == nil {
			return "", ref, fmt.Errorf("%w: %s cannot be resolved here", ErrNoKey, ref)
		}
		v, _, err := s.secrets.Expand(s.cfg.Key)
		if err != nil || v == "" {
			return "", ref, fmt.Errorf("%w: %s is missing", ErrNoKey, ref)
		}
		return v, ref, nil
	case s.cfg.Backend != agent.SearchSearXNG:
		return "", "", fmt.Errorf("%w: set tools.web_search.key_env or key for %s", ErrNoKey, s.cfg.Backend)
	}
	return "", "", nil
}

// ask sends one search and reads its results, at most a.Count.
func (s *search) ask(ctx context.Context, base *url.URL, key string, a searchArgs) ([]result, error) {
	req, err := s.be.request(ctx, base, key, a.Query, a.Count)
	if err != nil {
		return nil, fmt.Errorf("web_search: %s: %w", s.cfg.Backend, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "agentd-web-search")
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("web_search: %s: %w", s.cfg.Backend, err)
	}
	defer resp.Body.Close()
	body, err := readAnswer(resp)
	if err != nil {
		return nil, fmt.Errorf("web_search: %s: %w", s.cfg.Backend, err)
	}
	results, err := s.be.parse(body)
	if err != nil {
		return nil, fmt.Errorf("web_search: %s: the answer is not the API's JSON: %w", s.cfg.Backend, err)
	}
	s.log.Debug("web search answered", "backend", s.cfg.Backend, "took", time.Since(start))
	if len(results) > a.Count {
		results = results[:a.Count]
	}
	return results, nil
}

// format writes results as numbered entries: "1. title — url" and the
// snippet on the next line.
func format(query string, results []result) string {
	if len(results) == 0 {
		return fmt.Sprintf("No results for %q.", query)
	}
	var b strings.Builder
	for i, r := range results {
		if i > 0 {
			b.WriteString("\n\n")
		}
		title := plain(r.Title)
		if title == "" {
			title = "(no title)"
		}
		fmt.Fprintf(&b, "%d. %s — %s", i+1, title, r.URL)
		if sn := plain(r.Snippet); sn != "" {
			b.WriteString("\n   " + sn)
		}
	}
	return b.String()
}
