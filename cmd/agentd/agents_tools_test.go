package main

// The agent tools through the binary, in process and through the daemon:
// each is off unless an agent's policy allows it; messages loud and
// silent, to a named agent and to the most recent person's agent; asks
// answered and asks past their deadline; list, status and stop; and the
// guards, each under a test that tries to get past it: a cycle of
// messages, chains of asks and of starts, sub-agents that would overspend
// their parent's turn or day, and the node's cap on live agents. The
// models are testdata/agents.txtar's.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/gateway"
)

// An agent whose policy allows none of the agent tools calls each of them:
// every call is an error result, and nothing is started, created, sent or
// stopped.
func TestAgentToolsOffUnlessAllowed(t *testing.T) {
	addr := agentModel(t, "plain")
	files := map[string]string{"agents/plain.yaml": agentOn(addr, "")}
	eachWay(t, files, func(t *testing.T, w *way) {
		evs, end := sendTurn(t, w.dir, "plain", "try them all")
		res := toolResults(evs)
		if end.Status != event.StatusDone || len(res) != 7 {
			t.Fatalf("end %+v, results %+v", end, res)
		}
		for _, r := range res {
			if !r.IsError || !strings.Contains(r.Output, r.Name) {
				t.Errorf("%s by an agent not allowed it: %+v", r.Name, r)
			}
		}
		if list := dynamicAgents(t, w.dir); len(list) != 0 {
			t.Errorf("agents made: %+v", list)
		}
		if r := run(t, w.dir, "log", "plain/main"); r.code == 0 {
			t.Errorf("the agent messaged itself:\n%s", r.stdout)
		}
	})
}

// send_agent_message: a loud message starts the target's turn, wrapped as
// a system message from the sender; a silent one is logged, starts none,
// and enters the target's next turn.
func TestSendAgentMessageTool(t *testing.T) {
	target := fakeRec(t, mustScript(t, "target"))
	files := map[string]string{
		"agents/sender.yaml": agentOn(agentModel(t, "sender"), "tools:\n  allow: [send_agent_message]\nagents:\n  targets: [target]\n"),
		"agents/target.yaml": agentOn(target.addr, ""),
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		evs, _ := sendTurn(t, w.dir, "sender", "loud")
		var res struct {
			DeliveredTo string `json:"delivered_to"`
			Session     string
			Silent      bool
		}
		r := toolResultsOf(evs, "send_agent_message")
		if len(r) != 1 || r[0].IsError || json.Unmarshal([]byte(r[0].Output), &res) != nil || res.DeliveredTo != "target" || res.Session != "target/main" || res.Silent {
			t.Fatalf("a loud message: %+v", r)
		}
		log := waitLog(t, w.dir, "target/main", "the target's turn", func(evs []event.Event) bool { return countEnds(evs) == 1 })
		if m := systemMessages(log, "sender"); len(m) != 1 || m[0].Text != "the build is green" || m[0].Silent {
			t.Errorf("the target's messages: %+v", m)
		}
		want := `target got: <system_message origin="sender">the build is green</system_message>`
		if !said(log, want) {
			t.Errorf("the target did not answer %q: %v", want, kinds(log))
		}

		evs, _ = sendTurn(t, w.dir, "sender", "quiet")
		r = toolResultsOf(evs, "send_agent_message")
		if len(r) != 1 || r[0].IsError || !strings.Contains(r[0].Output, `"silent":true`) {
			t.Fatalf("a silent message: %+v", r)
		}
		waitLog(t, w.dir, "target/main", "the silent message", func(evs []event.Event) bool { return len(systemMessages(evs, "sender")) == 2 })
		w.restart(t)
		log = sessionLog(t, w.dir, "target/main")
		if m := systemMessages(log, "sender"); !m[1].Silent || countEnds(log) != 1 {
			t.Errorf("a silent message started a turn, or was not silent: %+v, %d turns", m, countEnds(log))
		}
		okRun(t, w.dir, "send", "target", "--session", "main", "what now?")
		got := target.lastTurnRequest(t).Messages
		if !slices.ContainsFunc(got, func(m struct{ Role, Content string }) bool {
			return m.Content == `<system_message origin="sender">the deploy is at noon</system_message>`
		}) {
			t.Errorf("the target's next turn did not see the silent message: %+v", got)
		}
	})
}

// send_agent_message without a target reaches the most recent user agent
// (most-recent-foreground) when its template is within the sender's
// reach, and is refused otherwise; a person's contact made it, through
// the daemon.
func TestSendAgentMessageMostRecentForeground(t *testing.T) {
	desk := agentModel(t, "desk")
	dir := dataDir(t, map[string]string{
		"agents/concierge.yaml": agentOn(desk, "type: user\n"),
		"agents/sender.yaml":    agentOn(agentModel(t, "sender"), "tools:\n  allow: [send_agent_message]\nagents:\n  targets: [concierge]\n"),
		"agents/stranger.yaml":  agentOn(agentModel(t, "sender"), "tools:\n  allow: [send_agent_message]\n"),
	})
	serve(t, dir)
	// The first person's turn ends before the second person writes: the
	// most recent conversation is the second's by every measure.
	first := contact(t, dir, "concierge", "4242", "hello")
	waitLog(t, dir, first.ID+"/main", "the first answer", func(evs []event.Event) bool { return countEnds(evs) == 1 })
	latest := contact(t, dir, "concierge", "7", "hello")
	waitLog(t, dir, latest.ID+"/main", "the answer", func(evs []event.Event) bool { return countEnds(evs) == 1 })
	// An agent whose agents.targets does not name the template cannot
	// reach a person's conversation.
	evs, _ := sendTurn(t, dir, "stranger", "anyone there")
	if r := toolResultsOf(evs, "send_agent_message"); len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, "no user agent in reach") || strings.Contains(r[0].Output, latest.ID) {
		t.Errorf("a message with no target from an agent that may not reach it (refused without naming the conversation): %+v", r)
	}
	evs, _ = sendTurn(t, dir, "sender", "anyone there")
	r := toolResultsOf(evs, "send_agent_message")
	if len(r) != 1 || r[0].IsError || !strings.Contains(r[0].Output, `"delivered_to":"`+latest.ID+`"`) {
		t.Fatalf("a message with no target: %+v; want it delivered to %s", r, latest.ID)
	}
	log := waitLog(t, dir, latest.ID+"/main", "the message", func(evs []event.Event) bool { return countEnds(evs) == 2 })
	if m := systemMessages(log, "sender"); len(m) != 1 || m[0].Text != "a word for whoever talks to a person" {
		t.Errorf("the person's agent got %+v", m)
	}
}

// ask_agent: the answer comes back as the call's result, from the callee's
// own session; a deadline passed is an error result saying where the
// question stays.
func TestAskAgentTool(t *testing.T) {
	files := map[string]string{
		"agents/asker.yaml":  agentOn(agentModel(t, "asker"), "tools:\n  allow: [ask_agent]\nagents:\n  targets: [oracle]\n"),
		"agents/oracle.yaml": agentOn(agentModel(t, "oracle"), ""),
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		evs, _ := sendTurn(t, w.dir, "asker", "ask it")
		r := toolResultsOf(evs, "ask_agent")
		var res struct {
			Answer, Status, Session string
		}
		if len(r) != 1 || r[0].IsError || json.Unmarshal([]byte(r[0].Output), &res) != nil ||
			res.Answer != "42" || res.Status != "done" || res.Session != "oracle/ask:asker:cli:root" {
			t.Fatalf("an ask: %+v", r)
		}
		evs, _ = sendTurn(t, w.dir, "asker", "impatient")
		r = toolResultsOf(evs, "ask_agent")
		if len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, "oracle/ask:asker:cli:root") {
			t.Fatalf("an ask past its deadline: %+v", r)
		}
		log := sessionLog(t, w.dir, "oracle/ask:asker:cli:root")
		if !slices.ContainsFunc(log, func(e event.Event) bool {
			return e.Kind == event.Input && strings.Contains(string(e.Data), "slow question")
		}) {
			t.Errorf("the question is not in the callee's log: %v", kinds(log))
		}
	})
}

// list_agents, agent_status and stop_agent on a sub-agent the caller
// started: listed under it; then, named by its id in a person's message,
// its state read and stopped with a reason.
func TestAgentListStatusStopTools(t *testing.T) {
	files := map[string]string{
		"agents/boss.yaml": agentOn(agentModel(t, "boss"), "tools:\n  allow: [start_background_agent, list_agents, agent_status, stop_agent]\n"),
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		results := func(evs []event.Event) map[string]event.ToolResultData {
			res := map[string]event.ToolResultData{}
			for _, r := range toolResults(evs) {
				res[r.Name] = r
				if r.IsError {
					t.Errorf("%s: %s", r.Name, r.Output)
				}
			}
			return res
		}
		evs, _ := sendTurn(t, w.dir, "boss", "boss around")
		res := results(evs)
		var started struct{ ID string }
		json.Unmarshal([]byte(res["start_background_agent"].Output), &started)
		var list struct{ Agents []gateway.AgentInfo }
		if err := json.Unmarshal([]byte(res["list_agents"].Output), &list); err != nil || len(list.Agents) != 1 ||
			list.Agents[0].ID != started.ID || list.Agents[0].Parent != "boss" || list.Agents[0].Name != "worker" {
			t.Fatalf("list_agents {parent: me}: %s", res["list_agents"].Output)
		}

		evs, _ = sendTurn(t, w.dir, "boss", started.ID)
		res = results(evs)
		var st struct{ ID, State, Parent string }
		if err := json.Unmarshal([]byte(res["agent_status"].Output), &st); err != nil || st.ID != started.ID || st.Parent != "boss" ||
			st.State != "running" && st.State != "starting" {
			t.Errorf("agent_status of the worker: %s", res["agent_status"].Output)
		}
		if want := fmt.Sprintf(`{"stopped":[%q]}`, started.ID); res["stop_agent"].Output != want {
			t.Errorf("stop_agent of the worker: %s, want %s", res["stop_agent"].Output, want)
		}
		list.Agents = waitAgents(t, w.dir, "the worker stopped", allEndedAgents(1))
		if a := list.Agents[0]; a.State != "stopped" {
			t.Errorf("the worker: %+v", a)
		}
	})
}

// Two agents messaging each other in a cycle stop at agents.max_hops,
// with a guard event in the log of the one refused. Through the daemon:
// agentd run in process for one command refuses the messages of the
// turns that end while it closes, which would cut the cycle short.
func TestAgentGuardHopsCycle(t *testing.T) {
	files := map[string]string{
		"agentd.yaml":      "agents:\n  max_hops: 4\n",
		"agents/ping.yaml": agentOn(agentModel(t, "ping"), "tools:\n  allow: [send_agent_message]\nagents:\n  targets: [pong]\n"),
		"agents/pong.yaml": agentOn(agentModel(t, "pong"), "tools:\n  allow: [send_agent_message]\nagents:\n  targets: [ping]\n"),
	}
	w := &way{dir: dataDir(t, files)}
	w.daemon = serve(t, w.dir)
	{
		sendTurn(t, w.dir, "ping", "start cycle")
		guarded := func(evs []event.Event) bool { return len(agentEvents(evs, "guard")) > 0 }
		waitLog(t, w.dir, "ping/main", "the hop guard", guarded)
		w.restart(t)
		pong := sessionLog(t, w.dir, "pong/main")
		ping := sessionLog(t, w.dir, "ping/main")
		g := agentEvents(ping, "guard")
		if len(g) != 1 || g[0].Guard != "max_hops" || g[0].Limit != 4 || g[0].Value != 5 || g[0].Target != "pong" {
			t.Errorf("ping's guard events: %+v", g)
		}
		if n, m := len(systemMessages(ping, "pong")), len(systemMessages(pong, "ping")); n != 2 || m != 2 {
			t.Errorf("ping got %d messages and pong %d, want 2 each under max_hops 4", n, m)
		}
		if g := agentEvents(pong, "guard"); len(g) != 0 {
			t.Errorf("pong's guard events: %+v", g)
		}
		r := toolResultsOf(ping, "send_agent_message")
		if last := r[len(r)-1]; !last.IsError || !strings.Contains(last.Output, "max_hops") {
			t.Errorf("the refused message's result: %+v", last)
		}
	}
	w.daemon.stop(t)
}

// A chain of asks counts hops: a1 asks a2, which asks a3, whose ask of a4
// would pass max_hops 2.
func TestAgentGuardHopsAskChain(t *testing.T) {
	files := map[string]string{"agentd.yaml": "agents:\n  max_hops: 2\n"}
	for i := 1; i <= 4; i++ {
		script := fmt.Sprintf("match ask round\ncall ask_agent {\"name\": \"a%d\", \"question\": \"ask round\"}\n---\nsay asked: {{tool_result}}\n", i+1)
		files[fmt.Sprintf("agents/a%d.yaml", i)] = agentOn(fake(t, script), fmt.Sprintf("tools:\n  allow: [ask_agent]\nagents:\n  targets: [a%d]\n", i+1))
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		_, end := sendTurn(t, w.dir, "a1", "ask round")
		if end.Status != event.StatusDone {
			t.Fatalf("a1's turn: %+v", end)
		}
		a3 := sessionLog(t, w.dir, "a3/ask:a2:ask:a1:cli:root")
		if g := agentEvents(a3, "guard"); len(g) != 1 || g[0].Guard != "max_hops" || g[0].Target != "a4" {
			t.Errorf("a3's guard events: %+v", g)
		}
		if r := toolResultsOf(a3, "ask_agent"); len(r) != 1 || !r[0].IsError || !strings.Contains(r[0].Output, "max_hops") {
			t.Errorf("a3's ask: %+v", r)
		}
		if r := run(t, w.dir, "log", "a4/ask:a3"); r.code == 0 && strings.TrimSpace(r.stdout) != "" {
			t.Errorf("a4 was asked:\n%s", r.stdout)
		}
	})
}

// A chain of starts counts hops: each background agent starts the next,
// detached, until max_hops 2 refuses the third.
func TestAgentGuardHopsStartChain(t *testing.T) {
	files := map[string]string{
		"agentd.yaml":         "agents:\n  max_hops: 2\n",
		"agents/spawner.yaml": agentOn(agentModel(t, "spawner"), "tools:\n  allow: [start_background_agent]\nagents:\n  detach: true\n"),
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		sendTurn(t, w.dir, "spawner", "spawn")
		list := waitAgents(t, w.dir, "the chain ended", allEndedAgents(2))
		var guarded int
		for _, a := range list {
			if g := agentEvents(sessionLog(t, w.dir, a.Session), "guard"); len(g) > 0 {
				guarded++
				if g[0].Guard != "max_hops" || g[0].Limit != 2 {
					t.Errorf("%s's guard: %+v", a.ID, g)
				}
			}
		}
		if len(list) != 2 || guarded != 1 {
			t.Errorf("%d background agents, %d refused by a guard; want 2 and 1: %+v", len(list), guarded, list)
		}
	})
}

// Sub-agents together cannot spend more than the max_usd_per_turn of the
// turn that started them, nor more than their payer's max_usd_per_day;
// the one a budget stops reports its failure to the parent. Each
// sub-agent would talk for $0.30 at the model's prices. What is counted is
// the turns' cost (a session's title, made under serve, is not a turn's).
func TestAgentGuardBudgets(t *testing.T) {
	addr := agentModel(t, "planner")
	files := map[string]string{
		"agentd.yaml":       "prices:\n  fake: {input: 10, output: 100}\n",
		"agents/turn.yaml":  agentOn(addr, "tools:\n  allow: [start_background_agent]\nbudgets:\n  max_usd_per_turn: 0.2\n"),
		"agents/daily.yaml": agentOn(addr, "tools:\n  allow: [start_background_agent]\nbudgets:\n  max_usd_per_day: 0.3\n"),
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		for _, tt := range []struct {
			agent, budget string
			limit         float64
		}{{"turn", "budgets.max_usd_per_turn", 0.2}, {"daily", "budgets.max_usd_per_day", 0.3}} {
			_, end := sendTurn(t, w.dir, tt.agent, "spend it")
			list := waitAgents(t, w.dir, tt.agent+"'s sub-agents ended", func(l []gateway.AgentInfo) bool {
				return allEndedAgents(4)(byParent(l, tt.agent))
			})
			children := byParent(list, tt.agent)
			var failed []gateway.AgentInfo
			spent := end.CostUSD // the turn that started them
			for _, a := range children {
				spent += turnCosts(sessionLog(t, w.dir, a.Session))
				if a.State == "failed" {
					failed = append(failed, a)
				}
			}
			if len(failed) == 0 {
				t.Errorf("no sub-agent of %s was stopped by the budget: %+v", tt.agent, children)
			}
			parent := waitLog(t, w.dir, tt.agent, "the reports", func(evs []event.Event) bool { return len(systemMessages(evs, "")) == 4 })
			if tt.agent == "daily" {
				spent = turnCosts(parent) // the day's: the turns that read the reports too
				for _, a := range children {
					spent += turnCosts(sessionLog(t, w.dir, a.Session))
				}
			}
			if spent > tt.limit+1e-9 {
				t.Errorf("%s and its sub-agents spent $%.4f of a $%.2f budget", tt.agent, spent, tt.limit)
			}
			for _, f := range failed {
				if r := systemMessages(parent, f.ID); len(r) != 1 || !strings.Contains(r[0].Text, "failed: budget") || !strings.Contains(r[0].Text, tt.budget) {
					t.Errorf("the failure's report: %+v; want it to name %s", r, tt.budget)
				}
			}
		}
	})
}

// turnCosts sums the cost of the turns of a log.
func turnCosts(evs []event.Event) float64 {
	usd := 0.0
	for _, e := range evs {
		var d event.TurnEndData
		if e.Kind == event.TurnEnd && e.Decode(&d) == nil {
			usd += d.CostUSD
		}
	}
	return usd
}

// byParent returns the agents whose parent is parent.
func byParent(list []gateway.AgentInfo, parent string) []gateway.AgentInfo {
	var out []gateway.AgentInfo
	for _, a := range list {
		if a.Parent == parent {
			out = append(out, a)
		}
	}
	return out
}

// agents.max_live caps the live background agents and sub-agents of the
// node: a start past it is refused naming it, and the API answers 429.
// Through the daemon, where the first agent stays live while the second
// is refused.
func TestAgentGuardMaxLive(t *testing.T) {
	dir := dataDir(t, map[string]string{
		"agentd.yaml":         "agents:\n  max_live: 1\n",
		"agents/planner.yaml": agentOn(agentModel(t, "planner"), ""),
	})
	serve(t, dir)
	out := okRun(t, dir, "agents", "start", "planner", "hang: on")
	id, _, _ := strings.Cut(strings.TrimPrefix(out, "started "), ":")
	r := run(t, dir, "agents", "start", "planner", "task: one more")
	if r.code == 0 || !strings.Contains(r.stderr, "max_live") {
		t.Errorf("a second start past max_live 1: exit %d, stderr %q", r.code, r.stderr)
	}
	code, body := daemonDo(t, dir, "POST", "/v1/agents/planner/start", `{"prompt": "task: one more"}`)
	if code != http.StatusTooManyRequests || !strings.Contains(body, "max_live") {
		t.Errorf("POST /v1/agents/planner/start past max_live: %d %s", code, body)
	}
	okRun(t, dir, "agents", "stop", id)
	okRun(t, dir, "agents", "start", "planner", "task: now there is room")
}
