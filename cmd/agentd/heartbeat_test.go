package main

import (
	"encoding/json"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/job"
	"agentd/internal/store"
)

// A heartbeat that had nothing to do leaves no trace in what the model
// reads, through agentd serve: two agents with heartbeats every second,
// calm's answered HEARTBEAT_OK and loud's with something to say; the
// model request of a person's next turn in calm's main session holds
// neither the heartbeat's prompt nor HEARTBEAT_OK, that in loud's holds
// the heartbeat and its answer. agentd log still shows every turn, the
// heartbeats' marked, and the log keeps the quiet turns' events.
func TestQuietHeartbeatThroughTheDaemon(t *testing.T) {
	rec := fakeRec(t, "match all quiet\nsay HEARTBEAT_OK\nmatch check the disk\nsay the disk is full\nmatch .\nsay got: {{last_user}}\n")
	hb := func(agent, prompt string) string {
		return "type: job\nname: " + agent + "-hb\nspec:\n  agent: " + agent + "\n" +
			"  triggers: [{heartbeat: {every: 1s, prompt: \"" + prompt + "\"}}]\n"
	}
	dir := dataDir(t, map[string]string{
		"agents/calm.yaml":            openaiAgent(rec.addr, ""),
		"agents/loud.yaml":            openaiAgent(rec.addr, ""),
		"extensions/job/calm-hb.yaml": hb("calm", "all quiet?"),
		"extensions/job/loud-hb.yaml": hb("loud", "check the disk"),
	})
	serve(t, dir)
	for _, name := range []string{"calm-hb", "loud-hb"} {
		waitRuns(t, dir, name, "two heartbeats", func(rs []job.Result) bool { return countStatus(rs, store.RunDone) >= 2 })
		if r := run(t, dir, "jobs", "pause", name); r.code != 0 {
			t.Fatalf("jobs pause %s: %+v", name, r)
		}
	}
	// A run paused under way ends on its own.
	for _, name := range []string{"calm-hb", "loud-hb"} {
		waitRuns(t, dir, name, "the heartbeats' ends", allEnded)
	}
	// Every heartbeat that ran answered HEARTBEAT_OK and is quiet; one
	// skipped because the one before still ran (a slow machine) ran none.
	if runs := jobRuns(t, dir, "calm-hb"); countQuiet(runs) != countStatus(runs, store.RunDone) || countQuiet(runs) < 2 {
		t.Fatalf("calm's heartbeats: %+v", runs)
	}
	for _, agent := range []string{"calm", "loud"} {
		if r := run(t, dir, "send", agent+"/main", "hello "+agent); r.code != 0 || !strings.Contains(r.stdout, "got: hello "+agent) {
			t.Fatalf("send to %s: %+v", agent, r)
		}
	}
	calm, loud := rec.requestOf(t, "hello calm"), rec.requestOf(t, "hello loud")
	if strings.Contains(calm, "all quiet?") || strings.Contains(calm, event.HeartbeatOK) {
		t.Errorf("the person's turn in calm/main sent the quiet heartbeats: %s", calm)
	}
	if !strings.Contains(loud, "check the disk") || !strings.Contains(loud, "the disk is full") {
		t.Errorf("the person's turn in loud/main did not send the heartbeats with an answer: %s", loud)
	}

	// agentd log shows the quiet heartbeats, marked; the log keeps them.
	r := run(t, dir, "log", "calm/main")
	if r.code != 0 || !strings.Contains(r.stdout, "all quiet?") || !strings.Contains(r.stdout, "(heartbeat)") ||
		!strings.Contains(r.stdout, "(heartbeat: nothing to do; left out of the context and the chat)") || !strings.Contains(r.stdout, "hello calm") {
		t.Fatalf("agentd log calm/main: %+v", r)
	}
	if r := run(t, dir, "log", "loud/main"); r.code != 0 || !strings.Contains(r.stdout, "(heartbeat)") || strings.Contains(r.stdout, "nothing to do") {
		t.Fatalf("agentd log loud/main: %+v", r)
	}
	r = run(t, dir, "log", "calm/main", "--json")
	beats, quiet := 0, 0
	for line := range strings.Lines(r.stdout) {
		var ev event.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		var in event.InputData
		var end event.TurnEndData
		switch {
		case ev.Kind == event.Input && ev.Decode(&in) == nil && in.Heartbeat():
			beats++
		case ev.Kind == event.TurnEnd && ev.Decode(&end) == nil && end.NothingToDo():
			quiet++
		}
	}
	if n := len(jobRuns(t, dir, "calm-hb")); beats != n || quiet != n {
		t.Errorf("the log holds %d heartbeat inputs and %d quiet ends for %d runs:\n%s", beats, quiet, n, r.stdout)
	}
}

// countQuiet counts the quiet runs.
func countQuiet(runs []job.Result) int {
	n := 0
	for _, r := range runs {
		if r.Quiet {
			n++
		}
	}
	return n
}

// requestOf returns, as its JSON body, the model request of the turn
// whose input is text.
func (r *recorder) requestOf(t *testing.T, text string) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, body := range r.bodies {
		var req chatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" && req.Messages[n-1].Content == text {
			return string(body)
		}
	}
	t.Fatalf("no model request of the turn %q", text)
	return ""
}

// In the web console (headless Chromium), the main chat of an agent
// whose heartbeats have nothing to do shows none of them, live or
// reloaded, and a heartbeat with something to say shows as a message
// (test/console/heartbeat.spec.mjs).
func TestConsoleHeartbeats(t *testing.T) {
	chromium, node := consoleDeps(t)
	addr := fake(t, "match ^Conversation to name\nsay Main\nmatch all quiet\nsay HEARTBEAT_OK\nmatch check the disk\nsay the disk is full\nmatch .\nsay got: {{last_user}}\n")
	hb := func(agent, prompt string) string {
		return "type: job\nname: " + agent + "-hb\nspec:\n  agent: " + agent + "\n" +
			"  triggers: [{heartbeat: {every: 1s, prompt: \"" + prompt + "\"}}]\n"
	}
	d, token := serveConsole(t, dataDir(t, nil), map[string]string{
		"agents/assistant.yaml":            "name: Assistant\n" + strings.TrimPrefix(openaiAgent(addr, ""), "name: Tester\n"),
		"agents/loud.yaml":                 "name: Loud\n" + strings.TrimPrefix(openaiAgent(addr, ""), "name: Tester\n"),
		"extensions/job/assistant-hb.yaml": hb("assistant", "all quiet?"),
		"extensions/job/loud-hb.yaml":      hb("loud", "check the disk"),
	})
	runSpec(t, d, token, chromium, node, "heartbeat.spec.mjs")
}
