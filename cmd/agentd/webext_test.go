package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// webextScript is the model: asked for a report, it writes an artifact
// with the artifact tool; asked for an app, it builds one with the
// extensions tool.
const webextScript = `
match (?i)change the app
call extensions {"op": "put", "type": "app", "name": "agentapp", "spec": {"title": "Mine", "files": {"index.html": "<p>changed</p>"}}}
---
say Changed: {{tool_result}}

match (?i)build an app
call extensions {"op": "put", "type": "app", "name": "agentapp", "spec": {"title": "Mine", "files": {"index.html": "<p>mine</p>"}}}
---
say Built: {{tool_result}}

match (?i)report
call artifact {"action": "create", "name": "report", "title": "Report", "kind": "html", "content": "<script>alert(1)</script>"}
---
say Written: {{tool_result}}

match *
say ok
`

// The web types through the daemon: an app and a widget from the data
// directory's extensions/, an artifact an agent writes with its tool in a
// turn sent to the daemon, each read over TCP with the token; and an app
// an agent builds is served only once a person enables it, and an
// agent's change to it only once a person enables it again.
func TestWebExtensionsThroughTheDaemon(t *testing.T) {
	addr := fake(t, webextScript)
	dir := dataDir(t, map[string]string{
		"agents/tester.yaml": openaiAgent(addr, "tools:\n  allow: [artifact, extensions]\n"),
		"extensions/app/hello.yaml": "type: app\nname: hello\nspec:\n  title: Hello\n  files:\n" +
			"    index.html: \"<!doctype html><script type=module src=app.js></script>\"\n    app.js: \"fetch('/v1/widgets')\"\n",
		"extensions/widget/recent.yaml": "type: widget\nname: recent\nspec:\n  title: Recent\n  query: {kind: sessions, limit: 5}\n",
	})
	token := strings.TrimSpace(okRun(t, dir, "token"))
	token = token[strings.LastIndex(token, " ")+1:]
	d := &tcpDaemon{t: t, dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), out: &syncBuffer{}}
	d.start()
	t.Cleanup(d.kill)

	get := func(path string, auth bool) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+d.addr+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, _ := get("/v1/widgets", true); resp.StatusCode == http.StatusNotImplemented {
		t.Skip("skipping: this agentd does not wire the web extension types yet")
	}

	okRun(t, dir, "send", "tester", "write the report")
	if out := okRun(t, dir, "send", "tester", "build an app"); !strings.Contains(out, `"enabled":false`) {
		t.Errorf("the agent's app: %s", out)
	}

	resp, body := get("/v1/widgets", true)
	var widgets struct {
		Widgets []struct {
			Name  string
			Data  []map[string]any
			Error string
		}
	}
	if err := json.Unmarshal([]byte(body), &widgets); err != nil || resp.StatusCode != 200 ||
		len(widgets.Widgets) != 1 || widgets.Widgets[0].Error != "" || len(widgets.Widgets[0].Data) == 0 {
		t.Errorf("widgets: %d %s", resp.StatusCode, body)
	}

	resp, body = get("/v1/artifacts", true)
	if resp.StatusCode != 200 || !strings.Contains(body, `"name":"report"`) || !strings.Contains(body, `"agent":"tester"`) {
		t.Errorf("artifacts: %d %s", resp.StatusCode, body)
	}
	resp, body = get("/v1/artifacts/report/download", true)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") || body != "<script>alert(1)</script>" {
		t.Errorf("download: %d %v %q", resp.StatusCode, resp.Header, body)
	}

	resp, body = get("/apps/hello/", true)
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") ||
		!strings.Contains(body, "app.js") {
		t.Errorf("app: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	if resp, _ := get("/apps/hello/", false); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("app without the token: %d", resp.StatusCode)
	}
	if resp, body := get("/apps/agentapp/", true); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an app an agent built, which no person enabled: %d %q", resp.StatusCode, body)
	}
	okRun(t, dir, "ext", "enable", "app/agentapp")
	if resp, body := get("/apps/agentapp/", true); resp.StatusCode != 200 || body != "<p>mine</p>" {
		t.Errorf("enabled by a person: %d %q", resp.StatusCode, body)
	}
	// An agent's change of an enabled app disables it until a person
	// enables the new version: nothing it wrote is served before.
	okRun(t, dir, "send", "tester", "change the app")
	if resp, body := get("/apps/agentapp/", true); resp.StatusCode != http.StatusNotFound {
		t.Errorf("after the agent's change, before a person enabled it: %d %q", resp.StatusCode, body)
	}
	okRun(t, dir, "ext", "enable", "app/agentapp")
	if resp, body := get("/apps/agentapp/", true); resp.StatusCode != 200 || body != "<p>changed</p>" {
		t.Errorf("enabled again by a person: %d %q", resp.StatusCode, body)
	}
}
