package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAskKeepsTheCallersConversationsApart: through the daemon, an
// assistant that talks to Alice and to Bob in sessions of their own asks
// a helper for each with ask_agent. The helper answers Bob's question
// without reading Alice's: each conversation of the caller has its own
// conversation with the callee.
func TestAskKeepsTheCallersConversationsApart(t *testing.T) {
	t.Parallel()
	asker := fake(t, "match ^for\n"+`call ask_agent {"name":"helper","question":"{{last_user}}"}`+"\n---\nsay {{tool_result}}\n\nmatch *\nsay ok\n")
	helper := fakeRec(t, "match *\nsay noted\n")
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(asker, "tools:\n  allow: [ask_agent]\nagents:\n  targets: [helper]\n"),
		"agents/helper.yaml":    openaiAgent(helper.addr, ""),
	})
	d := serve(t, dir)
	defer d.stop(t)
	okRun(t, dir, "send", "assistant/alice", "for alice: is my biopsy result back?")
	okRun(t, dir, "send", "assistant/bob", "for bob: what time is it?")

	helper.mu.Lock()
	defer helper.mu.Unlock()
	asked := false
	for _, body := range helper.bodies {
		var req chatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Content + "\n")
		}
		if !strings.Contains(all.String(), "what time is it") {
			continue
		}
		asked = true
		if strings.Contains(all.String(), "biopsy") {
			t.Errorf("the helper answering for Bob's conversation read Alice's question:\n%s", all.String())
		}
	}
	if !asked {
		t.Fatalf("the helper was not asked Bob's question (%d requests)", len(helper.bodies))
	}
}
