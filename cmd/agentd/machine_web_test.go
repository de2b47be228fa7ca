package main

// web_fetch and web_search through the binary: a page on 127.0.0.1
// comes back as readable Markdown where agentd.yaml lets web_fetch reach
// that network, and is refused by the SSRF guard where it does not;
// web_search asks a SearXNG fake.

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"agentd/internal/tool/web/webfake"
)

const machinePage = `<!doctype html><html><head><title>The Tides</title>
<script>var stolen = "script-text-must-not-show";</script></head>
<body><nav><a href="/">Home</a> | nav-text-must-not-show</nav>
<article><h1>The Tides</h1>
<p>The tides are the rise and fall of the sea, caused by the <a href="/moon">Moon</a> and the Sun.</p>
<p>Most coasts have two high tides and two low tides every day, a little under twenty-five hours apart.</p>
</article><footer>footer-text-must-not-show</footer></body></html>`

func TestMachineWeb(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, machinePage)
	}))
	defer page.Close()
	search := webfake.New("searxng", "", nil)
	defer search.Close()
	addr := fake(t, callScript(t,
		scripted{"fetch", "web_fetch", map[string]string{"url": page.URL + "/tides"}},
		scripted{"search", "web_search", map[string]string{"query": "agentd runtime"}},
	))
	tools := []string{"web_fetch", "web_search"}
	agentFile := machineAgent(addr, tools, tools, "")
	searchConf := "  web_search:\n    backend: searxng\n    url: " + search.URL + "\n    allow_networks: [127.0.0.1/32]\n"

	files := map[string]string{
		"agents/w.yaml": agentFile,
		"agentd.yaml":   "tools:\n  web_fetch:\n    allow_networks: [127.0.0.1/32]\n" + searchConf,
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		out := okResult(t, w.dir, "w/s1", "fetch", "web_fetch")
		for _, want := range []string{"# The Tides\n" + page.URL + "/tides\n", "caused by the [Moon](" + page.URL + "/moon)", "two high tides"} {
			if !strings.Contains(out, want) {
				t.Errorf("web_fetch said %q; want %q in it", out, want)
			}
		}
		for _, not := range []string{"script-text", "nav-text", "footer-text", "<p>"} {
			if strings.Contains(out, not) {
				t.Errorf("web_fetch said %q; want no %q", out, not)
			}
		}
		out = okResult(t, w.dir, "w/s1", "search", "web_search")
		if !strings.Contains(out, "1. agentd — a runtime for agents — https://agentd.example/") || !strings.Contains(out, "Installing agentd") {
			t.Errorf("web_search said %q", out)
		}
	})
	if q := search.Queries(); len(q) != 2 || !slices.Equal(q[:1], []string{"agentd runtime"}) {
		t.Errorf("the search backend was asked %q; want the query once each way", q)
	}

	// Without allow_networks, the same page is a loopback address the
	// SSRF guard refuses.
	dir := dataDir(t, map[string]string{"agents/w.yaml": agentFile})
	serve(t, dir)
	out := errResult(t, dir, "w/s1", "fetch", "web_fetch")
	if strings.Contains(out, "Tides") || !strings.Contains(out, "not allowed") {
		t.Errorf("web_fetch of 127.0.0.1 without allow_networks said %q; want refused by the guard", out)
	}
}
