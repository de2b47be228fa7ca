package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/job"
	"agentd/internal/store"
)

// The watch, chain and heartbeat triggers through agentd serve: a file
// written under a watched workspace directory runs the job with its
// path; a run of a job runs the job chained after it with its output,
// once; a heartbeat runs in the agent's main session, quiet while the
// agent answers HEARTBEAT_OK, delivered when it answers otherwise after
// its prompt file is edited; a chain that would close a cycle is refused
// when saved, naming the field and the cycle.
func TestJobTriggersThroughTheDaemon(t *testing.T) {
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml":            openaiAgent(fake(t, "match all quiet\nsay HEARTBEAT_OK\nmatch .\nsay got: {{last_user}}\n"), ""),
		"workspace/notes/.keep":            "",
		"workspace/assistant/HEARTBEAT.md": "all quiet?",
		"extensions/job/notes.yaml": "type: job\nname: notes\nspec:\n  agent: assistant\n  prompt: \"changed {{payload.paths}}\"\n" +
			"  triggers: [{watch: {path: workspace/notes, glob: \"*.md\", debounce: 1s}}]\n",
		"extensions/job/parent.yaml": "type: job\nname: parent\nspec:\n  agent: assistant\n  prompt: \"parent\"\n",
		"extensions/job/child.yaml": "type: job\nname: child\nspec:\n  agent: assistant\n  prompt: \"child of [{{parent_output}}]\"\n" +
			"  triggers: [{chain: {after: parent, on: success}}]\n",
		"extensions/job/hb.yaml": "type: job\nname: hb\nspec:\n  agent: assistant\n" +
			"  triggers: [{heartbeat: {every: 1s, prompt_file: HEARTBEAT.md}}]\n  deliver: {session: assistant/inbox}\n",
	})
	serve(t, dir)

	// watch: written until a run shows it (the watch starts once the
	// daemon leads).
	note := filepath.Join(dir, "workspace", "notes", "today.md")
	waitRuns(t, dir, "notes", "a watch run", func(rs []job.Result) bool {
		for _, r := range rs {
			if r.Status == store.RunDone && r.Trigger == store.TriggerWatch && strings.Contains(r.Output, `changed ["today.md"]`) {
				return true
			}
		}
		os.WriteFile(note, []byte("x"), 0o600)
		return false
	})

	// chain
	if r := run(t, dir, "jobs", "run", "parent"); r.code != 0 {
		t.Fatalf("jobs run parent: %+v", r)
	}
	children := waitRuns(t, dir, "child", "a chained run", func(rs []job.Result) bool { return countStatus(rs, store.RunDone) >= 1 })
	if len(children) != 1 || children[0].Trigger != store.TriggerChain || !strings.Contains(children[0].Output, "child of [got: parent]") {
		t.Fatalf("chained runs %+v", children)
	}
	cycle := "type: job\nname: parent\nspec:\n  agent: assistant\n  prompt: p\n  triggers: [{chain: {after: child}}]\n"
	if r := runInput(t, dir, nil, cycle, "ext", "put", "-"); r.code != 1 ||
		!strings.Contains(r.stderr, "/spec/triggers/0/chain/after: a chain cannot close a cycle: parent → child → parent") {
		t.Fatalf("a cycle saved: %+v", r)
	}

	// heartbeat
	waitRuns(t, dir, "hb", "a quiet heartbeat", func(rs []job.Result) bool {
		for _, r := range rs {
			if r.Quiet && r.Session == "assistant/main" && r.Trigger == store.TriggerHeartbeat {
				return true
			}
		}
		return false
	})
	if err := os.WriteFile(filepath.Join(dir, "workspace", "assistant", "HEARTBEAT.md"), []byte("look at the disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, dir, "hb", "a heartbeat with something to say", func(rs []job.Result) bool {
		for _, r := range rs {
			if r.Status == store.RunDone && !r.Quiet && strings.Contains(r.Output, "got: look at the disk") {
				return true
			}
		}
		return false
	})
	run(t, dir, "jobs", "pause", "hb")
	if r := run(t, dir, "log", "assistant/inbox"); r.code != 0 || !strings.Contains(r.stdout, "got: look at the disk") || strings.Contains(r.stdout, "[job:hb] HEARTBEAT_OK") {
		t.Fatalf("the delivery session: %+v", r)
	}
}
