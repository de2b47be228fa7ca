package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// Through the daemon's socket: a chat completion with a flood of tiny
// messages and a message with too long a text are refused with a 413 that
// names the limit, before any turn runs.
func TestRequestLimitsThroughTheDaemon(t *testing.T) {
	t.Parallel()
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(fake(t, ""), "")})
	serve(t, dir)
	hc := unixHTTP(dir)
	post := func(path, body string) (int, string) {
		t.Helper()
		resp, err := hc.Post("http://agentd"+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var b strings.Builder
	b.WriteString(`{"model":"a","messages":[`)
	for range 300_000 {
		b.WriteString(`{"role":"user","content":"xxxxxxxxxxxxx"},`)
	}
	b.WriteString(`{"role":"user","content":"hello"}]}`)
	status, body := post("/v1/chat/completions", b.String())
	if status != 413 || !strings.Contains(body, `"code":"request_too_large"`) || !strings.Contains(body, "2048 messages") {
		t.Errorf("a flood of messages: %d %.300s", status, body)
	}
	status, body = post("/v1/sessions/a/k/messages", `{"text":"`+strings.Repeat("x", 1<<20+1)+`"}`)
	if status != 413 || !strings.Contains(body, `"code":"too_large"`) || !strings.Contains(body, fmt.Sprint(1<<20)) {
		t.Errorf("a text over the limit: %d %.300s", status, body)
	}
	if r := run(t, dir, "sessions"); strings.Contains(r.stdout, "a/") {
		t.Errorf("a refused request made a session:\n%s", r.stdout)
	}
}
