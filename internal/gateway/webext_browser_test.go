package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentd/internal/gateway"
	"agentd/internal/store"
	"agentd/internal/webext"
)

// browserDeps finds Chromium, node and playwright-core, or skips the
// test (fails it with AGENTD_INTEROP=1).
func browserDeps(t *testing.T) (chromium, node string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatalf("the test needs %s (apt-get install -y chromium; npm ci --prefix test/npm)", what)
		}
		t.Skipf("skipping: %s (apt-get install -y chromium; npm ci --prefix test/npm)", what)
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("Chromium at " + chromium)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "test", "npm", "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core")
	}
	return chromium, node
}

// probeApp tries what an app's CSP must stop: an inline script, an inline
// style, a connection to another origin; and calls the API with the
// console's login from its own script.
var probeApp = map[string]string{
	"index.html": `<!doctype html><title>probe</title><link rel=stylesheet href=app.css>
<script>document.title = 'inline ran'; alert('inline ran')</script>
<div id=out>waiting</div><div id=ext>waiting</div><div id=styled style="color: rgb(255, 0, 0)">styled</div>
<script type=module src=js/app.js></script>`,
	"app.css": "#out { color: rgb(0, 128, 0); }",
	"js/app.js": `const r = await fetch('/v1/widgets');
document.getElementById('out').textContent = 'widgets ' + r.status;
try { await fetch('http://127.0.0.2:9/'); document.getElementById('ext').textContent = 'reached'; }
catch { document.getElementById('ext').textContent = 'blocked'; }`,
}

// Chromium enforces an app's CSP: its own script runs and reaches the API
// with the console's login; inline script and style, and connections
// elsewhere, are refused; an artifact's HTML downloads without running.
func TestAppInChromium(t *testing.T) {
	chromium, node := browserDeps(t)
	srv, apps := webextServer(t)
	spec, _ := json.Marshal(webext.App{Title: "Probe", Files: probeApp})
	if err := apps.Activate(t.Context(), &store.Extension{Type: "app", Name: "probe", Spec: spec, Enabled: true, Version: 1, Provenance: store.ProvenanceUser}); err != nil {
		t.Fatal(err)
	}
	tk, tok := authTokens(t)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: ts.Listener.Addr().String()})
	ts.Start()
	t.Cleanup(ts.Close)

	script, _ := filepath.Abs(filepath.Join("..", "..", "test", "apps", "app.spec.mjs"))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "URL="+ts.URL, "TOKEN="+tok, "CHROMIUM="+chromium)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Log(line)
	}
	if err != nil {
		t.Fatalf("app.spec.mjs: %v", err)
	}
}
