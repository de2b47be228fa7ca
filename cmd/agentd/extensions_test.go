package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"agentd/internal/app"
	"agentd/internal/gateway"
	"agentd/internal/store/postgres/pgtest"
)

// An agent creates an HTTP action in the middle of a conversation with its
// extensions tool, and calls it in the next turn; a person disables it and
// the next request no longer offers it. Through `agentd serve`, then the
// same in process.
func TestAgentMakesAnActionMidConversation(t *testing.T) {
	for _, viaDaemon := range []bool{true, false} {
		t.Run(fmt.Sprintf("daemon=%v", viaDaemon), func(t *testing.T) {
			var mu sync.Mutex
			var cities []string
			weather := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				cities = append(cities, r.URL.Query().Get("city"))
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"temp": 21, "unit": "C"}`)
			}))
			defer weather.Close()
			host := strings.TrimPrefix(weather.URL, "http://")
			// The URL template's {{city}} is written with JSON escapes,
			// which fakellm passes through as they are.
			spec := fmt.Sprintf(`{"description":"The temperature in a city now","url":"http://%s/w?city=\u007b\u007bcity}}",`+
				`"allow_hosts":["%s"],"input":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},`+
				`"extract":{"path":"temp"},"read_only":true}`, host, host)
			script := "match ^make\ncall extensions {\"op\":\"put\",\"type\":\"action\",\"name\":\"weather\",\"spec\":" + spec +
				"}\n---\nsay made: {{tool_result}}\n\nmatch ^steal\ncall extensions {\"op\":\"disable\",\"type\":\"action\",\"name\":\"theirs\"}\n---\nsay tried: {{tool_result}}\n\nmatch ^spawn\ncall extensions {\"op\":\"put\",\"type\":\"integration\",\"name\":\"sh\",\"spec\":{\"kind\":\"mcp\",\"mcp\":{\"command\":\"/bin/sh\",\"args\":[\"-c\",\"touch /tmp/agentd-pwned\"]}}}\n---\nsay spawned: {{tool_result}}\n\nmatch ^weather\ncall weather {\"city\": \"Paris\"}\n---\nsay it is {{tool_result}}\n\nmatch *\nsay ok\n"
			rec := fakeRec(t, script)
			dir := dataDir(t, map[string]string{
				"agentd.yaml":           "actions:\n  allow_networks: [127.0.0.1/32]\n",
				"agents/assistant.yaml": openaiAgent(rec.addr, "tools:\n  allow: [extensions, weather, clock]\n"),
			})
			if viaDaemon {
				serve(t, dir)
			}
			out := okRun(t, dir, "send", "assistant", "make a weather tool")
			mustContain(t, out, "made:")
			mustContain(t, out, `"provenance":"agent:assistant"`)
			out = okRun(t, dir, "send", "assistant", "weather in Paris?")
			mustContain(t, out, "it is 21")
			mu.Lock()
			got := slices.Clone(cities)
			mu.Unlock()
			if !slices.Equal(got, []string{"Paris"}) {
				t.Fatalf("the weather service saw %q", got)
			}
			if tools := rec.lastTools(t); !slices.Contains(tools, "weather") {
				t.Fatalf("the action is not offered: %q", tools)
			}
			// A row that starts a process here is not the agent's to write
			// (its file says no extensions.machine).
			mustContain(t, okRun(t, dir, "send", "assistant", "spawn a server"), "extensions.machine")
			if r := run(t, dir, "ext", "show", "integration/sh"); r.code == 0 {
				t.Fatalf("an agent wrote an integration that starts a shell: %s", r.stdout)
			}
			// A row a person made is not the agent's to change.
			putDoc(t, dir, `{"type":"action","name":"theirs","spec":{"description":"d","url":"http://`+host+`/t","allow_hosts":["`+host+`"]}}`)
			out = okRun(t, dir, "send", "assistant", "steal the other action")
			mustContain(t, out, "not allowed to change this extension")
			if r := okRun(t, dir, "ext", "show", "action/theirs", "--json"); !strings.Contains(strings.ReplaceAll(r, " ", ""), `"enabled":true`) {
				t.Fatalf("the agent disabled a person's row: %s", r)
			}
			okRun(t, dir, "ext", "disable", "action/weather")
			okRun(t, dir, "send", "assistant", "anything else")
			if tools := rec.lastTools(t); slices.Contains(tools, "weather") {
				t.Fatalf("a disabled action is still offered: %q", tools)
			}
		})
	}
}

// putDoc writes extension documents with `agentd ext put -`.
func putDoc(t *testing.T, dir, docs string) string {
	t.Helper()
	r := runInput(t, dir, nil, docs, "ext", "put", "-")
	if r.code != 0 {
		t.Fatalf("agentd ext put: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// An agent defined by a row answers at once; it overrides a file of the
// same id while the row is enabled, and the file defines it again once
// the row is removed. A capability it includes adds its prompt fragment
// and grants its tools; naming one that does not exist is refused.
func TestAgentAndCapabilityRows(t *testing.T) {
	rec := fakeRec(t, "match *\nsay ok\n")
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(rec.addr, "tools:\n  builtin: [clock, calculator]\n  deny: [calculator]\n"),
	})
	serve(t, dir)
	model := fmt.Sprintf(`{"provider":"openai","name":"fake","base_url":"http://%s/v1"}`, rec.addr)
	// An unknown capability is named with its pointer; nothing is written.
	r := runInput(t, dir, nil, `{"type":"agent","name":"scout","spec":{"model":`+model+`,"capabilities":["nope"]}}`, "ext", "put", "-")
	if r.code == 0 || !strings.Contains(r.stderr, "/spec/capabilities/0") {
		t.Fatalf("an unknown capability: %+v", r)
	}
	putDoc(t, dir, `{"type":"capability","name":"timekeeping","spec":{"tools":{"allow":["clock"]},"prompt":"Always give times in UTC."}}`)
	putDoc(t, dir, `{"type":"agent","name":"scout","spec":{"name":"Scout","model":`+model+`,"system_prompt":"You scout.",`+
		`"tools":{"builtin":["clock","calculator"],"allow":["calculator"]},"capabilities":["timekeeping"]}}`)
	mustContain(t, okRun(t, dir, "send", "scout", "hello"), "ok")
	req := rec.lastTurnRequest(t)
	if sys := req.Messages[0].Content; !strings.Contains(sys, "You scout.") || !strings.Contains(sys, "Always give times in UTC.") {
		t.Fatalf("scout's system prompt: %q", sys)
	}
	if tools := rec.lastTools(t); !slices.Equal(tools, []string{"calculator", "clock"}) {
		t.Fatalf("scout is offered %q: the capability grants clock beside its own allow list", tools)
	}
	// A row over the file of the same id.
	putDoc(t, dir, `{"type":"agent","name":"assistant","spec":{"model":`+model+`,"system_prompt":"Row prompt."}}`)
	okRun(t, dir, "send", "assistant", "hi")
	if sys := rec.lastTurnRequest(t).Messages[0].Content; !strings.Contains(sys, "Row prompt.") {
		t.Fatalf("the row does not define the assistant: %q", sys)
	}
	okRun(t, dir, "ext", "rm", "agent/assistant")
	okRun(t, dir, "send", "assistant", "hi again")
	if sys := rec.lastTurnRequest(t).Messages[0].Content; strings.Contains(sys, "Row prompt.") {
		t.Fatalf("the file does not define the assistant again: %q", sys)
	}
	// The file is a row of provenance file.
	out := okRun(t, dir, "ext", "list", "--type", "agent", "--json")
	for _, want := range []string{`"name":"assistant"`, `"provenance":"file"`, `"name":"scout"`, `"provenance":"user"`} {
		mustContain(t, strings.ReplaceAll(out, " ", ""), want)
	}
	// Disabling an agent file's row takes the agent away until it is
	// enabled again.
	okRun(t, dir, "ext", "disable", "agent/assistant")
	if r := run(t, dir, "send", "assistant", "are you there?"); r.code == 0 || !strings.Contains(r.stderr, "assistant") {
		t.Fatalf("a disabled agent answered: %+v", r)
	}
	okRun(t, dir, "ext", "enable", "agent/assistant")
	mustContain(t, okRun(t, dir, "send", "assistant", "back?"), "ok")
}

// A pause_agent control keeps an agent's inputs, durable, across a
// restart, and runs them once it is switched off; a disable_tools control
// takes a tool from every agent while it is on.
func TestControls(t *testing.T) {
	rec := fakeRec(t, "match *\nsay ok {{last_user}}\n")
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(rec.addr, "tools:\n  builtin: [clock, calculator]\n"),
		"agents/other.yaml":     openaiAgent(rec.addr, ""),
	})
	d := serve(t, dir)
	control := func(on bool) string {
		return fmt.Sprintf(`{"type":"control","name":"hold","spec":{"kind":"bool","value":%v,"agent":"assistant","effect":"pause_agent"}}`, on)
	}
	putDoc(t, dir, control(true))
	cl := gateway.NewUnixClient(filepath.Join(dir, "agentd.sock"))
	if _, err := cl.Submit(t.Context(), "assistant/main", gateway.MessageRequest{Text: "held message"}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, okRun(t, dir, "send", "other", "are you there"), "ok are you there")
	held := func() bool {
		return !strings.Contains(okRun(t, dir, "log", "assistant/main"), "held message")
	}
	if !held() {
		t.Fatal("a paused agent ran its input")
	}
	// The pause and the input outlive a restart.
	d.stop(t)
	serve(t, dir)
	mustContain(t, okRun(t, dir, "send", "other", "still there"), "ok still there")
	if !held() {
		t.Fatal("a paused agent ran its input after a restart")
	}
	putDoc(t, dir, control(false))
	waitFor(t, func() bool { return !held() })
	// Each change is logged once, by the node that made it; a restart
	// logs none.
	if n := strings.Count(okRun(t, dir, "log", "assistant/controls", "--json"), `"kind":"control"`); n != 2 {
		t.Fatalf("%d control events for two changes", n)
	}

	okRun(t, dir, "send", "assistant", "tools?")
	if tools := rec.lastTools(t); !slices.Contains(tools, "calculator") {
		t.Fatalf("calculator not offered before the kill switch: %q", tools)
	}
	putDoc(t, dir, `{"type":"control","name":"no-calc","spec":{"kind":"bool","value":true,"effect":"disable_tools","tools":["calc*"]}}`)
	okRun(t, dir, "send", "assistant", "tools now?")
	if tools := rec.lastTools(t); slices.Contains(tools, "calculator") {
		t.Fatalf("calculator offered while switched off: %q", tools)
	}
	okRun(t, dir, "ext", "disable", "control/no-calc")
	okRun(t, dir, "send", "assistant", "and now?")
	if tools := rec.lastTools(t); !slices.Contains(tools, "calculator") {
		t.Fatalf("calculator not back once the kill switch is off: %q", tools)
	}
}

// The MCP servers an earlier version kept in mcp-servers.json become
// integration rows at the first start (the file renamed), and a server
// added with agentd mcp add is a row too, removed with agentd mcp remove.
func TestMCPServersBecomeIntegrationRows(t *testing.T) {
	state := fmt.Sprintf(`{"version":1,"servers":[{"name":"demo","config":{"command":%q,"args":["mcp","demo"]},"agents":null,"source":"runtime"}]}`, agentdBin)
	dir := dataDir(t, map[string]string{"mcp-servers.json": state})
	serve(t, dir)
	waitDemo(t, dir)
	out := okRun(t, dir, "ext", "show", "integration/demo", "--json")
	mustContain(t, out, `"kind"`)
	if _, err := os.Stat(filepath.Join(dir, "mcp-servers.json.migrated")); err != nil {
		t.Fatalf("mcp-servers.json not renamed: %v", err)
	}
	okRun(t, dir, "mcp", "add", "demo2", "--", agentdBin, "mcp", "demo")
	okRun(t, dir, "ext", "show", "integration/demo2")
	okRun(t, dir, "mcp", "remove", "demo2")
	if r := run(t, dir, "ext", "show", "integration/demo2"); r.code == 0 {
		t.Fatalf("agentd mcp remove left the row: %+v", r)
	}
	mustContain(t, okRun(t, dir, "ext", "history", "integration/demo2"), "delete")
}

// A row written through one of two agentd serve nodes on one PostgreSQL
// database takes effect on the other without a restart: an action made
// on node A is a tool of a turn on node B, and B's disable takes it from
// A's next request.
func TestExtensionsAcrossNodes(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	weather := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"temp": 17, "city": %q}`, r.URL.Query().Get("city"))
	}))
	defer weather.Close()
	host := strings.TrimPrefix(weather.URL, "http://")
	rec := fakeRec(t, "match ^weather\ncall weather {\"city\": \"Oslo\"}\n---\nsay it is {{tool_result}}\n\nmatch *\nsay ok\n")
	files := map[string]string{
		"agentd.yaml":   "actions:\n  allow_networks: [127.0.0.1/32]\n",
		"agents/a.yaml": openaiAgent(rec.addr, "tools:\n  allow: [weather, clock]\n"),
	}
	env := []string{app.StoreEnv + "=" + db}
	a, b := dataDir(t, files), dataDir(t, files)
	// An agent file node A alone has is a row that defines the agent on B.
	write(t, filepath.Join(a, "agents", "onlya.yaml"), openaiAgent(rec.addr, ""))
	serve(t, a, env...)
	serve(t, b, env...)
	if r := runEnv(t, b, env, "send", "onlya", "hello from B"); r.code != 0 || !strings.Contains(r.stdout, "ok") {
		t.Fatalf("node A's agent file through node B: %+v", r)
	}
	spec := fmt.Sprintf(`{"description":"The temperature now","url":"http://%s/w?city=\u007b\u007bcity}}","allow_hosts":["%s"],`+
		`"input":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"extract":{"path":"temp"}}`, host, host)
	r := runInput(t, a, env, `{"type":"action","name":"weather","spec":`+spec+`}`, "ext", "put", "-")
	if r.code != 0 {
		t.Fatalf("ext put on node A: %+v", r)
	}
	active := func(dir string) bool {
		out := runEnv(t, dir, env, "ext", "show", "action/weather", "--json").stdout
		return strings.Contains(strings.ReplaceAll(out, " ", ""), `"active_version":1`)
	}
	waitFor(t, func() bool { return active(b) })
	if r := runEnv(t, b, env, "send", "a", "weather in Oslo?"); r.code != 0 || !strings.Contains(r.stdout, "it is 17") {
		t.Fatalf("the action on node B: %+v", r)
	}
	if r := runEnv(t, b, env, "ext", "disable", "action/weather"); r.code != 0 {
		t.Fatalf("ext disable on node B: %+v", r)
	}
	waitFor(t, func() bool {
		out := runEnv(t, a, env, "ext", "show", "action/weather", "--json").stdout
		return strings.Contains(strings.ReplaceAll(out, " ", ""), `"active_version":0`)
	})
	if r := runEnv(t, a, env, "send", "a", "--session", "other", "anything"); r.code != 0 {
		t.Fatalf("send on node A: %+v", r)
	}
	if tools := rec.lastTools(t); slices.Contains(tools, "weather") {
		t.Fatalf("node A offers an action node B disabled: %q", tools)
	}
}

// The agent file agentd init writes is a valid agent row: a reseed
// reports no problem and the row is there.
func TestInitAgentIsARow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	okRun(t, dir, "init")
	out := okRun(t, dir, "ext", "reseed")
	if strings.Contains(out, "error") || strings.Contains(out, "invalid") {
		t.Fatalf("reseed of a fresh data directory: %s", out)
	}
	var st struct {
		Provenance string `json:"provenance"`
	}
	r := run(t, dir, "ext", "show", "agent/assistant", "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil || st.Provenance != "file" {
		t.Fatalf("agent/assistant after init: %+v", r)
	}
}

// An agent file edited while agentd runs changes its row (so the console
// and the other nodes see it); removing the file removes the row.
func TestAgentFileEditReachesItsRow(t *testing.T) {
	rec := fakeRec(t, "match *\nsay ok\n")
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(rec.addr, ""),
		"agents/helper.yaml":    openaiAgent(rec.addr, "system_prompt: First.\n"),
	})
	serve(t, dir)
	show := func() string {
		return strings.ReplaceAll(run(t, dir, "ext", "show", "agent/helper", "--json").stdout, " ", "")
	}
	mustContain(t, show(), `"system_prompt":"First."`)
	write(t, filepath.Join(dir, "agents", "helper.yaml"), openaiAgent(rec.addr, "system_prompt: Second.\n"))
	waitFor(t, func() bool { return strings.Contains(show(), `"system_prompt":"Second."`) })
	if err := os.Remove(filepath.Join(dir, "agents", "helper.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return run(t, dir, "ext", "show", "agent/helper").code != 0 })
}
