package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/gateway/openaiapi"
)

// Through agentd serve, every error on the OpenAI-compatible routes has
// OpenAI's shape, the gateway's own refusals too, and a chat completion to
// an agent whose file is invalid says so, with the file's problems (409
// agent_invalid) rather than that there is no such model. The official
// openai npm client shows those messages.
func TestOpenAIErrorsThroughTheDaemon(t *testing.T) {
	t.Parallel()
	dir := dataDir(t, map[string]string{
		"agents/good.yaml":   openaiAgent(fake(t, "say hi\n"), ""),
		"agents/broken.yaml": "name: Broken\nmodel:\n  provider: echo\n  params:\n    temperature: hot\n",
	})
	tok := strings.TrimSpace(run(t, dir, "token").stdout)
	_, base := serveListen(t, dir, "127.0.0.1:0")
	problem := `agents/broken.yaml:5: model.params.temperature: must be a number, got "hot"`
	for _, c := range []struct {
		method, path, body, auth string
		status                   int
		code, msg                string
	}{
		{"POST", "/v1/chat/completions", `{"model":"broken","messages":[{"role":"user","content":"hi"}]}`, tok, 409, "agent_invalid", problem},
		{"POST", "/v1/chat/completions", `{"model":"good","messages":[{"role":"user","content":"hi"}]}`, "wrong", 401, "unauthorized", "missing or invalid token"},
		{"GET", "/v1/chat/completions", "", tok, 405, "method_not_allowed", "method not allowed"},
		{"GET", "/v1/models/broken", "", tok, 404, "model_not_found", "broken"},
	} {
		r := request(t, c.method, base+c.path, c.body, "Authorization: Bearer "+c.auth, "Content-Type: application/json")
		var eb openaiapi.ErrorBody
		dec := json.NewDecoder(strings.NewReader(r.body))
		dec.DisallowUnknownFields()
		err := dec.Decode(&eb)
		if r.status != c.status || err != nil || eb.Error.Code == nil || *eb.Error.Code != c.code || !strings.Contains(eb.Error.Message, c.msg) {
			t.Errorf("%s %s: %d %s, want %d in OpenAI's shape, code %s, saying %q", c.method, c.path, r.status, r.body, c.status, c.code, c.msg)
		}
	}

	node, modules := npmDeps(t)
	if _, err := os.Stat(filepath.Join(modules, "openai", "package.json")); err != nil {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatalf("the openai npm package is missing: %v", err)
		}
		t.Skip("skipping: the openai npm package is not installed")
	}
	script := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "internal", "gateway", "openaiapi", "testdata", "failures.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(script, "failures.mjs"), src, 0o600)
	if err := os.Symlink(modules, filepath.Join(script, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cases, _ := json.Marshal([]map[string]any{
		{"name": "invalid", "apiKey": tok, "model": "broken", "text": "hi"},
		{"name": "token", "apiKey": "wrong", "model": "good", "text": "hi"},
	})
	cmd := exec.Command(node, filepath.Join(script, "failures.mjs"), base+"/v1", string(cases))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got map[string]struct {
		Class   string `json:"class"`
		Status  int    `json:"status"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("node printed %q: %v", stdout.String(), err)
	}
	if f := got["invalid"]; f.Class != "ConflictError" || f.Status != 409 || f.Code != "agent_invalid" || !strings.Contains(f.Message, problem) {
		t.Errorf("the openai client, an invalid agent: %+v", f)
	}
	if f := got["token"]; f.Class != "AuthenticationError" || f.Status != 401 || !strings.HasPrefix(f.Message, "401 missing or invalid token") {
		t.Errorf("the openai client, a wrong token: %+v", f)
	}
}
