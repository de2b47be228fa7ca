package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/tool/web"
)

// TestAttackSearchKeyFollowsARedirect: Brave's key goes in
// X-Subscription-Token, a header Go's client copies onto every redirect,
// to any host (it drops only Authorization, Cookie and WWW-Authenticate
// when the host changes). A search backend that answers with a redirect
// — a compromised or mistyped tools.web_search.url, a proxy in front of
// the API — sends the key to wherever it points. The search client
// should not follow redirects to another host (or drop the header on
// them), as the key is for the backend alone.
func TestAttackSearchKeyFollowsARedirect(t *testing.T) {
	var mu sync.Mutex
	var got string
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Get("X-Subscription-Token")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"web":{"results":[]}}`))
	}))
	defer elsewhere.Close()
	// the same server under another host name: localhost for 127.0.0.1
	other := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other+"/collect", http.StatusFound)
	}))
	defer backend.Close()
	ws := tools(t, &web.Options{
		Search:    agent.WebSearchConfig{Backend: agent.SearchBrave, URL: backend.URL, KeyEnv: "SEARCH_KEY", AllowNetworks: loopback},
		LookupEnv: env(map[string]string{"SEARCH_KEY": testKey}),
	})["web_search"]
	res, err := call(t, ws, "s1", map[string]any{"query": "q"})
	mu.Lock()
	defer mu.Unlock()
	if got == testKey {
		t.Errorf("the search key was sent to the host a redirect named (%s): %q %v", other, res.Output, err)
	}
}
