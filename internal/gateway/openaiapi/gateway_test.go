package openaiapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentd/internal/gateway"
)

// bodyBudget is the gateway's budget of large bodies in flight in these
// tests: one large request held open takes it.
const bodyBudget = 256 << 10

// gatewayEnv serves the API in the gateway, with a small body budget that
// a request waits for at most a millisecond.
func gatewayEnv(t *testing.T) *env {
	return newEnvOf(t, envOptions{gateway: func(o *gateway.Options) {
		o.BodyBytesInFlight = bodyBudget
		o.BodyWait = time.Millisecond
	}})
}

// holdBudget starts a chat completion whose large body is still coming, so
// that it holds the gateway's body budget, and returns a function that
// sends the rest and waits for its answer.
func holdBudget(t *testing.T, e *env) (release func()) {
	t.Helper()
	body := `{"model":"assistant","messages":[{"role":"user","content":"` + strings.Repeat("x", bodyBudget-1000) + `"}]}`
	for try := 1; ; try++ {
		pw, done := startHeld(t, e, body)
		if holds(t, e, done) {
			return func() {
				io.WriteString(pw, body[100<<10:])
				pw.Close()
				select {
				case status := <-done:
					if status != http.StatusOK {
						t.Errorf("the request holding the budget: %d", status)
					}
				case <-time.After(20 * time.Second):
					t.Fatal("the request holding the budget never ended")
				}
			}
		}
		pw.Close()
		if try == 10 {
			t.Fatal("the held request never took the budget")
		}
	}
}

// startHeld starts a chat completion of body and sends its first 100 KiB;
// done receives its status when it ends.
func startHeld(t *testing.T, e *env, body string) (*io.PipeWriter, chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequestWithContext(t.Context(), "POST", e.http.URL+"/v1/chat/completions", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.ContentLength = int64(len(body))
	done := make(chan int, 1)
	go func() {
		resp, err := e.http.Client().Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	if _, err := io.WriteString(pw, body[:100<<10]); err != nil {
		t.Fatal(err)
	}
	return pw, done
}

// holds waits until a large request is refused for want of room: the held
// request took its share (the gateway takes it when its handler starts,
// which may come after its first bytes were sent). False when the held
// request ended first: a probe came before it and it was refused itself
// after its short wait, so it must be started again.
func holds(t *testing.T, e *env, done chan int) bool {
	t.Helper()
	probe := `{"model":"assistant","messages":[{"role":"user","content":"` + strings.Repeat("z", 200<<10) + `"}]}`
	for deadline := time.Now().Add(20 * time.Second); e.post(t, probe).status != http.StatusServiceUnavailable; {
		select {
		case <-done:
			return false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the held request never took the budget")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// Every error on the API's routes has OpenAI's shape, those the gateway
// answers before the request reaches the API too: a wrong token, another
// method, a large body refused for want of room (503 busy, with
// Retry-After), and an agent whose file is invalid. The gateway's own
// routes keep the gateway's shape.
func TestErrorsThroughTheGateway(t *testing.T) {
	e := gatewayEnv(t)
	user := `"messages":[{"role":"user","content":"hi"}]`
	checkError(t, e.post(t, `{"model":"assistant",`+user+`}`, "Authorization", "Bearer wrong"), 401, "invalid_request_error", "", "unauthorized")
	checkError(t, e.do(t, "GET", "/v1/chat/completions", ""), 405, "invalid_request_error", "", "method_not_allowed")
	checkError(t, e.do(t, "DELETE", "/v1/models/assistant", ""), 405, "invalid_request_error", "", "method_not_allowed")
	o := checkError(t, e.post(t, `{"model":"broken",`+user+`}`), 409, "invalid_request_error", "model", "agent_invalid")
	if !strings.Contains(o.Message, `agents/broken.yaml:5: model.params.temperature: must be a number, got "hot"`) {
		t.Errorf("an invalid agent: %q, want its problems", o.Message)
	}

	release := holdBudget(t, e)
	r := e.post(t, `{"model":"assistant","messages":[{"role":"user","content":"`+strings.Repeat("y", 200<<10)+`"}]}`)
	o = checkError(t, r, 503, "server_error", "", "busy")
	if r.header.Get("Retry-After") == "" || !strings.Contains(o.Message, "too many large requests") {
		t.Errorf("a large body past the budget: %s (Retry-After %q)", r.body, r.header.Get("Retry-After"))
	}
	release()

	r = e.do(t, "GET", "/v1/sessions", "", "Authorization", "Bearer wrong")
	var ge gateway.Error
	if err := json.Unmarshal(r.body, &ge); r.status != 401 || err != nil || ge.Code != "unauthorized" {
		t.Errorf("a gateway route with a wrong token: %d %s", r.status, r.body)
	}
}

// The official openai npm client shows the message of each error the
// gateway answers on the API's routes, with its status and code.
func TestOfficialClientErrorsThroughTheGateway(t *testing.T) {
	node, modules := nodeDeps(t)
	e := gatewayEnv(t)
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "failures.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "failures.mjs"), src, 0o600)
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	cases, _ := json.Marshal([]map[string]any{
		{"name": "token", "apiKey": "wrong", "model": "assistant", "text": "hi"},
		{"name": "invalid", "apiKey": token, "model": "broken", "text": "hi"},
		{"name": "busy", "apiKey": token, "model": "assistant", "text": map[string]any{"repeat": "y", "times": 200 << 10}},
	})
	release := holdBudget(t, e)
	cmd := exec.CommandContext(t.Context(), node, "failures.mjs", e.http.URL+"/v1", string(cases))
	cmd.Dir = dir
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	release()
	if err != nil {
		t.Fatalf("node failures.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	t.Logf("client: %s", &stdout)
	var got map[string]clientFailure
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("client output %s: %v", &stdout, err)
	}
	for _, c := range []struct {
		name, class string
		status      int
		code, msg   string
	}{
		{"token", "AuthenticationError", 401, "unauthorized", "missing or invalid token"},
		{"invalid", "ConflictError", 409, "agent_invalid", `agents/broken.yaml:5: model.params.temperature: must be a number, got "hot"`},
		{"busy", "InternalServerError", 503, "busy", "too many large requests are being received at once"},
	} {
		f := got[c.name]
		if !f.Failed || f.Class != c.class || f.Status == nil || *f.Status != c.status || f.Code != c.code || !strings.Contains(f.Message, c.msg) {
			t.Errorf("%s: %+v, want %s %d %s saying %q", c.name, f, c.class, c.status, c.code, c.msg)
		}
	}
}
