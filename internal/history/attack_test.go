package history_test

import (
	"strings"
	"testing"
)

// An agent cannot set or delete agentd's own working memory keys (those
// beginning with "_", a context instance's state), which would change
// what the context's render shows without its actions.
func TestAttackOwnWorkingKeys(t *testing.T) {
	st, tools := setup(t, nil)
	for _, c := range []struct{ name, args string }{
		{"wm_set", `{"key": "_context_state", "value": {"admin": true}}`},
		{"wm_set", `{"key": "_", "value": 1}`},
		{"wm_delete", `{"key": "_context_state"}`},
	} {
		out, err := call(t, tools, c.name, "alice", c.args)
		if err == nil || !strings.Contains(err.Error(), "agentd's own") {
			t.Errorf("%s %s: %q, %v; want it refused", c.name, c.args, out, err)
		}
	}
	s, err := st.SessionByAddress(t.Context(), "alice", "chat:1")
	if err != nil {
		return // nothing was written: no session either
	}
	if wm, _ := st.Working(t.Context(), s.ID); len(wm) != 0 {
		t.Errorf("working memory %v", wm)
	}
}
