package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/netguard"
	"agentd/internal/secret"
	"agentd/internal/tool"
	"agentd/internal/tool/web"
	"agentd/internal/tool/web/webfake"
)

const testKey = "tvly-SECRET-0123456789"

// loopback lets the tools reach the test servers on 127.0.0.1 (only).
var loopback = []string{"127.0.0.1/32"}

// tools returns the web tools by name.
func tools(t *testing.T, o *web.Options) map[string]tool.Tool {
	t.Helper()
	m := map[string]tool.Tool{}
	for _, tl := range web.Tools(o) {
		m[tl.Spec().Name] = tl
	}
	return m
}

func call(t *testing.T, tl tool.Tool, session string, args any) (tool.Result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tl.Call(context.Background(), &tool.Call{Name: tl.Spec().Name, Args: raw, Agent: "a", Session: session})
}

func env(vals map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vals[k]; return v, ok }
}

func TestToolsOffered(t *testing.T) {
	if got := tools(t, nil); len(got) != 1 || got["web_fetch"] == nil {
		t.Errorf("without a backend: %v", got)
	}
	got := tools(t, &web.Options{Search: agent.WebSearchConfig{Backend: agent.SearchSearXNG, URL: "https://searx.example"}})
	for _, name := range []string{"web_fetch", "web_search"} {
		tl := got[name]
		if tl == nil {
			t.Fatalf("%s not offered", name)
		}
		if s := tl.Spec(); !s.AskFirst || s.Risky || s.ReadOnly {
			t.Errorf("%s: AskFirst %v Risky %v ReadOnly %v, want AskFirst only", name, s.AskFirst, s.Risky, s.ReadOnly)
		}
		if _, ok := tl.(tool.Previewer); !ok {
			t.Errorf("%s has no card", name)
		}
	}
}

// TestSearchBackends asks each fake backend, written from its API's
// documentation, through web_search.
func TestSearchBackends(t *testing.T) {
	for _, backend := range agent.SearchBackends {
		t.Run(backend, func(t *testing.T) {
			key := testKey
			if backend == agent.SearchSearXNG {
				key = ""
			}
			fake := webfake.New(backend, key, nil)
			defer fake.Close()
			ws := tools(t, &web.Options{
				Search:    agent.WebSearchConfig{Backend: backend, URL: fake.URL, KeyEnv: "SEARCH_KEY", Results: 2, AllowNetworks: loopback},
				LookupEnv: env(map[string]string{"SEARCH_KEY": testKey}),
			})["web_search"]
			res, err := call(t, ws, "s1", map[string]any{"query": "agentd runtime"})
			if err != nil {
				t.Fatal(err)
			}
			want := "1. agentd — a runtime for agents — https://agentd.example/\n" +
				"   A self-hosted runtime for LLM agents.\n\n" +
				"2. Installing agentd — https://agentd.example/docs/install\n" +
				"   One static binary; run agentd serve."
			if diff := cmp.Diff(want, res.Output); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if q := fake.Queries(); !cmp.Equal(q, []string{"agentd runtime"}) {
				t.Errorf("queries %q", q)
			}
		})
	}
}

// TestSearchCache: the same query in the same session is answered from
// the cache for 15 minutes; another session, another query or a later
// time asks again.
func TestSearchCache(t *testing.T) {
	fake := webfake.New(agent.SearchSearXNG, "", nil)
	defer fake.Close()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ws := tools(t, &web.Options{
		Search: agent.WebSearchConfig{Backend: agent.SearchSearXNG, URL: fake.URL, AllowNetworks: loopback},
		Now:    func() time.Time { return now },
	})["web_search"]
	steps := []struct {
		session, query string
		advance        time.Duration
		asks           int
	}{
		{"s1", "go", 0, 1},
		{"s1", "go", 0, 1},
		{"s1", " go ", 14 * time.Minute, 1},
		{"s2", "go", 0, 2},
		{"s1", "rust", 0, 3},
		{"s1", "go", 2 * time.Minute, 4},
	}
	for i, st := range steps {
		now = now.Add(st.advance)
		if _, err := call(t, ws, st.session, map[string]any{"query": st.query}); err != nil {
			t.Fatal(err)
		}
		if got := len(fake.Queries()); got != st.asks {
			t.Errorf("step %d: the backend was asked %d times, want %d", i, got, st.asks)
		}
	}
}

// TestSearchCacheBounded: the cache keeps at most CacheEntries searches.
func TestSearchCacheBounded(t *testing.T) {
	fake := webfake.New(agent.SearchSearXNG, "", nil)
	defer fake.Close()
	ws := tools(t, &web.Options{
		Search:       agent.WebSearchConfig{Backend: agent.SearchSearXNG, URL: fake.URL, AllowNetworks: loopback},
		CacheEntries: 2,
	})["web_search"]
	for _, q := range []string{"a", "b", "c", "a"} {
		if _, err := call(t, ws, "s", map[string]any{"query": q}); err != nil {
			t.Fatal(err)
		}
	}
	// "a" was evicted by "c", so it is asked twice.
	if got := fake.Queries(); !cmp.Equal(got, []string{"a", "b", "c", "a"}) {
		t.Errorf("queries %q", got)
	}
}

// TestSearchKeyNeverShown: a backend that quotes the key in its error,
// a missing key, a literal key: the key is in no error and no log line.
func TestSearchKeyNeverShown(t *testing.T) {
	for _, backend := range []string{agent.SearchBrave, agent.SearchTavily} {
		t.Run(backend, func(t *testing.T) {
			fake := webfake.New(backend, testKey, nil)
			defer fake.Close()
			fake.FailWith(http.StatusBadGateway)
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

			dir := t.TempDir()
			if err := secret.NewFile(dir).Set("SEARCH", testKey); err != nil {
				t.Fatal(err)
			}
			for _, cfg := range []agent.WebSearchConfig{
				{Backend: backend, URL: fake.URL, KeyEnv: "SEARCH_KEY", AllowNetworks: loopback},
				{Backend: backend, URL: fake.URL, Key: "${secret:SEARCH}", AllowNetworks: loopback},
			} {
				ws := tools(t, &web.Options{
					Search:    cfg,
					Secrets:   secret.NewResolver(dir, nil),
					LookupEnv: env(map[string]string{"SEARCH_KEY": testKey}),
					Logger:    log,
				})["web_search"]
				_, err := call(t, ws, "s", map[string]any{"query": "q"})
				if err == nil {
					t.Fatal("a failing backend gave no error")
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("the key is in the error: %v", err)
				}
				if !strings.Contains(err.Error(), "502") {
					t.Errorf("the error does not say what failed: %v", err)
				}
			}
			if strings.Contains(logs.String(), testKey) || !strings.Contains(logs.String(), "web search failed") {
				t.Errorf("logs:\n%s", logs.String())
			}
		})
	}
}

func TestSearchKeyErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  agent.WebSearchConfig
		want string
	}{
		{"env missing", agent.WebSearchConfig{Backend: agent.SearchBrave, KeyEnv: "NOPE"}, "NOPE"},
		{"no key", agent.WebSearchConfig{Backend: agent.SearchTavily}, "key_env"},
		{"literal key", agent.WebSearchConfig{Backend: agent.SearchBrave, Key: testKey}, "secret reference"},
		{"secret missing", agent.WebSearchConfig{Backend: agent.SearchBrave, Key: "${secret:GONE}"}, "${secret:GONE} is missing"},
		{"searxng without url", agent.WebSearchConfig{Backend: agent.SearchSearXNG}, "url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := tools(t, &web.Options{Search: tt.cfg, LookupEnv: env(nil), Secrets: secret.NewResolver(t.TempDir(), nil)})["web_search"]
			_, err := call(t, ws, "s", map[string]any{"query": "q"})
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), testKey) {
				t.Errorf("err = %v, want one naming %q without the key", err, tt.want)
			}
			if tt.name != "searxng without url" && !errors.Is(err, web.ErrNoKey) {
				t.Errorf("err = %v, want ErrNoKey", err)
			}
		})
	}
}

func TestSearchCard(t *testing.T) {
	ws := tools(t, &web.Options{Search: agent.WebSearchConfig{Backend: agent.SearchTavily, KeyEnv: "K"}})["web_search"]
	card, err := ws.(tool.Previewer).Preview(context.Background(), &tool.Call{Args: json.RawMessage(`{"query":"go generics"}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := tool.Card{Kind: tool.CardURL, Title: `Search tavily for "go generics"`, URL: "https://api.tavily.com", Method: "POST"}
	if diff := cmp.Diff(want, card); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// site serves the pages web_fetch tests read.
func site(t *testing.T) *httptest.Server {
	t.Helper()
	pdf, err := os.ReadFile("../../pdftext/testdata/hand.pdf")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/article", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<html><head><title>A page</title><script>leak("SCRIPT")</script></head>
<body><nav><a href="/">Home</a></nav><article><h1>Heading</h1><p>Some <a href="/next">linked</a> text.</p></article>
<footer>footer text</footer></body></html>`)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/article", http.StatusFound) })
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "just text ünïcode")
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<meta charset=\"iso-8859-1\"><title>Caf\xe9</title><p>cr\xe8me br\xfbl\xe9e</p>")
	})
	mux.HandleFunc("/latin1.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		io.WriteString(w, "na\xefve")
	})
	mux.HandleFunc("/doc.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(pdf)
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 100)))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, strings.Repeat("x", 5000))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<title>Not here</title><p>No such page.</p>")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestFetch(t *testing.T) {
	srv := site(t)
	wf := tools(t, &web.Options{Fetch: agent.WebFetchConfig{AllowNetworks: loopback, MaxBytes: 4096}})["web_fetch"]
	tests := []struct {
		path     string
		maxChars int
		want     string
		isError  bool
	}{
		{"/article", 0, "# A page\n" + srv.URL + "/article\n\n# Heading\n\nSome [linked](" + srv.URL + "/next) text.", false},
		{"/moved", 0, "# A page\n" + srv.URL + "/article\n\n# Heading\n\nSome [linked](" + srv.URL + "/next) text.", false},
		{"/plain", 0, srv.URL + "/plain\n\njust text ünïcode", false},
		{"/latin1", 0, "# Café\n" + srv.URL + "/latin1\n\ncrème brûlée", false},
		{"/latin1.txt", 0, srv.URL + "/latin1.txt\n\nnaïve", false},
		{"/doc.pdf", 0, srv.URL + "/doc.pdf\n\nA PDF made by hand\n", false},
		{"/image", 0, srv.URL + "/image\n\n[image/png content (108 bytes) not shown]", false},
		{"/big", 0, srv.URL + "/big\n\n(the body was cut at 4096 bytes)\n\n" + strings.Repeat("x", 4096), false},
		{"/plain", len(srv.URL) + 12, srv.URL + "/plain\n\njust", false},
		{"/missing", 0, "HTTP 404 Not Found\n# Not here\n" + srv.URL + "/missing\n\nNo such page.", true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			args := map[string]any{"url": srv.URL + tt.path}
			if tt.maxChars > 0 {
				args["max_chars"] = tt.maxChars
			}
			res, err := call(t, wf, "s", args)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Output
			if tt.path == "/doc.pdf" {
				got = got[:min(len(got), len(tt.want))]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if res.IsError != tt.isError {
				t.Errorf("IsError = %v", res.IsError)
			}
			if strings.Contains(res.Output, "SCRIPT") || strings.Contains(res.Output, "footer text") {
				t.Errorf("script or footer in the output: %s", res.Output)
			}
		})
	}
}

// TestFetchOutputCap: the agent's output cap bounds the text, and the
// rest is counted as omitted.
func TestFetchOutputCap(t *testing.T) {
	srv := site(t)
	wf := tools(t, &web.Options{Fetch: agent.WebFetchConfig{AllowNetworks: loopback}})["web_fetch"]
	raw, _ := json.Marshal(map[string]any{"url": srv.URL + "/big"})
	res, err := wf.Call(context.Background(), &tool.Call{Args: raw, MaxOutputBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output) != 100 || res.Omitted != int64(len(srv.URL)+len("/big\n\n")+5000-100) {
		t.Errorf("output %d bytes, omitted %d", len(res.Output), res.Omitted)
	}
}

// TestFetchSSRF: loopback without allow_networks, the metadata address,
// a private address, and a redirect from an allowed server to a blocked
// one (a server listening on 127.0.0.2 while only 127.0.0.1 is allowed)
// are all refused before any byte reaches them.
func TestFetchSSRF(t *testing.T) {
	srv := site(t)
	hits := 0
	inner := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		io.WriteString(w, "internal secret")
	}))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	inner.Listener.Close()
	inner.Listener = l
	inner.Start()
	defer inner.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	}))
	defer redirect.Close()

	closed := tools(t, nil)["web_fetch"]
	open := tools(t, &web.Options{Fetch: agent.WebFetchConfig{AllowNetworks: loopback}})["web_fetch"]
	tests := []struct {
		name string
		tl   tool.Tool
		url  string
	}{
		{"loopback", closed, srv.URL + "/article"},
		{"metadata", open, "http://169.254.169.254/latest/meta-data/"},
		{"private", open, "http://10.0.0.1/"},
		{"IPv6 loopback", closed, "http://[::1]:1/"},
		{"mapped metadata", open, "http://[::ffff:169.254.169.254]/"},
		{"redirect to 127.0.0.2", open, redirect.URL + "/?to=" + inner.URL + "/"},
		{"redirect to metadata", open, redirect.URL + "/?to=http://169.254.169.254/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call(t, tt.tl, "s", map[string]any{"url": tt.url})
			if !errors.Is(err, netguard.ErrBlocked) {
				t.Errorf("err = %v, want ErrBlocked", err)
			}
		})
	}
	for _, u := range []string{"file:///etc/passwd", "http://user:pw@example.com/", "gopher://x/"} {
		if _, err := call(t, open, "s", map[string]any{"url": u}); !errors.Is(err, netguard.ErrBadURL) {
			t.Errorf("%s: err = %v, want ErrBadURL", u, err)
		}
	}
	if _, err := call(t, open, "s", map[string]any{"url": redirect.URL + "/?to=file:///etc/passwd"}); !errors.Is(err, netguard.ErrBadURL) {
		t.Errorf("redirect to file: err = %v", err)
	}
	if hits != 0 {
		t.Errorf("the blocked server was reached %d times", hits)
	}
}

func TestFetchCard(t *testing.T) {
	wf := tools(t, nil)["web_fetch"]
	p := wf.(tool.Previewer)
	card, err := p.Preview(context.Background(), &tool.Call{Args: json.RawMessage(`{"url":"https://example.com/a?b=c"}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := tool.Card{Kind: tool.CardURL, Title: "Fetch https://example.com/a?b=c", URL: "https://example.com/a?b=c", Method: "GET", Exact: "https://example.com/a?b=c"}
	if diff := cmp.Diff(want, card); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := p.Preview(context.Background(), &tool.Call{Args: json.RawMessage(`{"url":"file:///etc/passwd"}`)}); err == nil {
		t.Error("a card for a file URL")
	}
}

// TestSearchSSRF: the backend is reached through the guard too: a
// SearXNG on loopback needs allow_networks, and the metadata address is
// refused.
func TestSearchSSRF(t *testing.T) {
	fake := webfake.New(agent.SearchSearXNG, "", nil)
	defer fake.Close()
	for _, u := range []string{fake.URL, "http://169.254.169.254"} {
		ws := tools(t, &web.Options{Search: agent.WebSearchConfig{Backend: agent.SearchSearXNG, URL: u}})["web_search"]
		if _, err := call(t, ws, "s", map[string]any{"query": "q"}); !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("%s: err = %v, want ErrBlocked", u, err)
		}
	}
	if n := len(fake.Queries()); n != 0 {
		t.Errorf("the fake was asked %d times", n)
	}
}
