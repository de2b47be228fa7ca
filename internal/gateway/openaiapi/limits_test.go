package openaiapi_test

import (
	"fmt"
	"strings"
	"testing"

	"agentd/internal/gateway/openaiapi"
	"agentd/internal/runtime"
)

// messages makes a request body of n messages, the last a user's.
func messages(n int, content string) string {
	var b strings.Builder
	b.WriteString(`{"model":"assistant","messages":[`)
	for i := range n - 1 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `{"role":%q,"content":%q},`, role, content)
	}
	b.WriteString(`{"role":"user","content":"hi"}]}`)
	return b.String()
}

// A request has at most MaxMessages messages, and what it makes the agent
// receive at most runtime.MaxText bytes: past either it is a 413 naming
// the limit, and no turn runs.
func TestRequestLimits(t *testing.T) {
	e := newEnv(t)
	if r := e.post(t, messages(openaiapi.MaxMessages, "x")); r.status != 200 {
		t.Fatalf("%d messages: %d %.300s", openaiapi.MaxMessages, r.status, r.body)
	}
	r := e.post(t, messages(openaiapi.MaxMessages+1, "x"))
	o := checkError(t, r, 413, "invalid_request_error", "messages", "request_too_large")
	if !strings.Contains(o.Message, fmt.Sprint(openaiapi.MaxMessages)) {
		t.Errorf("the error does not name the limit: %q", o.Message)
	}
	// Far more tiny messages than the limit: refused the same way.
	r = e.post(t, messages(100*openaiapi.MaxMessages, "x"))
	checkError(t, r, 413, "invalid_request_error", "messages", "request_too_large")

	// A new conversation's transcript over the bound.
	long := strings.Repeat("y", runtime.MaxText/8)
	r = e.post(t, messages(10, long))
	o = checkError(t, r, 413, "invalid_request_error", "messages", "request_too_large")
	if !strings.Contains(o.Message, fmt.Sprint(runtime.MaxText)) || !strings.Contains(o.Message, openaiapi.SessionHeader) {
		t.Errorf("the error does not name the limit and the way out: %q", o.Message)
	}
	// Continued, only the last message is sent: the same messages pass.
	if r := e.post(t, messages(10, long), openaiapi.SessionHeader, "long"); r.status != 200 {
		t.Errorf("continued conversation: %d %.300s", r.status, r.body)
	}
}
