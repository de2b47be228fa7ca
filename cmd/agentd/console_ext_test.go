package main

// The console's extension pages end to end: test/console/extensions.spec.mjs
// drives the Extensions page, the controls, the home page's widgets and
// the artifacts beside the chat in headless Chromium, against `agentd
// serve --listen` and a scripted model that makes an artifact.

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

// consoleExtScript is the model: it writes the weekly report as an
// artifact when asked, and names the chat.
const consoleExtScript = `
match ^Conversation to name
say The weekly report

match (?i)update the report
call artifact {"action": "update", "name": "report", "content": "# Weekly report\n\n- version two"}
---
say Updated.

match (?i)weekly report
call artifact {"action": "create", "name": "report", "title": "Weekly report", "kind": "markdown", "content": "# Weekly report\n\n- the console shows artifacts"}
---
say The report is beside the chat.

match *
say Ask me for the weekly report.
`

func TestConsoleExtensions(t *testing.T) {
	chromium, node := consoleDeps(t)
	addr := fake(t, consoleExtScript)
	dir := dataDir(t, nil)
	d, token := serveConsole(t, dir, map[string]string{
		// Changing extension rows over TCP is an admin route.
		"agentd.yaml":           "gateway:\n  remote_admin: true\nprices:\n  fake:\n    input: 3\n    output: 15\n",
		"agents/assistant.yaml": "name: Assistant\n" + strings.TrimPrefix(openaiAgent(addr, "budgets:\n  max_steps: 5\n"), "name: Tester\n"),
	})
	for _, route := range []string{"/v1/extensions/schemas", "/v1/widgets", "/v1/artifacts"} {
		req, _ := http.NewRequest("GET", "http://"+d.addr+route, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusNotImplemented {
			if os.Getenv("AGENTD_INTEROP") == "1" {
				t.Fatalf("GET %s: status %d: this agentd has no extensions for the console to show", route, res.StatusCode)
			}
			t.Skipf("skipping: GET %s: status %d", route, res.StatusCode)
		}
	}
	runSpec(t, d, token, chromium, node, "extensions.spec.mjs")
}

// TestConsoleControls runs test/console/controls.spec.mjs against agentd
// as it is set up by default (no gateway.remote_admin): a control is
// flipped in the console with its login alone, and a change only an admin
// route makes is refused there with its reason.
func TestConsoleControls(t *testing.T) {
	chromium, node := consoleDeps(t)
	d, token := serveConsole(t, dataDir(t, nil), map[string]string{"agents/assistant.yaml": "name: Assistant\nmodel:\n  provider: echo\n"})
	runSpec(t, d, token, chromium, node, "controls.spec.mjs")
}
