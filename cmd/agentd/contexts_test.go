package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// ctxDir is a data directory with the agent assistant on a scripted
// model and the context type chat (an instance per userId, with notes
// and visits in its state) as a seed file.
func ctxDir(t *testing.T) string {
	t.Helper()
	addr := fake(t, "match ^note\ncall update_context {\"set\": {\"notes\": \"{{last_user}}\"}}\n---\nsay stored: {{tool_result}}\n\n"+
		"match ^visit\ncall update_context {\"set\": {\"visits\": 2}}\n---\nsay now: {{tool_result}}\n\n"+
		"match ^bad\ncall update_context {\"set\": {\"visits\": \"many\"}}\n---\nsay refused: {{tool_result}}\n\n"+
		"match .\nsay got: {{last_user}}\n")
	return dataDir(t, map[string]string{
		// update_context is offered by the context's view alone.
		"agents/assistant.yaml": openaiAgent(addr, ""),
		"extensions/context/chat.yaml": "type: context\nname: chat\nspec:\n  agent: assistant\n" +
			"  args_schema: {type: object, properties: {userId: {type: string, minLength: 1}}, required: [userId], additionalProperties: false}\n" +
			"  key: \"{{userId}}\"\n  instructions: Be brief.\n" +
			"  state_schema: {type: object, properties: {notes: {type: string}, visits: {type: integer}}, additionalProperties: false}\n" +
			"  initial_state: {notes: none yet, visits: 0}\n" +
			"  render: \"Chat with {{args.userId}}: {{state.notes}}\"\n",
	})
}

// checkContextSends sends to chat's instances through `agentd send
// --context`: alice's state stored by update_context is there for her
// second message, bob's instance is separate, an invalid change is an
// error the model sees, bad args are refused with a usage exit.
func checkContextSends(t *testing.T, dir string) {
	t.Helper()
	send := func(args, msg string) result {
		return run(t, dir, "send", "--context", "chat", "--args", args, msg)
	}
	if r := send(`{"userId":"alice"}`, "note likes tea"); r.code != 0 || strings.TrimSpace(r.stdout) != `stored: {"notes":"note likes tea","visits":0}` {
		t.Fatalf("first send: %+v", r)
	}
	if r := send(`{"userId":"alice"}`, "visit"); r.code != 0 || strings.TrimSpace(r.stdout) != `now: {"notes":"note likes tea","visits":2}` {
		t.Fatalf("second send does not see the first's state: %+v", r)
	}
	if r := send(`{"userId":"bob"}`, "visit"); r.code != 0 || strings.TrimSpace(r.stdout) != `now: {"notes":"none yet","visits":2}` {
		t.Fatalf("bob's instance: %+v", r)
	}
	if r := send(`{"userId":"bob"}`, "bad"); r.code != 0 || !strings.Contains(r.stdout, "refused: ") || !strings.Contains(r.stdout, "/visits: must be") {
		t.Fatalf("an invalid state change: %+v", r)
	}
	if r := run(t, dir, "contexts", "list"); r.code != 0 || !strings.Contains(r.stdout, "chat  assistant  {{userId}}") {
		t.Errorf("contexts list: %+v", r)
	}
	r := run(t, dir, "log", "assistant/ctx:chat:alice")
	if r.code != 0 || strings.Count(r.stdout, "turn_end") != 2 {
		t.Fatalf("alice's session: %+v", r)
	}
	for _, tc := range []struct {
		args, typ, msg string
		code           int
	}{
		{`{"user":"alice"}`, "chat", `/userId: is required; /user: is not allowed here`, 2},
		{`{"userId":"a/b"}`, "chat", `has a "/"`, 2},
		{`{"userId":"alice"}`, "nope", `unknown context type "nope"`, 3},
		{`[1]`, "chat", "--args: want a JSON object", 2},
	} {
		r := run(t, dir, "send", "--context", tc.typ, "--args", tc.args, "hi")
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("send --context %s --args %s: %+v, want exit %d with %q", tc.typ, tc.args, r, tc.code, tc.msg)
		}
	}
}

// `agentd send --context` in process: the instance's session exists, its
// state carries from one message to the next, args are checked.
func TestContextSendInProcess(t *testing.T) {
	checkContextSends(t, ctxDir(t))
}

// The same through `agentd serve` and its socket; then the API itself:
// the seed's {type: text, data} input waited for, the receipt naming the
// instance's session, the state in the instance's working memory under
// _context_state, 404 for an unknown type and 400 for bad args.
func TestContextSendThroughDaemon(t *testing.T) {
	dir := ctxDir(t)
	serve(t, dir)
	checkContextSends(t, dir)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", filepath.Join(dir, "agentd.sock"))
	}}}
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://agentd"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := do("POST", "/v1/contexts/chat/send?wait=true", `{"args": {"userId": "carol"}, "input": {"type": "text", "data": "hello"}}`)
	var out struct {
		Session string `json:"session"`
		End     struct {
			Reply string `json:"reply"`
		} `json:"end"`
	}
	if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil || out.Session != "assistant/ctx:chat:carol" || out.End.Reply != "got: hello" {
		t.Fatalf("send: %d %s", code, body)
	}
	code, body = do("GET", "/v1/sessions/assistant/ctx:chat:alice/working", "")
	if code != 200 || !strings.Contains(body, `"_context_state"`) || !strings.Contains(body, `note likes tea`) {
		t.Errorf("alice's working memory: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/contexts/nope/send", `{"input": "x"}`); code != 404 {
		t.Errorf("unknown type: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/contexts/chat/send", `{"args": {"userId": 7}, "input": "x"}`); code != 400 || !strings.Contains(body, "/userId: must be a string") {
		t.Errorf("bad args: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/contexts/chat/send", `{"args": {"userId": "x"}, "input": {"type": "image"}}`); code != 400 {
		t.Errorf("bad input: %d %s", code, body)
	}
	if code, body := do("GET", "/v1/contexts", ""); code != 200 || !strings.Contains(body, `"key":"{{userId}}"`) {
		t.Errorf("list: %d %s", code, body)
	}
}

// The model of a context's turn sees the context's instructions and its
// render with the state the last turn stored, and is offered
// update_context through the context's actions alone (the agent's own
// tools do not name it): in process and through the daemon.
func TestContextInThePrompt(t *testing.T) {
	addr := fake(t, "match ^note\ncall update_context {\"set\": {\"notes\": \"{{last_user}}\"}}\n---\nsay stored\n\n"+
		"match ^show\nsay {{system}}\n")
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(addr, ""),
		"extensions/context/chat.yaml": "type: context\nname: chat\nspec:\n  agent: assistant\n" +
			"  args_schema: {type: object, properties: {userId: {type: string}}, required: [userId]}\n" +
			"  key: \"{{userId}}\"\n  instructions: Be brief with this user.\n" +
			"  state_schema: {type: object, properties: {notes: {type: string}}}\n" +
			"  initial_state: {notes: nothing yet}\n" +
			"  render: \"Chat with {{args.userId}}: {{state.notes}}\"\n",
	})
	check := func(user string) {
		t.Helper()
		args := `{"userId":"` + user + `"}`
		if r := run(t, dir, "send", "--context", "chat", "--args", args, "show"); r.code != 0 || !strings.Contains(r.stdout, "Chat with "+user+": nothing yet") ||
			!strings.Contains(r.stdout, "Be brief with this user.") {
			t.Fatalf("%s's first prompt: %+v", user, r)
		}
		if r := run(t, dir, "send", "--context", "chat", "--args", args, "note likes tea"); r.code != 0 || strings.TrimSpace(r.stdout) != "stored" {
			t.Fatalf("%s's update: %+v", user, r)
		}
		if r := run(t, dir, "send", "--context", "chat", "--args", args, "show"); r.code != 0 || !strings.Contains(r.stdout, "Chat with "+user+": note likes tea") {
			t.Fatalf("%s's prompt after the update: %+v", user, r)
		}
		if r := run(t, dir, "log", "assistant/ctx:chat:"+user); r.code != 0 || strings.Contains(r.stdout, "not offered") {
			t.Errorf("%s's log: %+v", user, r)
		}
	}
	check("alice")
	serve(t, dir)
	check("bob")
}
