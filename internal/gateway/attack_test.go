package gateway_test

import (
	"strings"
	"testing"
)

// The API cannot set or delete agentd's own working memory keys (those
// beginning with "_", a context instance's state): a 400 with a reason.
func TestAttackOwnWorkingKeys(t *testing.T) {
	e, _ := memEnv(t)
	if _, _, err := e.st.Session(t.Context(), "a", "k"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/v1/sessions/a/k/working/_context_state", `{"admin":true}`},
		{"PUT", "/v1/sessions/a/k/working/_x", `1`},
		{"DELETE", "/v1/sessions/a/k/working/_context_state", ""},
	} {
		code, _, body := e.do(c.method, c.path, c.body)
		if code != 400 || !strings.Contains(string(body), "agentd's own") {
			t.Errorf("%s %s: %d %s, want 400 naming the reason", c.method, c.path, code, body)
		}
	}
	if code, _, body := e.do("GET", "/v1/sessions/a/k/working", ""); code != 200 || string(body) != "{}\n" && string(body) != "{}" {
		t.Errorf("working memory after: %d %s", code, body)
	}
}
