package main

// The console's Jobs page end to end: test/console/jobs.spec.mjs drives it
// in headless Chromium against `agentd serve --listen`, with a job that
// fires every second on the scripted model. Chromium runs in the time
// zone Asia/Kolkata (TZ), so the page's times prove they are the
// viewer's, not agentd's (UTC here) nor the fire's.

import (
	"strings"
	"testing"
)

func TestConsoleJobs(t *testing.T) {
	chromium, node := consoleDeps(t)
	addr := fake(t, "match ^Conversation to name\nsay A job's run\n\nmatch .\nsay got: {{last_user}}\n")
	d, token := serveConsole(t, dataDir(t, nil), map[string]string{
		"agentd.yaml":           "prices:\n  fake:\n    input: 3\n    output: 15\n",
		"agents/assistant.yaml": "name: Assistant\n" + strings.TrimPrefix(openaiAgent(addr, ""), "name: Tester\n"),
		"extensions/job/tick.yaml": "type: job\nname: tick\nspec:\n  agent: assistant\n  prompt: \"tick {{fired_at}}\"\n" +
			"  triggers: [{every: 1s}]\n  deliver: {none: true}\n",
		"extensions/job/brief.yaml": "type: job\nname: brief\nspec:\n  agent: assistant\n  description: The morning briefing\n  prompt: brief\n" +
			"  triggers: [{cron: \"0 8 * * 1-5\", tz: Europe/Berlin}]\n",
		"extensions/job/follow.yaml": "type: job\nname: follow\nspec:\n  agent: assistant\n  prompt: \"tick failed: {{parent_output}}\"\n" +
			"  triggers: [{chain: {after: tick, on: failure}}]\n",
	})
	// The browser's zone, not agentd's: set after agentd started.
	t.Setenv("TZ", "Asia/Kolkata")
	runSpec(t, d, token, chromium, node, "jobs.spec.mjs")
}
