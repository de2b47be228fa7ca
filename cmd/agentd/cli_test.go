package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
)

// A fresh data directory with no model: serve starts, says how to configure
// a model, and the built-in assistant echoes.
func TestFreshMachine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fresh")
	d := serve(t, dir)
	mustContain(t, d.out.String(), "agent assistant")
	mustContain(t, d.out.String(), "OPENAI_API_KEY")

	r := run(t, dir, "send", "assistant", "hello", "there")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "hello there" {
		t.Fatalf("send: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, dir, "agents")
	mustContain(t, r.stdout, "assistant")
	r = run(t, dir, "sessions")
	mustContain(t, r.stdout, "assistant/cli:")
	// An agent alone names the session send used; so it is without $USER.
	r = run(t, dir, "log", "assistant")
	mustContain(t, r.stdout, "hello there")
	r = runEnv(t, dir, []string{"USER="}, "send", "assistant", "no user")
	if r.code != 0 {
		t.Fatalf("send without $USER: %+v", r)
	}
	r = runEnv(t, dir, []string{"USER="}, "log", "assistant")
	mustContain(t, r.stdout, "no user")
	if r := run(t, dir, "sessions"); strings.Contains(r.stdout, "assistant/cli: ") {
		t.Errorf("a session key without a user: %s", r.stdout)
	}
	d.stop(t)
	mustContain(t, d.out.String(), "agentd stopped")
	if fi, err := os.Stat(filepath.Join(dir, "agentd.sock")); err == nil {
		t.Fatalf("socket left behind: %v", fi.Mode())
	}
}

// The socket is private to its owner.
func TestSocketMode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	serve(t, dir)
	fi, err := os.Stat(filepath.Join(dir, "agentd.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("socket mode %o, want 600", m)
	}
	di, _ := os.Stat(dir)
	if m := di.Mode().Perm(); m&0o077 != 0 {
		t.Fatalf("data directory mode %o is open to others", m)
	}
}

// Without a daemon the CLI runs in process with the same results, and a
// second serve on the same directory is refused.
func TestInProcessAndLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	r := run(t, dir, "send", "assistant", "one", "--session", "s1")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "one" {
		t.Fatalf("in-process send: %+v", r)
	}
	r = run(t, dir, "log", "assistant/s1")
	mustContain(t, r.stdout, "input")
	mustContain(t, r.stdout, "turn_end")

	serve(t, dir)
	r = run(t, dir, "serve")
	if r.code == 0 {
		t.Fatalf("second serve started: %+v", r)
	}
	// The daemon answers the CLI; the earlier session is there.
	r = run(t, dir, "log", "assistant/s1", "--json")
	evs, _ := jsonEvents(t, r.stdout)
	if len(evs) < 4 {
		t.Fatalf("log has %d events: %s", len(evs), r.stdout)
	}
}

// A turn that calls a tool, through the real OpenAI wire format.
func TestToolTurnOpenAI(t *testing.T) {
	addr := fake(t, "match ^add\ncall calculator {\"expression\": \"2+3*4\"}\n---\nsay The answer is {{tool_result}}.\n")
	dir := dataDir(t, map[string]string{"agents/calc.yaml": openaiAgent(addr, "")})
	r := run(t, dir, "send", "calc", "add these", "--json")
	if r.code != 0 {
		t.Fatalf("send: %+v", r)
	}
	evs, end := jsonEvents(t, r.stdout)
	want := []event.Kind{event.Input, event.ModelCall, event.ToolCall, event.ToolResult, event.ModelCall, event.Text, event.TurnEnd}
	if got := kinds(evs); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if end == nil || end.Status != "done" || !strings.Contains(end.Reply, "14") || end.Steps != 2 {
		t.Fatalf("end %+v", end)
	}
	var tr event.ToolResultData
	evs[3].Decode(&tr)
	if tr.IsError || tr.Output != "14" {
		t.Fatalf("tool result %+v", tr)
	}
}

// The same through the Anthropic wire format.
func TestToolTurnAnthropic(t *testing.T) {
	addr := fake(t, "match .\ncall clock {\"timezone\": \"Asia/Tokyo\"}\n---\nsay Tokyo: {{tool_result}}\n")
	def := "model:\n  provider: anthropic\n  name: claude-fake\n  api_key_env: AGENTD_TEST_KEY\n  base_url: http://" + addr + "\n"
	dir := dataDir(t, map[string]string{"agents/tokyo.yaml": def})
	r := run(t, dir, "send", "tokyo", "what time is it in Tokyo?")
	if r.code != 0 {
		t.Fatalf("send: %+v", r)
	}
	mustContain(t, r.stdout, "Tokyo: ")
	mustContain(t, r.stdout, "Asia/Tokyo")
}

// Bad tool arguments and unknown tools come back to the model as tool
// errors, and the turn goes on.
func TestBadToolArgs(t *testing.T) {
	addr := fake(t, "call clock {\"timezone\": 5}\ncall nosuchtool {}\n---\nsay recovered: {{tool_result}}\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	r := run(t, dir, "send", "a", "go", "--json")
	evs, end := jsonEvents(t, r.stdout)
	if end == nil || end.Status != "done" {
		t.Fatalf("end %+v (%s)", end, r.stderr)
	}
	var errs int
	for _, e := range evs {
		if e.Kind == event.ToolResult {
			var d event.ToolResultData
			e.Decode(&d)
			if d.IsError {
				errs++
			}
		}
	}
	if errs != 2 {
		t.Fatalf("%d error results, want 2: %s", errs, r.stdout)
	}
}

// http_fetch is off unless the agent's policy names it.
func TestRiskyToolOffByDefault(t *testing.T) {
	addr := fake(t, "call http_fetch {\"url\": \"http://example.com/\"}\n---\nsay {{tool_result}}\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	r := run(t, dir, "send", "a", "fetch it")
	mustContain(t, r.stdout, "http_fetch")
	mustContain(t, r.stdout, "policy does not allow it")
}

// A budget stops a turn with a clear end, and the exit code says so.
func TestStepBudget(t *testing.T) {
	addr := fake(t, "call clock {}\n---\ncall clock {}\n---\ncall clock {}\n---\nsay done\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "budgets:\n  max_steps: 2\n")})
	r := run(t, dir, "send", "a", "loop")
	if r.code != 4 {
		t.Fatalf("exit %d, want 4: %+v", r.code, r)
	}
	mustContain(t, r.stderr, "max_steps")
}

// Rate limits are retried (honouring Retry-After), then the turn succeeds.
func TestRetryThenSuccess(t *testing.T) {
	addr := fake(t, "fail 429 times=2 retry_after=0\nsay finally\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	r := run(t, dir, "send", "a", "x", "--json")
	evs, end := jsonEvents(t, r.stdout)
	if end == nil || end.Reply != "finally" {
		t.Fatalf("end %+v: %s", end, r.stderr)
	}
	var failed int
	for _, e := range evs {
		var d event.ModelCallData
		if e.Kind == event.ModelCall && e.Decode(&d) == nil && d.ErrorKind == "rate_limited" {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("%d rate-limited attempts logged, want 2", failed)
	}
}

// When the primary model fails for good, the fallback answers.
func TestFallback(t *testing.T) {
	bad := fake(t, "fail 401\n")
	good := fake(t, "say from the fallback\n")
	def := "model:\n  provider: openai\n  name: primary\n  base_url: http://" + bad + "/v1\n  fallbacks:\n    - provider: anthropic\n      name: backup\n      api_key_env: AGENTD_TEST_KEY\n      base_url: http://" + good + "\n"
	dir := dataDir(t, map[string]string{"agents/a.yaml": def})
	r := run(t, dir, "send", "a", "hi")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "from the fallback" {
		t.Fatalf("%+v", r)
	}
}

// An idempotency key makes a redelivered input start no second turn.
func TestIdempotency(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	serve(t, dir)
	a := run(t, dir, "send", "assistant", "once", "--session", "k", "--idempotency-key", "msg-1", "--json")
	b := run(t, dir, "send", "assistant", "once", "--session", "k", "--idempotency-key", "msg-1", "--json")
	_, e1 := jsonEvents(t, a.stdout)
	_, e2 := jsonEvents(t, b.stdout)
	if e1 == nil || e2 == nil || e1.Reply != "once" || e2.Reply != "once" {
		t.Fatalf("ends %+v %+v", e1, e2)
	}
	r := run(t, dir, "log", "assistant/k", "--json")
	evs, _ := jsonEvents(t, r.stdout)
	n := 0
	for _, e := range evs {
		if e.Kind == event.Input {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d inputs logged, want 1", n)
	}
}

// /reset restarts the context; the log keeps everything and the session
// keeps its id.
func TestReset(t *testing.T) {
	addr := fake(t, "say {{n_messages}} messages\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	serve(t, dir)
	run(t, dir, "send", "a", "one", "--session", "s")
	r := run(t, dir, "send", "a", "two", "--session", "s")
	mustContain(t, r.stdout, "3 messages") // user, assistant, user (no system prompt)
	if r := run(t, dir, "reset", "a/s"); r.code != 0 {
		t.Fatalf("reset: %+v", r)
	}
	r = run(t, dir, "send", "a", "three", "--session", "s")
	mustContain(t, r.stdout, "1 messages") // the new user message only
	r = run(t, dir, "log", "a/s")
	mustContain(t, r.stdout, "reset")
	if strings.Count(r.stdout, " input ") != 3 {
		t.Fatalf("log:\n%s", r.stdout)
	}
}

// Errors a script can rely on.
func TestExitCodes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"bogus"}, 2, "unknown command"},
		{[]string{"send", "assistant"}, 2, "arg"},
		{[]string{"send", "--nope", "a", "b"}, 2, "unknown flag"},
		{[]string{"send", "nobody", "hi"}, 3, "unknown agent"},
		{[]string{"log", "assistant/none"}, 3, "not found"},
		{[]string{"log", "a/b/c"}, 2, "bad session address"},
		{[]string{"log", "no-such-session"}, 3, "session not found"},
	} {
		r := run(t, dir, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("agentd %v: code %d stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.msg)
		}
		if strings.Contains(r.stderr, "goroutine ") {
			t.Errorf("agentd %v printed a stack trace", tc.args)
		}
	}
}

// A malformed agent file is reported with file, line and field.
func TestBadConfig(t *testing.T) {
	dir := dataDir(t, map[string]string{"agents/a.yaml": "name: A\nbudgets:\n  max_stepz: 3\n"})
	d := serve(t, dir)
	mustContain(t, d.out.String(), "a.yaml:3")
	mustContain(t, d.out.String(), "max_stepz")
}

// An edit to an agent file applies from the next turn; an invalid edit
// keeps the last good definition.
func TestHotReload(t *testing.T) {
	addr := fake(t, "call clock {}\n---\nsay done\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	serve(t, dir)
	if r := run(t, dir, "send", "a", "x"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	file := filepath.Join(dir, "agents", "a.yaml")
	os.WriteFile(file, []byte(openaiAgent(addr, "budgets:\n  max_steps: 1\n")), 0o600)
	waitFor(t, func() bool { return run(t, dir, "send", "a", "x").code == 4 })
	os.WriteFile(file, []byte(openaiAgent(addr, "budgets: [broken\n")), 0o600)
	time.Sleep(500 * time.Millisecond) // let the watcher see it
	if r := run(t, dir, "send", "a", "x"); r.code != 4 {
		t.Fatalf("invalid edit replaced the good definition: %+v", r)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 15s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// init writes a commented example that serve accepts.
func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	r := run(t, dir, "init")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	mustContain(t, r.stdout, "agentd.yaml")
	r = run(t, dir, "send", "assistant", "works")
	if strings.TrimSpace(r.stdout) != "works" {
		t.Fatalf("%+v", r)
	}
	r = run(t, dir, "init")
	mustContain(t, r.stdout, "nothing written")
}

func TestVersion(t *testing.T) {
	r := run(t, t.TempDir(), "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "agentd ") {
		t.Fatalf("%+v", r)
	}
}

// The interactive chat streams the reply and shows tool calls as they run,
// in the order they happen.
func TestChat(t *testing.T) {
	addr := fake(t, "match time\ncall clock {\"timezone\": \"Europe/Paris\"}\n---\nchunks 4\nsay It is {{tool_result}} in Paris.\n")
	dir := dataDir(t, map[string]string{"agents/paris.yaml": openaiAgent(addr, "")})
	cmd := exec.Command(agentdBin, "--data", dir, "chat", "paris", "--session", "c")
	cmd.Env = append(os.Environ(), storeEnv(cmd.Args)...)
	cmd.Stdin = strings.NewReader("what time is it?\nhello\n/bogus\n//etc/hosts\n/reset\n/quit\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, out)
	}
	s := string(out)
	tool, result, reply := strings.Index(s, "⚙ clock"), strings.Index(s, "↳ ok"), strings.Index(s, "in Paris.")
	if tool < 0 || result < tool || reply < result {
		t.Fatalf("tool call, result and reply not shown in order:\n%s", s)
	}
	if strings.Count(s, "in Paris.") != 1 {
		t.Fatalf("reply shown more than once:\n%s", s)
	}
	mustContain(t, s, "agent> hello")
	mustContain(t, s, "(context reset)")
	// An unknown command is answered, not sent; // sends a line that
	// starts with /.
	mustContain(t, s, "unknown command /bogus: the commands are /reset, /compact, /help, /quit, /exit")
	mustContain(t, s, "agent> /etc/hosts")
	if r := run(t, dir, "log", "paris/c"); strings.Contains(r.stdout, "bogus") {
		t.Errorf("an unknown command reached the session:\n%s", r.stdout)
	}
}

// A silent system message is logged and reaches the next turn's context
// without starting a turn; a closed session keeps its log and refuses input.
func TestSilentAndClose(t *testing.T) {
	addr := fake(t, "say {{n_messages}} messages, last: {{last_user}}\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	serve(t, dir)
	r := run(t, dir, "send", "a", "--session", "s", "--silent", "--origin", "ops", "deploy finished")
	mustContain(t, r.stdout, "logged for the next turn")
	// The message is durable in the inbox when send returns; the session's
	// worker logs it a moment later.
	var got []event.Kind
	waitFor(t, func() bool {
		evs, _ := jsonEvents(t, run(t, dir, "log", "a/s", "--json").stdout)
		got = kinds(evs)
		return len(got) > 0
	})
	if !slices.Equal(got, []event.Kind{event.SystemMessage}) {
		t.Fatalf("after a silent message the log holds %v", got)
	}
	r = run(t, dir, "send", "a", "--session", "s", "hi")
	mustContain(t, r.stdout, "2 messages, last: hi") // the system message, then the input

	if r := run(t, dir, "close", "a/s"); r.code != 0 {
		t.Fatalf("close: %+v", r)
	}
	r = run(t, dir, "send", "a", "--session", "s", "again")
	if r.code == 0 || !strings.Contains(r.stderr, "session closed") {
		t.Fatalf("send to a closed session: %+v", r)
	}
	r = run(t, dir, "log", "a/s")
	mustContain(t, r.stdout, "closed")
	mustContain(t, r.stdout, "hi")
}

// agentd fakellm serves the scripted model for demos.
func TestFakellmCommand(t *testing.T) {
	script := filepath.Join(t.TempDir(), "demo.fake")
	os.WriteFile(script, []byte("say scripted hello\n"), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(agentdBin, "fakellm", "--listen", addr, "--script", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	waitFor(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	r := run(t, dir, "send", "a", "hi")
	if strings.TrimSpace(r.stdout) != "scripted hello" {
		t.Fatalf("%+v", r)
	}
	// A script with a mistake names its line.
	bad := filepath.Join(t.TempDir(), "bad.fake")
	os.WriteFile(bad, []byte("say ok\nsya oops\n"), 0o600)
	r = run(t, dir, "fakellm", "--listen", "127.0.0.1:0", "--script", bad)
	if r.code == 0 || !strings.Contains(r.stderr, "bad.fake:2") {
		t.Fatalf("bad script: %+v", r)
	}
}

// The demo script the README names works as the README says: greet, ask the
// time (a clock tool call), note something (working memory).
func TestDemoScript(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(agentdBin, "fakellm", "--listen", addr, "--script", filepath.Join("..", "..", "examples", "demo.fake"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	waitFor(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	dir := dataDir(t, map[string]string{"agents/assistant.yaml": openaiAgent(addr, "")})
	for _, tt := range []struct{ say, want string }{
		{"hello", "I am a scripted model"},
		{"what time is it?", `The clock tool answered: {"time":`},
		{"note buy tea", `set "note"`},
		{"anything else", "You said: anything else"},
	} {
		r := run(t, dir, "send", "assistant", tt.say)
		if r.code != 0 || !strings.Contains(r.stdout, tt.want) {
			t.Errorf("%q: want %q in %+v", tt.say, tt.want, r)
		}
	}
}
