package main

// End-to-end tests of the tool layer's commands: keys, skills, MCP
// servers, the message lifecycle and approvals, against the demo MCP
// server (agentd mcp demo) run by the built binary.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentd/approval"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/mcpdemo"
	"agentd/internal/permit"
)

// demoAgent is an agent file for the model at addr with the demo MCP
// server, plus extra YAML.
func demoAgent(addr, dir, extra string) string {
	return openaiAgent(addr, fmt.Sprintf("mcp_servers:\n  demo:\n    command: %q\n    args: [mcp, demo, --data, %q]\n", agentdBin, dir)+extra)
}

// okRun runs agentd and fails the test unless it exits 0.
func okRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	r := run(t, dir, args...)
	if r.code != 0 {
		t.Fatalf("agentd %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// failRun runs agentd and fails the test unless it exits with code and
// says msg on stderr.
func failRun(t *testing.T, dir string, code int, msg string, args ...string) {
	t.Helper()
	r := run(t, dir, args...)
	if r.code != code || !strings.Contains(r.stderr, msg) {
		t.Fatalf("agentd %v: exit %d, stderr %q; want exit %d and %q", args, r.code, r.stderr, code, msg)
	}
	if strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("agentd %v printed a stack trace", args)
	}
}

// decodeOut decodes a command's JSON output into v.
func decodeOut(t *testing.T, out string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T from %q: %v", v, out, err)
	}
}

// waitDemo waits until `agentd mcp list --json` shows the demo server
// connected, and returns its entry.
func waitDemo(t *testing.T, dir string) gateway.ServerInfo {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list []gateway.ServerInfo
		decodeOut(t, okRun(t, dir, "mcp", "list", "--json"), &list)
		for _, s := range list {
			if s.Name == "demo" && s.State == "connected" {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the demo server never connected: %+v", list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tableRow returns the fields of the first line of a table whose first
// field is name.
func tableRow(t *testing.T, table, name string) []string {
	t.Helper()
	for line := range strings.Lines(table) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f
		}
	}
	t.Fatalf("no row %s in:\n%s", name, table)
	return nil
}

// keypairFile writes a Solana keypair file for seed and returns its path
// and the base58 public key.
func keypairFile(t *testing.T, seed byte) (string, string) {
	t.Helper()
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	nums := make([]int, len(key))
	for i, b := range key {
		nums[i] = int(b)
	}
	data, err := json.Marshal(nums)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "id.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, approval.EncodePublicKey(key.Public().(ed25519.PublicKey))
}

func TestKeysCommands(t *testing.T) {
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent("127.0.0.1:9", "")})

	// No key yet: show says how to make one.
	failRun(t, dir, 3, "agentd keys generate a", "keys", "show")

	out := okRun(t, dir, "keys", "generate")
	f := strings.Fields(out)
	if len(f) != 4 || f[0] != "a:" {
		t.Fatalf("generate printed %q", out)
	}
	generated := f[3]
	if _, err := approval.ParsePublicKey(generated); err != nil {
		t.Fatalf("generated key %q: %v", generated, err)
	}
	if got := strings.TrimSpace(okRun(t, dir, "keys", "show", "a")); got != generated {
		t.Fatalf("show printed %q, want %q", got, generated)
	}
	failRun(t, dir, 1, "--force", "keys", "generate", "a")

	// Import a Solana keypair file: refused over a key, unless --force.
	file, want := keypairFile(t, 42)
	failRun(t, dir, 1, "--force", "keys", "import", file)
	out = okRun(t, dir, "keys", "import", file, "a", "--force")
	if strings.TrimSpace(out) != "a: imported key "+want {
		t.Fatalf("import printed %q, want the key %s", out, want)
	}
	if got := strings.TrimSpace(okRun(t, dir, "keys", "show")); got != want {
		t.Fatalf("show after import printed %q, want %q", got, want)
	}
	fi, err := os.Stat(filepath.Join(dir, "keys", "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("key file mode %o, want 600", m)
	}

	// Files that are not keypairs are refused and change nothing.
	notJSON := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(notJSON, []byte("[1, 2,"), 0o600)
	failRun(t, dir, 1, "not a Solana keypair file", "keys", "import", notJSON, "--force")
	short := filepath.Join(t.TempDir(), "short.json")
	os.WriteFile(short, []byte("[1, 2, 3]"), 0o600)
	failRun(t, dir, 2, "3 numbers", "keys", "import", short, "--force")
	failRun(t, dir, 1, "no such file", "keys", "import", filepath.Join(t.TempDir(), "missing.json"))
	if got := strings.TrimSpace(okRun(t, dir, "keys", "show")); got != want {
		t.Fatalf("the key changed to %q", got)
	}

	// With two agents, the agent must be named, and must exist.
	os.WriteFile(filepath.Join(dir, "agents", "b.yaml"), []byte(openaiAgent("127.0.0.1:9", "")), 0o600)
	failRun(t, dir, 2, "name the agent", "keys", "show")
	failRun(t, dir, 3, "unknown agent", "keys", "show", "ghost")
	failRun(t, dir, 2, "arg", "keys", "show", "a", "b")
}

func TestSkillsCommands(t *testing.T) {
	dir := dataDir(t, map[string]string{
		"agents/a.yaml":          openaiAgent("127.0.0.1:9", ""),
		"skills/notes/SKILL.md":  "---\nname: notes\ndescription: Keep notes when the user asks to remember something.\n---\n# Notes\n\nAppend a line to notes.md.\n",
		"skills/video/SKILL.md":  "---\nname: video\ndescription: Cut videos.\nrequires:\n  bins: [agentd-e2e-no-such-program]\n---\nRun the cutter.\n",
		"skills/broken/SKILL.md": "---\nname: other-name\ndescription: A folder whose name is not the skill's.\n---\nx\n",
	})
	out := okRun(t, dir, "skills", "list")
	if row := tableRow(t, out, "notes"); row[1] != "available" || !strings.Contains(strings.Join(row, " "), "Keep notes") {
		t.Errorf("notes row %v", row)
	}
	if row := strings.Join(tableRow(t, out, "video"), " "); !strings.Contains(row, "missing: binary agentd-e2e-no-such-program not found") {
		t.Errorf("video row %q", row)
	}
	if row := tableRow(t, out, "broken"); row[1] != "invalid:" {
		t.Errorf("broken row %v", row)
	}

	var list []gateway.SkillInfo
	decodeOut(t, okRun(t, dir, "skills", "list", "--json"), &list)
	avail := map[string]bool{}
	for _, s := range list {
		avail[s.Name] = s.Available
	}
	if !cmpMaps(avail, map[string]bool{"notes": true, "video": false, "broken": false}) {
		t.Errorf("skills --json: %+v", list)
	}

	if out := okRun(t, dir, "skills", "show", "notes"); !strings.HasPrefix(out, "# Notes\n\nAppend a line to notes.md.\n") {
		t.Errorf("show notes printed %q", out)
	}
	r := run(t, dir, "skills", "show", "video")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Run the cutter.") || !strings.Contains(r.stderr, "not available") {
		t.Errorf("show video: %+v", r)
	}
	failRun(t, dir, 1, "invalid", "skills", "show", "broken")
	failRun(t, dir, 3, "no skill", "skills", "show", "nope")
}

func cmpMaps(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// lifecycle runs send --lifecycle and returns the object it printed.
func lifecycle(t *testing.T, dir string, wantCode int, args ...string) engine.Object {
	t.Helper()
	r := run(t, dir, append([]string{"send", "--lifecycle"}, args...)...)
	if r.code != wantCode {
		t.Fatalf("send --lifecycle %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.code, wantCode, r.stdout, r.stderr)
	}
	var obj engine.Object
	decodeOut(t, r.stdout, &obj)
	return obj
}

func TestMCPAndLifecycleCommands(t *testing.T) {
	addr := fake(t, "match ^broken\nfail 400\n\nmatch *\nsay an order of {{last_user}}\n")
	dir := dataDir(t, nil)
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte(demoAgent(addr, dir, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	d := serve(t, dir)
	st := waitDemo(t, dir)
	if st.Transport != "stdio" || st.Source != "agent:a" || st.Tools < 8 || st.PID == 0 {
		t.Fatalf("demo server %+v", st)
	}
	if row := tableRow(t, okRun(t, dir, "mcp", "list"), "demo"); !slices.Equal(row[:6], []string{"demo", "stdio", "connected", fmt.Sprint(st.Tools), "0", "agent:a"}) {
		t.Errorf("mcp list row %v", row)
	}

	// Its tools, with their lifecycle kinds.
	tools := okRun(t, dir, "mcp", "tools", "demo")
	for name, kind := range map[string]string{"demo__notes": "context", "demo__quote": "action", "demo__remember": "postprocess",
		"demo__submit": "server", "demo__counter": "model"} {
		if row := tableRow(t, tools, name); row[1] != kind {
			t.Errorf("mcp tools: %s is %s, want %s", name, row[1], kind)
		}
	}
	if row := tableRow(t, tools, "demo__add"); row[2] != "read-only,idempotent" {
		t.Errorf("mcp tools: demo__add hints %v", row)
	}
	var infos []gateway.ToolInfo
	decodeOut(t, okRun(t, dir, "mcp", "tools", "demo", "--json"), &infos)
	if len(infos) != st.Tools {
		t.Errorf("mcp tools --json: %d tools, want %d", len(infos), st.Tools)
	}
	failRun(t, dir, 3, "no MCP server", "mcp", "tools", "nope")

	// The message lifecycle: context from notes, the reply, quote's hook
	// signed by the agent's key (made for this first signature) and
	// accepted by submit, then remember.
	obj := lifecycle(t, dir, 0, "a", "two apples", "--channel", "shop", "--tool-args", `{"demo-quote": {"currency": "EUR"}}`)
	if obj.Status != "done" || obj.Output != "an order of two apples" || obj.Message != "two apples" || obj.ChannelID != "shop" {
		t.Fatalf("lifecycle object %+v", obj)
	}
	if pubkey := strings.TrimSpace(okRun(t, dir, "keys", "show", "a")); obj.DaemonPubkey != pubkey || pubkey == "" {
		t.Errorf("daemonPubkey %q, keys show %q", obj.DaemonPubkey, pubkey)
	}
	if !slices.Equal(obj.Context, []string{mcpdemo.ConnectedLine}) {
		t.Errorf("context %q", obj.Context)
	}
	if len(obj.ActionsLog) != 1 || obj.ActionsLog[0].Tool != "demo__quote" || obj.ActionsLog[0].IsError {
		t.Fatalf("actionsLog %+v", obj.ActionsLog)
	}
	var quoteArgs map[string]any
	if err := json.Unmarshal(obj.ActionsLog[0].Args, &quoteArgs); err != nil || quoteArgs["currency"] != "EUR" {
		t.Errorf("quote was not given --tool-args: %s", obj.ActionsLog[0].Args)
	}
	order, _ := mcpdemo.OrderFor(obj.Output)
	if len(obj.HooksLog) != 1 || obj.HooksLog[0].Target != "demo__submit" || obj.HooksLog[0].IsError || obj.HooksLog[0].Output != "accepted "+order {
		t.Errorf("hooksLog %+v, want submit to accept %s", obj.HooksLog, order)
	}
	if len(obj.PostProcessLog) != 1 || obj.PostProcessLog[0].Tool != "demo__remember" || obj.PostProcessLog[0].Output != "remembered" {
		t.Errorf("postProcessLog %+v", obj.PostProcessLog)
	}
	// The channel is the session; what remember kept is the next message's context.
	obj = lifecycle(t, dir, 0, "a", "pears")
	if obj.ChannelID != "a/lifecycle" || !slices.Equal(obj.Context, []string{mcpdemo.ConnectedLine}) {
		t.Errorf("another channel: %q %q", obj.ChannelID, obj.Context)
	}
	obj = lifecycle(t, dir, 0, "a", "three plums", "--channel", "shop")
	if want := []string{mcpdemo.ConnectedLine, "user said two apples / agent answered an order of two apples"}; !slices.Equal(obj.Context, want) {
		t.Errorf("context after remember %q, want %q", obj.Context, want)
	}
	if r := okRun(t, dir, "log", "a/shop"); strings.Count(r, " input ") != 2 {
		t.Errorf("session a/shop:\n%s", r)
	}
	// Phases switched off.
	obj = lifecycle(t, dir, 0, "a", "plain", "--channel", "shop", "--session", "quiet", "--no-context", "--no-actions", "--no-postprocess")
	if len(obj.Context)+len(obj.ActionsLog)+len(obj.HooksLog)+len(obj.PostProcessLog) != 0 || obj.Output != "an order of plain" {
		t.Errorf("without phases: %+v", obj)
	}
	okRun(t, dir, "log", "a/quiet")
	// A turn that fails prints its object and exits 4.
	if obj = lifecycle(t, dir, 4, "a", "broken"); obj.Status != event.StatusError {
		t.Errorf("failed turn: status %q", obj.Status)
	}
	failRun(t, dir, 2, "--tool-args", "send", "--lifecycle", "a", "x", "--tool-args", `{"demo-quote": 1}`)
	failRun(t, dir, 2, "needs --lifecycle", "send", "a", "x", "--channel", "c")
	failRun(t, dir, 2, "does not go with --lifecycle", "send", "--lifecycle", "a", "x", "--silent")
	failRun(t, dir, 3, "unknown agent", "send", "--lifecycle", "ghost", "x")

	// A server added at run time, for one agent, then removed.
	out := okRun(t, dir, "mcp", "add", "demo2", "--agent", "a", "--env", "DEMO=1", "--", agentdBin, "mcp", "demo")
	if !strings.HasPrefix(out, fmt.Sprintf("demo2: connected, %d tools (stdio", st.Tools)) {
		t.Errorf("mcp add printed %q", out)
	}
	if row := tableRow(t, okRun(t, dir, "mcp", "list"), "demo2"); row[2] != "connected" || row[5] != "integration" {
		t.Errorf("mcp list row %v", row)
	}
	tableRow(t, okRun(t, dir, "mcp", "tools", "demo2"), "demo2__echo")
	if out := okRun(t, dir, "mcp", "remove", "demo2"); strings.TrimSpace(out) != "demo2: removed" {
		t.Errorf("mcp remove printed %q", out)
	}
	failRun(t, dir, 3, "no MCP server", "mcp", "remove", "demo2")
	failRun(t, dir, 1, "edit the file", "mcp", "remove", "demo")
	if r := run(t, dir, "mcp", "add", "broken", "--", filepath.Join(dir, "no-such-server")); r.code == 0 {
		t.Errorf("adding a server that cannot start: %+v", r)
	}
	failRun(t, dir, 2, "--url", "mcp", "add", "nothing")
	failRun(t, dir, 2, "after --", "mcp", "add", "x", "some-command")
	failRun(t, dir, 2, "NAME=VALUE", "mcp", "add", "x", "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization")
	if row := tableRow(t, okRun(t, dir, "mcp", "list"), "demo"); row[2] != "connected" {
		t.Errorf("demo after the failures: %v", row)
	}
	d.stop(t)

	// Without a daemon, agentd in process waits for its servers to connect
	// and gives the same results.
	if row := tableRow(t, okRun(t, dir, "mcp", "list"), "demo"); row[2] != "connected" {
		t.Errorf("in process: mcp list row %v", row)
	}
	obj = lifecycle(t, dir, 0, "a", "figs", "--channel", "market")
	if obj.Status != "done" || !slices.Equal(obj.Context, []string{mcpdemo.ConnectedLine}) || len(obj.HooksLog) != 1 || obj.HooksLog[0].IsError {
		t.Errorf("in process: lifecycle object %+v", obj)
	}
}

// background runs agentd with args and sends its result when it exits.
func background(t *testing.T, dir string, args ...string) <-chan result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, agentdBin, append([]string{"--data", dir}, args...)...)
	cmd.Env = append(os.Environ(), storeEnv(cmd.Args)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	ch := make(chan result, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		ch <- result{out.String(), errb.String() + fmt.Sprint(err), code}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch
}

// waitApproval polls agentd approvals --json until a call of session
// waits, and returns it.
func waitApproval(t *testing.T, dir, session string) permit.Request {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list []permit.Request
		decodeOut(t, okRun(t, dir, "approvals", "--json"), &list)
		for _, r := range list {
			if r.Session == session {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call of %s waited for approval: %+v", session, list)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// turnResult waits for a background send --json and returns its events and end.
func turnResult(t *testing.T, ch <-chan result) ([]event.Event, *event.TurnEndData) {
	t.Helper()
	var r result
	select {
	case r = <-ch:
	case <-time.After(60 * time.Second):
		t.Fatal("send did not finish")
	}
	if r.code != 0 {
		t.Fatalf("send: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	evs, end := jsonEvents(t, r.stdout)
	if end == nil {
		t.Fatalf("send printed no end:\n%s", r.stdout)
	}
	return evs, end
}

func toolResults(evs []event.Event) []event.ToolResultData {
	var out []event.ToolResultData
	for _, e := range evs {
		var d event.ToolResultData
		if e.Kind == event.ToolResult && e.Decode(&d) == nil {
			out = append(out, d)
		}
	}
	return out
}

func TestApprovalCommands(t *testing.T) {
	addr := fake(t, "match ^count\ncall demo__counter {}\n---\nsay the counter said: {{tool_result}}\n")
	dir := dataDir(t, nil)
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	def := demoAgent(addr, dir, "tools:\n  ask: [\"demo__counter\"]\n")
	if err := os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	serve(t, dir)
	waitDemo(t, dir)
	if out := okRun(t, dir, "approvals"); strings.TrimSpace(out) != "no approvals waiting" {
		t.Errorf("approvals with none: %q", out)
	}

	// Granted: the tool runs and the turn goes on with its result.
	sent := background(t, dir, "send", "a", "count please", "--session", "s1", "--json")
	req := waitApproval(t, dir, "a/s1")
	if req.Tool != "demo__counter" || req.Agent != "a" || string(req.Args) != "{}" || !req.ExpiresAt.After(req.CreatedAt) {
		t.Errorf("waiting call %+v", req)
	}
	row := tableRow(t, okRun(t, dir, "approvals"), req.ID)
	if !slices.Equal(row[1:4], []string{"a/s1", "demo__counter", "{}"}) || row[4] != "in" {
		t.Errorf("approvals row %v", row)
	}
	if out := okRun(t, dir, "approve", req.ID); strings.TrimSpace(out) != "approved "+req.ID+" (demo__counter in a/s1)" {
		t.Errorf("approve printed %q", out)
	}
	evs, end := turnResult(t, sent)
	if tr := toolResults(evs); len(tr) != 1 || tr[0].IsError || tr[0].Output != "1" {
		t.Errorf("tool results %+v", tr)
	}
	if end.Status != event.StatusDone || end.Reply != "the counter said: 1" {
		t.Errorf("end %+v", end)
	}
	failRun(t, dir, 3, "no approval", "approve", req.ID)
	failRun(t, dir, 3, "no approval", "deny", "nope")

	// Denied with a reason: the tool does not run, and the model is told why.
	sent = background(t, dir, "send", "a", "count again", "--session", "s2", "--json")
	req = waitApproval(t, dir, "a/s2")
	out := okRun(t, dir, "deny", req.ID, "--reason", "not on a Sunday")
	if strings.TrimSpace(out) != "denied "+req.ID+" (demo__counter in a/s2): not on a Sunday" {
		t.Errorf("deny printed %q", out)
	}
	evs, end = turnResult(t, sent)
	tr := toolResults(evs)
	if len(tr) != 1 || !tr[0].IsError || !strings.Contains(tr[0].Output, "not on a Sunday") {
		t.Errorf("tool results %+v", tr)
	}
	if !strings.Contains(end.Reply, "not on a Sunday") {
		t.Errorf("the model did not see the reason: %q", end.Reply)
	}
	var resolved *event.ApprovalResolvedData
	r := okRun(t, dir, "log", "a/s2", "--json")
	logged, _ := jsonEvents(t, r)
	for _, e := range logged {
		if e.Kind == event.ApprovalResolved {
			resolved = new(event.ApprovalResolvedData)
			e.Decode(resolved)
		}
	}
	if resolved == nil || resolved.Granted || resolved.Reason != "not on a Sunday" || resolved.By != "cli" || resolved.ID != req.ID {
		t.Errorf("logged resolution %+v", resolved)
	}

	// The denied call did not run: the next granted one counts 2.
	sent = background(t, dir, "send", "a", "count once more", "--session", "s3", "--json")
	okRun(t, dir, "approve", waitApproval(t, dir, "a/s3").ID)
	if evs, _ := turnResult(t, sent); len(toolResults(evs)) != 1 || toolResults(evs)[0].Output != "2" {
		t.Errorf("after a denial the counter says %+v", toolResults(evs))
	}
	if out := okRun(t, dir, "approvals"); strings.TrimSpace(out) != "no approvals waiting" {
		t.Errorf("approvals after all were answered: %q", out)
	}
}
