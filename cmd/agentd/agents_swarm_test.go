package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentd/internal/gateway"
)

// TestSwarmSubagentsKeepTheirCustomersMemory: through the daemon, a
// swarm desk's agent for Ann starts a sub-agent that remembers Ann's
// account number; Bob's agent starts one that recalls: it finds nothing
// of Ann's, while another sub-agent of Ann's finds it. A customer's
// sub-agents remember in that customer's memory, not the template's.
func TestSwarmSubagentsKeepTheirCustomersMemory(t *testing.T) {
	t.Parallel()
	addr := fake(t, "match ^my account\n"+`call start_background_agent {"prompt":"note the account number 7731"}`+"\n---\nsay started\n\n"+
		"match ^note\n"+`call remember {"insight": "{{last_user}}"}`+"\n---\nsay stored\n\n"+
		"match ^which\n"+`call start_background_agent {"prompt":"recall the account number"}`+"\n---\nsay started\n\n"+
		"match ^recall\n"+`call recall {"query": "account number"}`+"\n---\nsay recalled: {{tool_result}}\n\n"+
		"match *\nsay ok\n")
	dir := dataDir(t, map[string]string{
		"agents/desk.yaml": openaiAgent(addr, "type: swarm\ntools:\n  allow: [start_background_agent, recall, remember]\n"),
	})
	token := strings.TrimSpace(okRun(t, dir, "token"))
	d, base := serveListen(t, dir, "127.0.0.1:0")
	defer d.stop(t)
	client := &http.Client{Transport: bearer{token}}
	contact := func(user, text string) string {
		t.Helper()
		body := fmt.Sprintf(`{"connector":"telegram","channel":"dm","user":%q,"text":%q}`, user, text)
		resp, err := client.Post(base+"/v1/agents/desk/contact", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out := readAll(t, resp)
		var c gateway.ContactResponse
		if resp.StatusCode != http.StatusAccepted || json.Unmarshal([]byte(out), &c) != nil {
			t.Fatalf("contact %s: %d %s", user, resp.StatusCode, out)
		}
		return c.ID
	}
	// result waits for a sub-agent of parent to end with an answer that
	// begins with prefix, and returns the answer.
	result := func(parent, prefix string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second) // ends a test that hangs; no time is asserted
		for {
			var list []gateway.AgentInfo
			decodeOut(t, okRun(t, dir, "agents", "--json", "--all", "--parent", parent), &list)
			for _, a := range list {
				if a.State != "done" {
					continue
				}
				var st struct{ Result string }
				if err := json.Unmarshal([]byte(okRun(t, dir, "agents", "show", a.ID, "--json")), &st); err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(st.Result, prefix) {
					return st.Result
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no sub-agent of %s answered %q: %+v", parent, prefix, list)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ann := contact("ann", "my account is 7731")
	result(ann, "stored")
	bob := contact("bob", "which account is mine?")
	if got := result(bob, "recalled:"); strings.Contains(got, "7731") {
		t.Errorf("Bob's sub-agent recalled Ann's account: %s", got)
	}
	contact("ann", "which account is mine?")
	if got := result(ann, "recalled:"); !strings.Contains(got, "7731") {
		t.Errorf("Ann's second sub-agent did not recall her account: %s", got)
	}
}
