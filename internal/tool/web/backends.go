package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"

	"agentd/internal/agent"
)

// result is one search hit.
type result struct {
	Title, URL, Snippet string
}

// maxAnswer bounds the bytes of a backend's answer read.
const maxAnswer = 4 << 20

// backend is how one search API is asked.
type backend struct {
	// base is the API's default base URL ("": the configuration must
	// give one).
	base string
	// request builds the request for query and count, with key.
	request func(ctx context.Context, base *url.URL, key, query string, count int) (*http.Request, error)
	// parse reads the answer's results.
	parse func(body []byte) ([]result, error)
}

// backends are the search APIs web_search knows, by agent's names.
var backends = map[string]backend{
	agent.SearchSearXNG: {request: searxngRequest, parse: resultsParse},
	agent.SearchBrave:   {base: "https://api.search.brave.com", request: braveRequest, parse: braveParse},
	agent.SearchTavily:  {base: "https://api.tavily.com", request: tavilyRequest, parse: resultsParse},
}

// endpoint returns base with path added to its own.
func endpoint(base *url.URL, path string) *url.URL {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	return &u
}

// searxngRequest asks a SearXNG instance's search API: GET /search with
// q and format=json (https://docs.searxng.org/dev/search_api.html). The
// API takes no count: the answer is cut after count results.
func searxngRequest(ctx context.Context, base *url.URL, _, query string, _ int) (*http.Request, error) {
	u := endpoint(base, "/search")
	q := u.Query()
	q.Set("q", query)
	q.Set("format", "json")
	u.RawQuery = q.Encode()
	return http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
}

// resultsParse reads the answer of SearXNG and Tavily alike: both give
// {"results": [{"title", "url", "content"}]}.
func resultsParse(body []byte) ([]result, error) {
	var a struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, err
	}
	var out []result
	for _, r := range a.Results {
		out = append(out, result{r.Title, r.URL, r.Content})
	}
	return out, nil
}

// braveRequest asks Brave's Web Search API: GET /res/v1/web/search with
// q and count (at most 20), the key in X-Subscription-Token
// (https://api-dashboard.search.brave.com/api-reference/web/search/get).
func braveRequest(ctx context.Context, base *url.URL, key, query string, count int) (*http.Request, error) {
	u := endpoint(base, "/res/v1/web/search")
	q := u.Query()
	q.Set("q", query)
	q.Set("count", strconv.Itoa(count))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Subscription-Token", key)
	return req, nil
}

func braveParse(body []byte) ([]result, error) {
	var a struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, err
	}
	var out []result
	for _, r := range a.Web.Results {
		out = append(out, result{r.Title, r.URL, r.Description})
	}
	return out, nil
}

// tavilyRequest asks Tavily's search API: POST /search with a JSON body
// holding query and max_results (at most 20), the key as a bearer token
// (https://docs.tavily.com/api-reference/endpoint/search).
func tavilyRequest(ctx context.Context, base *url.URL, key, query string, count int) (*http.Request, error) {
	body, err := json.Marshal(map[string]any{"query": query, "max_results": count, "search_depth": "basic"})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint(base, "/search").String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return req, nil
}

// readAnswer reads a backend's answer: its body when the status is 2xx,
// else an error quoting the status and the start of the body.
func readAnswer(resp *http.Response) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.ToValidUTF8(msg, "\uFFFD"))
	}
	return body, nil
}

// plain returns s without HTML marks (Brave's <strong>) and entities,
// whitespace collapsed.
func plain(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return strings.Join(strings.Fields(s), " ")
	}
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case html.TextToken:
			b.Write(z.Text())
		}
	}
}
