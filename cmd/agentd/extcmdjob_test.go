package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"agentd/internal/gateway"
	"agentd/internal/job"
	"agentd/internal/store"
)

// cmdJobDir is a data directory with the agent assistant on an echoing
// model, the command /standup and the jobs brief (which echoes its
// payload and the previous run's output), loop (which a budget stops)
// and lost (whose agent does not exist), as seed files.
func cmdJobDir(t *testing.T) string {
	t.Helper()
	addr := fake(t, "match ^loop\ncall nothing {}\n---\ncall nothing {}\n---\ncall nothing {}\n\nmatch .\nsay got: {{last_user}}\n")
	return dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(addr, ""),
		"extensions/command/standup.yaml": "type: command\nname: standup\nspec:\n  description: the team's standup\n" +
			"  arguments:\n    - {name: team, required: true}\n  prompt: \"Write the standup for team {{team}}.\"\n",
		"extensions/job/brief.yaml": "type: job\nname: brief\nspec:\n  agent: assistant\n" +
			"  prompt: \"brief on {{payload.topic}} after [{{previous_output}}]\"\n  triggers: [{cron: \"0 8 * * 1-5\", tz: Europe/Berlin}]\n",
		"extensions/job/loop.yaml": "type: job\nname: loop\nspec:\n  agent: assistant\n  prompt: loop\n  budget: {max_steps: 2}\n",
		"extensions/job/lost.yaml": "type: job\nname: lost\nspec:\n  agent: nobody\n  prompt: x\n",
	})
}

// The chat's lines: the command, the command without its argument, /help.
const cmdChat = "/standup platform\n/standup\n/help\n/quit\n"

func checkCmdChat(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("chat: %+v", r)
	}
	mustContain(t, r.stdout, "agent> got: Write the standup for team platform.")
	mustContain(t, r.stdout, "missing argument team; usage: /standup <team>")
	mustContain(t, r.stdout, "/standup <team>    the team's standup")
	mustContain(t, r.stdout, "/compact [focus]")
}

// A slash command typed in `agentd chat` runs, in process and through the
// daemon; one without its argument is refused with its usage and starts
// no turn; /help lists it beside the chat's own.
func TestSlashCommandInChat(t *testing.T) {
	dir := cmdJobDir(t)
	checkCmdChat(t, runInput(t, dir, nil, cmdChat, "chat", "assistant", "--session", "c"))
	serve(t, dir)
	checkCmdChat(t, runInput(t, dir, nil, cmdChat, "chat", "assistant", "--session", "d"))
	for _, s := range []string{"assistant/c", "assistant/d"} {
		r := run(t, dir, "log", s)
		if n := strings.Count(r.stdout, "turn_end"); n != 1 || !strings.Contains(r.stdout, "input          Write the standup for team platform.") {
			t.Errorf("%s holds %d turns, want the command's alone (the refused one starts none):\n%s", s, n, r.stdout)
		}
	}
}

// Through the API (`agentd send` to the daemon): the command runs; a
// missing argument is a 400 with the usage; a literal message is not run.
func TestSlashCommandThroughTheAPI(t *testing.T) {
	dir := cmdJobDir(t)
	serve(t, dir)
	if r := run(t, dir, "send", "assistant", "/standup", "platform"); r.code != 0 || strings.TrimSpace(r.stdout) != "got: Write the standup for team platform." {
		t.Fatalf("%+v", r)
	}
	r := run(t, dir, "send", "assistant", "--session", "x", "/standup")
	if r.code != 2 || !strings.Contains(r.stderr, "missing argument team; usage: /standup <team>") {
		t.Fatalf("missing argument: %+v", r)
	}
	if r := run(t, dir, "log", "assistant/x"); r.code != 3 {
		t.Fatalf("the refused command made its session: %+v", r)
	}
}

// agentd ext run job/NAME prints the run's answer, in process and through
// the daemon; the prompt has the --var values and the previous run's
// output, read from the run history (so the daemon has the in-process
// run's); a run a budget stops exits 4; an inactive job exits 3.
func TestJobRun(t *testing.T) {
	dir := cmdJobDir(t)
	r := run(t, dir, "ext", "run", "job/brief", "--var", "topic=rust")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "got: brief on rust after []" {
		t.Fatalf("in process: %+v", r)
	}
	serve(t, dir)
	r = run(t, dir, "ext", "run", "job/brief", "--var", "topic=go", "--json")
	var res job.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || res.Status != store.RunDone ||
		res.Output != "got: brief on go after [got: brief on rust after []]" || !strings.HasPrefix(res.Session, "assistant/job:brief:") {
		t.Fatalf("through the daemon: %+v (%v)", r, err)
	}
	r = run(t, dir, "ext", "run", "job/brief", "--var", "topic=c")
	if want := "got: brief on c after [got: brief on go after [got: brief on rust after []]]"; r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("second run through the daemon: %+v, want %q", r, want)
	}
	if r := run(t, dir, "log", res.Session); r.code != 0 || !strings.Contains(r.stdout, "brief on go") {
		t.Fatalf("the run's session: %+v", r)
	}
	r = run(t, dir, "ext", "run", "job/loop")
	if r.code != 4 || !strings.Contains(r.stderr, "failed: budget: stopped: the turn used its 2 model steps") {
		t.Fatalf("budget: %+v", r)
	}
	r = run(t, dir, "ext", "run", "job/lost")
	if r.code != 3 || !strings.Contains(r.stderr, `no such job "lost"`) {
		t.Fatalf("a job of an unknown agent: %+v", r)
	}
	if r := run(t, dir, "ext", "run", "command/standup"); r.code != 2 {
		t.Fatalf("not a job: %+v", r)
	}
}

// A job or a command whose agent does not exist is refused when it is
// put, with a 400 naming /spec/agent, and nothing is written; a valid job
// put through the API runs at once.
func TestJobAndCommandOfAnUnknownAgent(t *testing.T) {
	dir := cmdJobDir(t)
	serve(t, dir)
	hc := unixHTTP(dir)
	put := func(path, body string) (int, gateway.InvalidError) {
		t.Helper()
		req, _ := http.NewRequest("PUT", "http://agentd"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e gateway.InvalidError
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e
	}
	for _, typ := range []string{"job", "command"} {
		status, e := put("/v1/extensions/"+typ+"/orphan", `{"spec":{"agent":"nobody","prompt":"p"}}`)
		if status != 400 || !slices.Contains(e.Errors, `/spec/agent: no agent "nobody"`) {
			t.Errorf("%s: %d %+v", typ, status, e)
		}
		if r := run(t, dir, "ext", "show", typ+"/orphan"); r.code != 3 {
			t.Errorf("%s: the refused row was written: %+v", typ, r)
		}
	}
	if status, e := put("/v1/extensions/job/news", `{"spec":{"agent":"assistant","prompt":"news on {{payload.topic}}"}}`); status != 200 {
		t.Fatalf("put: %d %+v", status, e)
	}
	if r := run(t, dir, "ext", "run", "job/news", "--var", "topic=go"); r.code != 0 || strings.TrimSpace(r.stdout) != "got: news on go" {
		t.Fatalf("run: %+v", r)
	}
}
