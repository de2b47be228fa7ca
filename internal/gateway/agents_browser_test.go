package gateway_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/gateway/console"
	"agentd/internal/gateway/stream"
	"agentd/internal/runtime"
	"agentd/internal/testkit"
)

// The console's Agents screen in Chromium (test/console/agents.spec.mjs)
// against the API of fakeAgents, served in process with a real runtime,
// stream and console: the tree shows the three agents nested with their
// states and rolled-up costs, a child's Log link opens its log, and Stop
// stops an agent. The three agents are also definitions of the runtime,
// so that their sessions exist: the first child's log holds a turn.
func TestAgentTreeInChromium(t *testing.T) {
	chromium, node := browserDeps(t)
	defs := testAgents()
	for _, id := range []string{parentID, child1ID, child2ID} {
		defs[id] = &agent.Definition{ID: id, Type: agent.TypeSubagent, Model: agent.Model{Provider: "test", Name: "m1"}}
	}
	// Each turn costs $0.125: 3 tokens in, 2 out.
	prices := func(o *engine.Options) { o.Prices = map[string]agent.Price{"m1": {Input: 25000, Output: 25000}} }
	k := testkit.New(t, &testkit.Options{Agents: defs, Model: testkit.NewModel(), Engine: prices})
	ctx := t.Context()
	rc, err := k.Runtime.Submit(ctx, runtime.Input{Session: child1ID + "/main", Text: "find the first offer"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	end, err := k.Runtime.Wait(wctx, rc.Turn)
	if err != nil {
		t.Fatal(err)
	}
	// The fake's costs stand for these turns of the first child and the
	// parent.
	first, own := end.CostUSD, parentTurn(t, k)
	st := stream.New(stream.Join(k.Runtime, k.Store), nil)
	t.Cleanup(func() { st.Close() })
	// The agents' costs: the fake's, and what their turns here spend.
	f := &fakeAgents{spent: func(ids []string) map[string]float64 {
		m, err := k.Store.InstanceCosts(context.Background(), ids)
		if err != nil || m == nil {
			t.Error(err)
			m = map[string]float64{}
		}
		m[child1ID] -= first
		m[parentID] -= own
		return m
	}}
	// Only the tree's agents: the definitions of testAgents are the cards'.
	srv := gateway.New(&gateway.Options{Runtime: k.Runtime, Sessions: k.Store, Agents: testAgents(), DynamicAgents: f,
		Console: console.Handler(&console.Options{}), Stream: st})
	tk, tok := authTokens(t)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: ts.Listener.Addr().String()})
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})

	spec, _ := filepath.Abs(filepath.Join("..", "..", "test", "console", "agents.spec.mjs"))
	env := []string{"URL=" + ts.URL, "TOKEN=" + tok, "CHROMIUM=" + chromium, "FAILURE_DIR=" + t.TempDir(),
		"CHILD=" + child1ID, "PARENT=" + parentID, "SECOND=" + child2ID}
	// AGENTD_SCREENSHOTS names a folder for the screenshots (1: none
	// here; docs/screenshots is the console tests' of cmd/agentd).
	if d := os.Getenv("AGENTD_SCREENSHOTS"); d != "" && d != "1" {
		env = append(env, "SCREENSHOT_DIR="+d)
	}
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Minute)
	defer ccancel()
	cmd := exec.CommandContext(cctx, node, spec)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Log(line)
	}
	if err != nil || !strings.Contains(string(out), " passed, 0 failed") {
		t.Fatalf("agents.spec.mjs: %v", err)
	}
}

// parentTurn gives the parent's chat a turn that started the second child
// with start_background_agent, and a guard's refusal of a third: the
// events agentsys writes, recorded into the turn. It returns the turn's
// cost.
func parentTurn(t *testing.T, k *testkit.Kit) float64 {
	t.Helper()
	ctx := t.Context()
	rc, err := k.Runtime.Submit(ctx, runtime.Input{Session: parentID + "/main", Text: "start the helpers"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	end, err := k.Runtime.Wait(wctx, rc.Turn)
	if err != nil {
		t.Fatal(err)
	}
	err = k.Runtime.Record(ctx, parentID+"/main",
		event.New(0, rc.Turn, event.ToolCall, event.ToolCallData{ID: "call-1", Name: "start_background_agent", Args: []byte(`{"prompt":"the second offer"}`)}),
		event.New(0, rc.Turn, event.ToolResult, event.ToolResultData{ID: "call-1", Name: "start_background_agent",
			Output: `{"id":"` + child2ID + `","session":"` + child2ID + `/main"}`, DurationMS: 3}),
		event.New(0, rc.Turn, event.Agent, event.AgentData{Op: event.AgentGuard, Guard: "max_children", Limit: 2, Value: 3, Target: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	return end.CostUSD
}
