package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/gateway"
)

// prefixDir is a data directory with the agents assistant, researcher
// and keeper (tagged memory-keeper) on an echoing model, and the command
// /standup.
func prefixDir(t *testing.T) string {
	t.Helper()
	addr := fake(t, "match .\nsay got: {{last_user}}\n")
	return dataDir(t, map[string]string{
		"agents/assistant.yaml":  openaiAgent(addr, ""),
		"agents/researcher.yaml": openaiAgent(addr, ""),
		"agents/keeper.yaml":     openaiAgent(addr, "tags: [memory-keeper]\n"),
		"extensions/command/standup.yaml": "type: command\nname: standup\nspec:\n  description: the team's standup\n" +
			"  arguments:\n    - {name: team, required: true}\n  prompt: \"Write the standup for team {{team}}.\"\n",
	})
}

// Through the daemon, `agentd send` routes each prefix: @researcher is
// answered by researcher in researcher/assistant:main, which the
// caller's session never sees; #memory-keeper by keeper; !standup is
// /standup; an email address and @ of no agent are sent as written; @
// with nothing to say is refused and starts no turn.
func TestPrefixesThroughTheDaemon(t *testing.T) {
	dir := prefixDir(t)
	serve(t, dir)
	send := func(text string) result {
		t.Helper()
		return run(t, dir, "send", "assistant", "--session", "main", text)
	}
	for _, tt := range []struct{ text, reply string }{
		{"@researcher find the 2024 figures", "got: find the 2024 figures"},
		{"#memory-keeper remember the milk", "got: remember the milk"},
		{"!standup platform", "got: Write the standup for team platform."},
	} {
		if r := send(tt.text); r.code != 0 || strings.TrimSpace(r.stdout) != tt.reply {
			t.Fatalf("%q: %+v, want %q", tt.text, r, tt.reply)
		}
	}
	mustContain(t, okRun(t, dir, "log", "researcher/assistant:main"), "find the 2024 figures")
	mustContain(t, okRun(t, dir, "log", "keeper/assistant:main"), "remember the milk")
	main := okRun(t, dir, "log", "assistant/main")
	for _, not := range []string{"2024 figures", "remember the milk"} {
		if strings.Contains(main, not) {
			t.Fatalf("the caller's session saw %q:\n%s", not, main)
		}
	}
	for _, text := range []string{"email@example.com has the figures", "@nobody said so", "#1 priority"} {
		if r := send(text); r.code != 0 || strings.TrimSpace(r.stdout) != "got: "+text {
			t.Fatalf("%q: %+v", text, r)
		}
	}
	r := run(t, dir, "send", "assistant", "--session", "empty", "@researcher")
	if r.code != 2 || !strings.Contains(r.stderr, "@researcher: nothing to say; usage: @researcher <text>") {
		t.Fatalf("@ with nothing to say: %+v", r)
	}
	if r := run(t, dir, "log", "researcher/assistant:empty"); r.code != 3 {
		t.Fatalf("a refused line made a session: %+v", r)
	}
	// Through the API, GET /v1/commands names the prefixes and the tags.
	cl := gateway.NewUnixClient(filepath.Join(dir, "agentd.sock"))
	list, err := cl.Commands(t.Context())
	if err != nil || len(list.Prefixes) != 4 || len(list.Tags) != 1 || list.Tags[0].Tag != "memory-keeper" {
		t.Fatalf("commands %+v (%v)", list, err)
	}
}

// agentd chat routes @ and # over the socket and shows the other agent's
// answer; //@ sends the line as written; /help names the prefixes and
// the tags.
func TestPrefixesInChat(t *testing.T) {
	dir := prefixDir(t)
	serve(t, dir)
	r := runInput(t, dir, nil, "@researcher find it\n//@researcher as written\n#memory-keeper keep it\n/help\n/quit\n",
		"chat", "assistant", "--session", "c")
	if r.code != 0 {
		t.Fatalf("chat: %+v", r)
	}
	for _, want := range []string{"agent> got: find it", "agent> got: @researcher as written", "agent> got: keep it",
		"@agent text", "#tag text", "!name [args]", "#memory-keeper", "keeper"} {
		mustContain(t, r.stdout, want)
	}
	mustContain(t, okRun(t, dir, "log", "researcher/assistant:c"), "find it")
	if log := okRun(t, dir, "log", "assistant/c"); strings.Contains(log, "find it") || !strings.Contains(log, "@researcher as written") {
		t.Fatalf("assistant/c:\n%s", log)
	}
}

// Addressing an agent grants nothing a post to its session does not: a
// disabled agent is refused as a direct post is, and the line does not
// reach the caller's agent; a paused agent's line waits in its inbox,
// durable, until the pause ends, as a direct post does.
func TestPrefixesPermissions(t *testing.T) {
	dir := prefixDir(t)
	serve(t, dir)
	okRun(t, dir, "ext", "disable", "agent/researcher")
	direct := run(t, dir, "send", "researcher", "--session", "assistant:main", "hi")
	routed := run(t, dir, "send", "assistant", "--session", "main", "@researcher hi")
	if routed.code == 0 || routed.code != direct.code || !strings.Contains(routed.stderr, `unknown agent "researcher"`) {
		t.Fatalf("@ of a disabled agent: %+v; a direct post: %+v", routed, direct)
	}
	if r := run(t, dir, "log", "assistant/main"); strings.Contains(r.stdout, "@researcher hi") {
		t.Fatalf("the line went to the caller's agent:\n%s", r.stdout)
	}
	okRun(t, dir, "ext", "enable", "agent/researcher")
	mustContain(t, okRun(t, dir, "send", "assistant", "--session", "main", "@researcher back?"), "got: back?")

	control := func(on bool) string {
		return fmt.Sprintf(`{"type":"control","name":"hold","spec":{"kind":"bool","value":%v,"agent":"keeper","effect":"pause_agent"}}`, on)
	}
	putDoc(t, dir, control(true))
	cl := gateway.NewUnixClient(filepath.Join(dir, "agentd.sock"))
	rc, err := cl.Submit(t.Context(), "assistant/main", gateway.MessageRequest{Text: "#memory-keeper held line"})
	if err != nil || rc.Session != "keeper/assistant:main" {
		t.Fatalf("# of a paused agent: %+v (%v)", rc, err)
	}
	held := func() bool {
		return !strings.Contains(okRun(t, dir, "log", "keeper/assistant:main"), "held line")
	}
	mustContain(t, okRun(t, dir, "send", "assistant", "--session", "main", "still here?"), "got: still here?")
	if !held() {
		t.Fatal("a paused agent ran a line addressed to it")
	}
	putDoc(t, dir, control(false))
	waitFor(t, func() bool { return !held() })
}

// In the web console (headless Chromium), "@researcher …" is answered by
// researcher under the line, and an email address goes to the assistant
// as written (test/console/prefixes.spec.mjs).
func TestConsolePrefixes(t *testing.T) {
	chromium, node := consoleDeps(t)
	addr := fake(t, "match .\nsay got: {{last_user}}\n")
	d, token := serveConsole(t, dataDir(t, nil), map[string]string{
		"agents/assistant.yaml":  "name: Assistant\n" + strings.TrimPrefix(openaiAgent(addr, ""), "name: Tester\n"),
		"agents/researcher.yaml": "name: Researcher\n" + strings.TrimPrefix(openaiAgent(addr, ""), "name: Tester\n"),
	})
	runSpec(t, d, token, chromium, node, "prefixes.spec.mjs")
}
