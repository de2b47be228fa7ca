package main

// Every type of agent through the binary, in process and through the
// daemon: user and swarm instances made on first contact, permanent
// agents an agent creates, background agents and sub-agents, the cron
// agent of a job and the built-in system agent #memory-keeper. The
// models are testdata/agents.txtar's.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/gateway"
)

// toolResultsOf returns the results of the tool name in evs.
func toolResultsOf(evs []event.Event, name string) []event.ToolResultData {
	var out []event.ToolResultData
	for _, r := range toolResults(evs) {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

// A sub-agent: start_background_agent makes one under the caller, which
// reports its answer back exactly once, with its cost, before and after a
// restart; sub-agents go three deep and no deeper (max_depth), and a
// ninth live child is refused (max_children 8).
func TestAgentTypeSubagent(t *testing.T) {
	addr := agentModel(t, "planner")
	files := map[string]string{
		"agents/planner.yaml": agentOn(addr, "tools:\n  allow: [start_background_agent]\n"),
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		evs, end := sendTurn(t, w.dir, "planner", "plan the week")
		started := toolResultsOf(evs, "start_background_agent")
		if end.Status != event.StatusDone || len(started) != 1 || started[0].IsError {
			t.Fatalf("plan: end %+v, results %+v", end, started)
		}
		var res struct{ ID, Session, Type, State string }
		if err := json.Unmarshal([]byte(started[0].Output), &res); err != nil || res.Type != "subagent" || res.Session != res.ID+"/main" {
			t.Fatalf("the start's result %q: %+v %v", started[0].Output, res, err)
		}
		list := waitAgents(t, w.dir, "the sub-agent done", allEndedAgents(1))
		if len(list) != 1 || list[0].ID != res.ID || list[0].Type != "subagent" || list[0].Parent != "planner" ||
			list[0].Depth != 1 || list[0].State != "done" || list[0].Name != "part" {
			t.Fatalf("the sub-agent: %+v", list)
		}
		child := sessionLog(t, w.dir, res.Session)
		if got := agentEvents(child, "started"); len(got) != 1 || got[0].Parent != "planner" || got[0].Type != "subagent" {
			t.Errorf("the child's log starts with %+v", got)
		}
		reported := func(evs []event.Event) bool { return len(systemMessages(evs, res.ID)) > 0 }
		parent := waitLog(t, w.dir, "planner", "the report", reported)
		checkReport := func(parent []event.Event) {
			t.Helper()
			reps := systemMessages(parent, res.ID)
			if len(reps) != 1 {
				t.Fatalf("%d reports of %s, want one: %+v", len(reps), res.ID, reps)
			}
			if r := reps[0].Text; !strings.Contains(r, "done") || !strings.Contains(r, "cost: $") || !strings.Contains(r, "answer to task: plan the week") {
				t.Errorf("the report: %q", r)
			}
		}
		checkReport(parent)
		read := waitLog(t, w.dir, "planner", "the report read", func(evs []event.Event) bool { return countEnds(evs) == 2 })
		if !said(read, "report read") {
			t.Errorf("the parent's next turn did not read the report as <system_message origin=%q>: %v", res.ID, kinds(read))
		}
		w.restart(t)
		checkReport(sessionLog(t, w.dir, "planner"))

		// Three deep, no deeper: the third sub-agent's start is refused.
		sendTurn(t, w.dir, "planner", "deeper")
		list = waitAgents(t, w.dir, "the chain ended", allEndedAgents(4))
		var deepest gateway.AgentInfo
		depths := []int{}
		for _, a := range list {
			if a.Name == "deep" {
				depths = append(depths, a.Depth)
				if a.Depth > deepest.Depth {
					deepest = a
				}
			}
		}
		slices.Sort(depths)
		if !slices.Equal(depths, []int{1, 2, 3}) {
			t.Fatalf("sub-agents at depths %v, want 1, 2, 3: %+v", depths, list)
		}
		deep := waitLog(t, w.dir, deepest.Session, "the refusal", func(evs []event.Event) bool { return len(toolResultsOf(evs, "start_background_agent")) > 0 })
		if r := toolResultsOf(deep, "start_background_agent"); !r[0].IsError || !strings.Contains(r[0].Output, "max_depth") {
			t.Errorf("the deepest sub-agent's start: %+v", r)
		}
		if g := agentEvents(deep, "guard"); len(g) != 1 || g[0].Guard != "max_depth" || g[0].Limit != 3 {
			t.Errorf("the deepest sub-agent's guard events: %+v", g)
		}

		// Nine at once: eight start, the ninth is refused.
		evs, _ = sendTurn(t, w.dir, "planner", "fan out")
		var refused []event.ToolResultData
		for _, r := range toolResultsOf(evs, "start_background_agent") {
			if r.IsError {
				refused = append(refused, r)
			}
		}
		if len(refused) != 1 || !strings.Contains(refused[0].Output, "max_children 8") {
			t.Errorf("nine starts at once: refused %+v", refused)
		}
		waitAgents(t, w.dir, "the fan ended", allEndedAgents(12))
	})
}

// Cancelling a parent's turn stops the sub-agent it started; through the
// daemon, where the turn is cancelled while it runs.
func TestAgentTypeSubagentCancelled(t *testing.T) {
	addr := agentModel(t, "planner")
	dir := dataDir(t, map[string]string{
		"agents/planner.yaml": agentOn(addr, "tools:\n  allow: [start_background_agent]\n"),
	})
	serve(t, dir)
	turn := background(t, dir, "send", "--json", "planner", "hold on")
	waitAgents(t, dir, "the sub-agent running", func(l []gateway.AgentInfo) bool {
		return len(l) == 1 && l[0].State == "running"
	})
	okRun(t, dir, "cancel", "planner")
	r := <-turn
	if _, end := jsonEvents(t, r.stdout); r.code != 4 || end == nil || end.Status != event.StatusCancelled {
		t.Errorf("the parent's turn: exit %d, end %+v", r.code, end)
	}
	list := waitAgents(t, dir, "the sub-agent stopped", allEndedAgents(1))
	if list[0].State != "stopped" {
		t.Errorf("the sub-agent after its parent's turn was cancelled: %+v", list[0])
	}
}

// A background agent: a person starts one with agentd agents start (no
// parent; it answers on its own); an agent starts one detached, and it
// reports back to it.
func TestAgentTypeBackground(t *testing.T) {
	addr := agentModel(t, "planner")
	files := map[string]string{
		"agents/planner.yaml": agentOn(addr, "tools:\n  allow: [start_background_agent]\nagents:\n  detach: true\n"),
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		out := okRun(t, w.dir, "agents", "start", "planner", "task: the weather", "--name", "wx")
		id, _, ok := strings.Cut(strings.TrimPrefix(out, "started "), ":")
		if !ok || !strings.HasPrefix(out, "started ") {
			t.Fatalf("agents start: %q", out)
		}
		list := waitAgents(t, w.dir, "the background agent done", allEndedAgents(1))
		if a := list[0]; a.ID != id || a.Type != "background" || a.Parent != "" || a.State != "done" || a.Name != "wx" {
			t.Errorf("the background agent: %+v", a)
		}
		var st struct{ Result string }
		json.Unmarshal([]byte(okRun(t, w.dir, "agents", "show", id, "--json")), &st)
		if !strings.Contains(st.Result, "answer to task: the weather") {
			t.Errorf("its result: %q", st.Result)
		}

		evs, _ := sendTurn(t, w.dir, "planner", "detach it")
		r := toolResultsOf(evs, "start_background_agent")
		var res struct{ ID, Type string }
		if len(r) != 1 || json.Unmarshal([]byte(r[0].Output), &res) != nil || res.Type != "background" {
			t.Fatalf("a detached start: %+v", r)
		}
		parent := waitLog(t, w.dir, "planner", "the report", func(evs []event.Event) bool { return len(systemMessages(evs, res.ID)) > 0 })
		if reps := systemMessages(parent, res.ID); len(reps) != 1 || !strings.Contains(reps[0].Text, "(background") {
			t.Errorf("the detached agent's reports: %+v", reps)
		}
		waitAgents(t, w.dir, "both done", allEndedAgents(2))
		w.restart(t)
		if bg := byType(dynamicAgents(t, w.dir), "background"); len(bg) != 2 {
			t.Errorf("background agents after a restart: %+v", bg)
		}
		if reps := systemMessages(sessionLog(t, w.dir, "planner"), res.ID); len(reps) != 1 {
			t.Errorf("after a restart the detached agent's reports: %+v", reps)
		}
	})
}

// A permanent agent an agent creates: with create_permanent_agent named
// exactly in its allow list it is made at once (in process); under ask,
// only once a person approves it (through the daemon). It is listed with
// its creator as parent, answers under its name, and persists across a
// restart.
func TestAgentTypePermanent(t *testing.T) {
	addr := agentModel(t, "creator")
	files := func(policy string) map[string]string {
		return map[string]string{
			"agentd.yaml":         "default_model:\n  provider: openai\n  name: fake\n  base_url: http://" + addr + "/v1\n",
			"agents/creator.yaml": agentOn(addr, "tools:\n"+policy),
		}
	}
	check := func(t *testing.T, dir string) {
		t.Helper()
		list := dynamicAgents(t, dir, "--type", "permanent")
		if len(list) != 1 || list[0].Name != "helper" && list[0].ID != "helper" || list[0].Parent != "creator" || list[0].Descriptor != "permanent:helper" {
			t.Fatalf("the permanent agent: %+v", list)
		}
		if out := okRun(t, dir, "send", "helper", "task: hello"); strings.TrimSpace(out) != "answer to task: hello" {
			t.Errorf("helper answered %q", out)
		}
	}
	t.Run("in process", func(t *testing.T) {
		dir := dataDir(t, files("  allow: [create_permanent_agent, list_agents]\n"))
		evs, end := sendTurn(t, dir, "creator", "make helper")
		if r := toolResultsOf(evs, "create_permanent_agent"); end.Status != event.StatusDone || len(r) != 1 || r[0].IsError || !strings.Contains(r[0].Output, `"created":true`) {
			t.Fatalf("make helper: %+v %+v", end, r)
		}
		check(t, dir)
	})
	t.Run("daemon", func(t *testing.T) {
		dir := dataDir(t, files("  allow: [list_agents]\n  ask: [create_permanent_agent]\n"))
		d := serve(t, dir)
		turn := background(t, dir, "send", "--json", "--session", "s1", "creator", "make helper")
		req := waitApproval(t, dir, "creator/s1")
		if list := dynamicAgents(t, dir); len(list) != 0 {
			t.Fatalf("agents before the approval: %+v", list)
		}
		okRun(t, dir, "approve", req.ID)
		evs, _ := turnResult(t, turn)
		if r := toolResultsOf(evs, "create_permanent_agent"); len(r) != 1 || r[0].IsError {
			t.Fatalf("make helper approved: %+v", r)
		}
		check(t, dir)
		d.stop(t)
		d = serve(t, dir)
		check(t, dir)
		d.stop(t)
	})
}

// A user agent: a person's first contact through a connector makes their
// instance of the template, their second reaches the same one, another
// person gets their own; all are addressed by their descriptors and come
// back after a restart. Contact is an API route: through the daemon.
func TestAgentTypeUser(t *testing.T) {
	addr := agentModel(t, "desk")
	dir := dataDir(t, map[string]string{"agents/concierge.yaml": agentOn(addr, "type: user\n")})
	d := serve(t, dir)
	first := contact(t, dir, "concierge", "4242", "hello")
	again := contact(t, dir, "concierge", "4242", "again")
	other := contact(t, dir, "concierge", "7", "hi")
	if first.ID != again.ID || first.ID == other.ID {
		t.Fatalf("contacts: first %s, again %s, another person %s", first.ID, again.ID, other.ID)
	}
	answered := func(n int) func([]event.Event) bool {
		return func(evs []event.Event) bool { return slices.Contains(kinds(evs), event.TurnEnd) && countEnds(evs) >= n }
	}
	log := waitLog(t, dir, first.ID+"/main", "two answers", answered(2))
	for _, want := range []string{"desk got: hello", "desk got: again"} {
		if !said(log, want) {
			t.Errorf("the first person's log lacks %q", want)
		}
	}
	check := func() {
		t.Helper()
		list := dynamicAgents(t, dir, "--type", "user")
		descs := map[string]string{}
		for _, a := range list {
			descs[a.ID] = a.Descriptor
		}
		want := map[string]string{first.ID: "user:telegram:dm:4242", other.ID: "user:telegram:dm:7"}
		if fmt.Sprint(descs) != fmt.Sprint(want) {
			t.Errorf("user agents %v, want %v", descs, want)
		}
	}
	check()
	d.stop(t)
	d = serve(t, dir)
	check()
	if after := contact(t, dir, "concierge", "4242", "back"); after.ID != first.ID {
		t.Errorf("after a restart the person reached %s, not %s", after.ID, first.ID)
	}
	waitLog(t, dir, first.ID+"/main", "the third answer", answered(3))
	d.stop(t)
}

// A swarm: two people of one template get two instances, and what one's
// agent remembers the other's does not recall, before and after a
// restart. Through the daemon (contact is an API route).
func TestAgentTypeSwarm(t *testing.T) {
	addr := agentModel(t, "desk")
	dir := dataDir(t, map[string]string{"agents/support.yaml": agentOn(addr, "type: swarm\ntools:\n  builtin: [remember, recall]\n")})
	ends := func(n int) func([]event.Event) bool {
		return func(evs []event.Event) bool { return countEnds(evs) >= n }
	}
	d := serve(t, dir)
	alice := contact(t, dir, "support", "alice", "remember parcel 123 goes to alice")
	waitLog(t, dir, alice.ID+"/main", "stored", ends(1))
	bob := contact(t, dir, "support", "bob", "recall")
	if bob.ID == alice.ID {
		t.Fatalf("two people share the swarm agent %s", bob.ID)
	}
	bobs := waitLog(t, dir, bob.ID+"/main", "recalled", ends(1))
	d.stop(t)
	d = serve(t, dir)
	if again := contact(t, dir, "support", "alice", "recall"); again.ID != alice.ID {
		t.Fatalf("after a restart alice reached %s, not her agent %s", again.ID, alice.ID)
	}
	alices := waitLog(t, dir, alice.ID+"/main", "recalled", ends(2))
	recalled := func(evs []event.Event) string {
		r := toolResultsOf(evs, "recall")
		if len(r) == 0 {
			t.Fatalf("no recall in %v", kinds(evs))
		}
		return r[len(r)-1].Output
	}
	if got := recalled(bobs); strings.Contains(got, "alice") {
		t.Errorf("bob's agent recalled alice's parcel: %q", got)
	}
	if got := recalled(alices); !strings.Contains(got, "alice") {
		t.Errorf("alice's agent did not recall her parcel: %q", got)
	}
	if list := dynamicAgents(t, dir, "--type", "swarm"); len(list) != 2 {
		t.Errorf("swarm agents: %+v", list)
	}
	d.stop(t)
}

// A cron agent: the agent a job runs on is listed as cron, by its job.
func TestAgentTypeCron(t *testing.T) {
	addr := agentModel(t, "desk")
	files := map[string]string{
		"agents/reporter.yaml": agentOn(addr, "type: cron\n"),
		"extensions/job/morning.yaml": "type: job\nname: morning\nspec:\n  agent: reporter\n  prompt: \"the morning report\"\n" +
			"  triggers: [{cron: \"0 7 * * *\"}]\n",
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		var list []gateway.AgentInfo
		decodeOut(t, okRun(t, w.dir, "agents", "--type", "cron", "--json"), &list)
		if !slices.ContainsFunc(list, func(a gateway.AgentInfo) bool { return a.Descriptor == "cron:morning" }) {
			t.Errorf("agents --type cron: %+v", list)
		}
	})
}

// The system agent #memory-keeper, once enabled, is reached by an agent's
// send_agent_message and by a chat line's #memory-keeper prefix.
func TestAgentTypeSystem(t *testing.T) {
	keeper, notifier := agentModel(t, "keeper"), agentModel(t, "notifier")
	files := map[string]string{
		"agentd.yaml": "default_model:\n  provider: openai\n  name: fake\n  base_url: http://" + keeper + "/v1\n",
		"agents/notifier.yaml": agentOn(notifier, "tools:\n  allow: [send_agent_message]\n"+
			"agents:\n  targets: [\"#memory-keeper\"]\n"),
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		okRun(t, w.dir, "ext", "enable", "agent/memory-keeper")
		w.restart(t)
		evs, _ := sendTurn(t, w.dir, "notifier", "note this")
		r := toolResultsOf(evs, "send_agent_message")
		if len(r) != 1 || r[0].IsError || !strings.Contains(r[0].Output, `"delivered_to":"memory-keeper"`) {
			t.Fatalf("send to #memory-keeper: %+v", r)
		}
		log := waitLog(t, w.dir, "memory-keeper/main", "the answer", func(evs []event.Event) bool { return countEnds(evs) >= 1 })
		if m := systemMessages(log, "notifier"); len(m) != 1 || m[0].Text != "Alice prefers email" {
			t.Errorf("the keeper's messages: %+v", m)
		}
		if out := okRun(t, w.dir, "send", "notifier", "#memory-keeper Bob prefers phone"); strings.TrimSpace(out) != "kept: Bob prefers phone" {
			t.Errorf("#memory-keeper by the chat prefix: %q", out)
		}
	})
}
