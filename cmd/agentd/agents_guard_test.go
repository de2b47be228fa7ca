package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestContactsStopAtMaxContacts: through the daemon, with
// agents.max_contacts 2, two people who write to a public swarm each get
// their agent and may write again; a third is refused with 429 naming the
// limit (in the agent system's words, not the store's), and nothing is
// made for them.
func TestContactsStopAtMaxContacts(t *testing.T) {
	t.Parallel()
	dir := dataDir(t, map[string]string{
		"agentd.yaml":      "agents:\n  max_contacts: 2\n",
		"agents/desk.yaml": "type: swarm\nmodel: {provider: echo}\n",
	})
	token := strings.TrimSpace(okRun(t, dir, "token"))
	d, base := serveListen(t, dir, "127.0.0.1:0")
	defer d.stop(t)
	client := &http.Client{Transport: bearer{token}}
	contact := func(user string) (int, string) {
		t.Helper()
		body := fmt.Sprintf(`{"connector":"telegram","channel":"public","user":%q,"text":"hi"}`, user)
		resp, err := client.Post(base+"/v1/agents/desk/contact", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, readAll(t, resp)
	}
	for _, user := range []string{"ann", "bob", "ann"} {
		if code, out := contact(user); code != http.StatusAccepted {
			t.Fatalf("contact %s: %d %s", user, code, out)
		}
	}
	code, out := contact("carl")
	if code != http.StatusTooManyRequests || !strings.Contains(out, "max_contacts 2") {
		t.Errorf("a third person under max_contacts 2: %d %s; want 429 naming max_contacts 2", code, out)
	}
	if strings.Contains(out, "sqlite") || strings.Contains(out, "create instance") {
		t.Errorf("the refusal speaks of the store (its driver, the instance it did not make): %s", out)
	}
	if list := okRun(t, dir, "agents", "--json"); strings.Contains(list, "carl") {
		t.Errorf("an agent was made for the refused person:\n%s", list)
	}
}

// TestDetachedStartNeedsAgentsDetach: through the daemon, a model that
// asks start_background_agent for a detached agent gets an error result
// naming agents.detach unless its definition allows it, and no agent is
// started; with agents.detach: true the same call starts a background
// agent.
func TestDetachedStartNeedsAgentsDetach(t *testing.T) {
	t.Parallel()
	addr := fake(t, "match ^part$\nsay the part is done\n\n"+
		"match go\n"+`call start_background_agent {"prompt":"part","detached":true}`+"\n---\nsay {{tool_result}}\n\n"+
		"match *\nsay ok\n")
	dir := dataDir(t, map[string]string{
		"agents/planner.yaml": openaiAgent(addr, "tools:\n  allow: [start_background_agent]\n"),
		"agents/free.yaml":    openaiAgent(addr, "tools:\n  allow: [start_background_agent]\nagents:\n  detach: true\n"),
	})
	d := serve(t, dir)
	defer d.stop(t)
	if out := okRun(t, dir, "send", "planner/main", "go"); !strings.Contains(out, "agents.detach") {
		t.Errorf("a detached start without agents.detach answered: %s; want an error naming agents.detach", out)
	}
	if list := okRun(t, dir, "agents", "--json"); strings.Contains(list, `"background"`) {
		t.Errorf("a background agent was started:\n%s", list)
	}
	if out := okRun(t, dir, "send", "free/main", "go"); !strings.Contains(out, `"type":"background"`) {
		t.Errorf("a detached start with agents.detach answered: %s; want a background agent", out)
	}
}
