package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/store"
	"agentd/internal/store/postgres/pgtest"
)

// The kill tests of many agents: a parent's turn starts agentsPerParent
// sub-agents (start_background_agent), each of which starts a sub-agent
// of its own and calls a non-idempotent tool (an HTTP POST to a counter
// outside agentd, through a declarative HTTP action), as does that
// grandchild; agentd serve is SIGKILLed at random moments of it and
// started again. Then every child has ended,
// done, each report is in its parent's log exactly once, no parent has a
// child twice (a start re-run after a kill finds the child it made), and
// no non-idempotent call ran twice.

// agentsPerParent is how many sub-agents a parent's turn starts: the
// default limit of live children.
const agentsPerParent = 8

// agentsKillFiles are the data directory's files: the parent (boss), the
// children's template (worker) and the grandchildren's (grand) on the
// fake model at addr, and count, the non-idempotent tool: a declarative
// HTTP action that posts its task to the counter at cnt (host:port).
func agentsKillFiles(addr, cnt, extraConfig string) map[string]string {
	return map[string]string{
		"agentd.yaml": extraConfig + "actions:\n  allow_networks: [\"127.0.0.1/32\"]\n",
		"extensions/action/count.yaml": "type: action\nname: count\nspec:\n  description: Counts a task done, outside agentd.\n" +
			"  method: POST\n  url: http://" + cnt + "/hit\n  body: \"{{task}}\"\n" +
			"  input: {type: object, properties: {task: {type: string}}, required: [task]}\n  allow_hosts: [\"" + cnt + "\"]\n",
		"agents/boss.yaml": openaiAgent(addr, "tools:\n  allow: [start_background_agent]\nmemory:\n  recall: -1\n"+
			"agents:\n  templates: [worker]\n"),
		"agents/worker.yaml": openaiAgent(addr, "type: subagent\ntools:\n  allow: [start_background_agent, calculator, count]\n"+
			"memory:\n  recall: -1\nagents:\n  templates: [grand]\n"),
		"agents/grand.yaml": openaiAgent(addr, "type: subagent\ntools:\n  allow: [count]\nmemory:\n  recall: -1\n"),
	}
}

// agentsKillScript is the fake model's script. A report (a system
// message) is acknowledged; a parent's input "job pN" starts its
// children "work job pN/0" … in one step; a child starts its grandchild
// "grand work job pN/i" beside an idempotent tool, then counts its task,
// then answers; a grandchild counts its task, then answers. Each step
// takes a little while so that kills land in every phase.
func agentsKillScript() string {
	var b strings.Builder
	b.WriteString("match ^<system_message\nsay noted\n\nmatch ^job p\\d+$\ndelay 30ms\n")
	for i := range agentsPerParent {
		fmt.Fprintf(&b, "call start_background_agent {\"prompt\": \"work {{last_user}}/%d\", \"template\": \"worker\"}\n", i)
	}
	const hit = "call count {\"task\": \"{{last_user}}\"}\n"
	b.WriteString("---\ndelay 30ms\nsay started\n\n")
	b.WriteString("match ^work job p\\d+/\\d+$\ndelay 30ms\n" +
		"call start_background_agent {\"prompt\": \"grand {{last_user}}\", \"template\": \"grand\"}\n" +
		"call calculator {\"expression\": \"6*7\"}\n---\ndelay 30ms\n" + hit + "---\ndelay 30ms\nsay finished {{last_user}}\n\n")
	b.WriteString("match ^grand work job p\\d+/\\d+$\ndelay 30ms\n" + hit + "---\ndelay 30ms\nsay finished {{last_user}}\n")
	return b.String()
}

// parentInput is the i-th parent's input: its session and text.
func parentInput(i int) *input {
	return &input{session: fmt.Sprintf("boss/p%d", i), text: fmt.Sprintf("job p%d", i)}
}

// TestAgentsKillRestart kills agentd serve at random moments while
// parents' sub-agents and theirs run (see above), a new parent each
// round, and checks what must hold once the last run has let them all
// end. AGENTD_KILLS sets the kills (divided by 2; default 20, 3 with
// -short).
func TestAgentsKillRestart(t *testing.T) {
	kills := killCount(t, 20, 2, 3)
	cnt := newCounter(t)
	addr := fake(t, agentsKillScript())
	dir := dataDir(t, agentsKillFiles(addr, cnt.ln.Addr().String(), ""))
	sock := filepath.Join(dir, "agentd.sock")

	var inputs []*input
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 31))
	for k := range kills {
		d := serve(t, dir)
		c := gateway.NewUnixClient(sock)
		inputs = append(inputs, parentInput(k))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { submitAll(ctx, c, inputs); close(done) }()
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		d.kill()
		cancel()
		<-done
	}
	t.Logf("%d kills, %d parents", kills, len(inputs))

	// A last, clean run: everything accepted (and everything not yet,
	// sent again with its key) must end.
	d := serve(t, dir)
	submitAll(context.Background(), gateway.NewUnixClient(sock), inputs)
	waitAgentsEnded(t, []string{dir}, inputs, func() string { return d.out.String() })
	d.stop(t)

	st := openDataStore(t, dir)
	integrity(t, st)
	checkAgentKills(t, st, inputs, cnt)
}

// TestAgentsClusterKill is TestAgentsKillRestart with three agentd serve
// on one PostgreSQL database: parents are sent to random nodes, random
// nodes are SIGKILLed and started again, and a child may run, end and
// report on another node than its parent. AGENTD_NODE_KILLS sets the
// kills (default 20, 3 with -short), AGENTD_NODE_LEASE the lease TTL
// (default agentd's, 10s).
func TestAgentsClusterKill(t *testing.T) {
	db := pgtest.NewDB(t)
	kills := nodeKills(t)
	cnt := newCounter(t)
	addr := fake(t, agentsKillScript())
	lease := cmp.Or(os.Getenv("AGENTD_NODE_LEASE"), "10s")
	files := agentsKillFiles(addr, cnt.ln.Addr().String(), "store:\n  lease_ttl: "+lease+"\n")
	nodes := make([]*clusterNode, 3)
	dirs := make([]string, len(nodes))
	for i := range nodes {
		nodes[i] = &clusterNode{dir: dataDir(t, files)}
		dirs[i] = nodes[i].dir
		pgDirs.Store(nodes[i].dir, db)
		nodes[i].start(t)
	}
	var inputs []*input
	past := make([]string, len(nodes)) // the logs of each node's killed runs
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 37))
	for k := range kills {
		inputs = append(inputs, parentInput(k))
		// Each input not yet accepted goes to a random node; the nodes
		// are all up meanwhile.
		for _, in := range inputs {
			if !in.accepted {
				submitAll(context.Background(), nodes[rng.IntN(len(nodes))].c, []*input{in})
			}
		}
		time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
		v := rng.IntN(len(nodes))
		nodes[v].d.kill()
		past[v] += nodes[v].d.out.String()
		nodes[v].start(t)
	}
	for range 5 {
		submitAll(context.Background(), nodes[0].c, inputs)
	}
	t.Logf("%d kills, %d parents", kills, len(inputs))
	waitAgentsEnded(t, dirs, inputs, func() string {
		var b strings.Builder
		for i, n := range nodes {
			fmt.Fprintf(&b, "node %d:\n%s\n", i, n.d.out.String())
		}
		return b.String()
	})
	for _, n := range nodes {
		n.d.stop(t)
	}
	checkAgentKills(t, openDataStore(t, nodes[0].dir), inputs, cnt)
	if t.Failed() {
		for i, n := range nodes {
			t.Logf("node %d's warnings:\n%s", i, warnings(past[i]+n.d.out.String()))
		}
	}
}

// submitAll sends every input not yet accepted, with its idempotency
// key, until one fails (the daemon went away).
func submitAll(ctx context.Context, c *gateway.Client, inputs []*input) {
	for _, in := range inputs {
		if in.accepted {
			continue
		}
		if _, err := c.Submit(ctx, in.session, gateway.MessageRequest{Text: in.text, IdempotencyKey: in.text}); err != nil {
			return
		}
		in.accepted = true
	}
}

// listedAgent is what the kill tests read of GET /v1/agents.
type listedAgent struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	State string `json:"state"`
}

// waitAgentsEnded waits (at most 180 s) until, through the API of the
// daemon on dirs[0], every parent's children and grandchildren exist and
// have ended, and every parent's log holds its children's reports. Logs
// of the daemons (logs) are printed if they do not.
func waitAgentsEnded(t *testing.T, dirs []string, inputs []*input, logs func() string) {
	t.Helper()
	for _, in := range inputs {
		if !in.accepted {
			t.Fatalf("input %s never accepted", in.text)
		}
	}
	hc := unixHTTP(dirs[0])
	c := gateway.NewUnixClient(filepath.Join(dirs[0], "agentd.sock"))
	want := 2 * agentsPerParent * len(inputs)
	deadline := time.Now().Add(180 * time.Second)
	var why string
	recorded := map[string]bool{}
	for time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		rows, err := dynamicAgentsOver(hc)
		if err != nil {
			why = err.Error()
			continue
		}
		ended := 0
		for _, r := range rows {
			if store.AgentEnded(r.State) {
				ended++
			}
		}
		// More agents than started is for the checks to name.
		if len(rows) < want || ended != len(rows) {
			why = fmt.Sprintf("%d agents of %d, %d ended", len(rows), want, ended)
			continue
		}
		reported := 0
		for _, in := range inputs {
			page, err := c.Events(context.Background(), in.session, 0, 10000, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page.Events {
				if e.Kind == event.SystemMessage {
					reported++
				}
			}
		}
		if reported < agentsPerParent*len(inputs) {
			why = fmt.Sprintf("%d reports of %d in the parents' logs", reported, agentsPerParent*len(inputs))
			continue
		}
		// Each one's report recorded: a task waits for its sub-agents'
		// reports before it ends and reports itself.
		for _, r := range rows {
			if !recorded[r.ID] {
				ok, err := reportRecorded(hc, r.ID)
				if err != nil {
					t.Fatal(err)
				}
				recorded[r.ID] = ok
			}
		}
		n := 0
		for _, ok := range recorded {
			if ok {
				n++
			}
		}
		if n == len(rows) {
			return
		}
		why = fmt.Sprintf("%d reports of %d recorded", n, len(rows))
	}
	t.Fatalf("the agents did not all end within 180 s: %s\n%s", why, logs())
}

// dynamicAgentsOver lists the daemon's dynamic agents through its API.
func dynamicAgentsOver(hc *http.Client) ([]listedAgent, error) {
	resp, err := hc.Get("http://agentd/v1/agents?dynamic=true&all=true&limit=5000")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /v1/agents: %s", resp.Status)
	}
	var rows []listedAgent
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(rows, func(r listedAgent) bool { return !store.IsInstanceID(r.ID) }), nil
}

// reportRecorded reads through the API whether an ended agent's report
// is recorded (made, or given up).
func reportRecorded(hc *http.Client, id string) (bool, error) {
	resp, err := hc.Get("http://agentd/v1/agents/" + id)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var d struct {
		Instance struct {
			ReportedAt time.Time `json:"reported_at"`
		} `json:"instance"`
	}
	if resp.StatusCode != 200 {
		return false, fmt.Errorf("GET /v1/agents/%s: %s", id, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		return false, err
	}
	return !d.Instance.ReportedAt.IsZero(), nil
}

// checkAgentKills checks the store once the daemons are stopped:
//   - each accepted parent has one input event, and agentsPerParent
//     children reporting to its session, each with one grandchild;
//   - every child and grandchild ended done, its report recorded: in its
//     parent's session exactly once (system_message events whose origin
//     is its id), never given up: a parent does not end before its
//     children have reported, and none is stopped or fails here;
//   - each one's non-idempotent call (the counter, keyed by its task) ran
//     at most once, and never without a result unless recorded as
//     interrupted;
//   - every session's sequence numbers are gapless.
func checkAgentKills(t *testing.T, st app.Store, inputs []*input, cnt *counter) {
	t.Helper()
	ctx := context.Background()
	as, ok := st.(store.AgentStore)
	if !ok {
		t.Fatalf("%T keeps no dynamic agents", st)
	}
	var all []store.Instance
	for before := ""; ; {
		rows, next, err := as.Instances(ctx, store.AgentFilter{Limit: store.MaxInstanceLimit, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, rows...)
		if before = next; next == "" {
			break
		}
	}
	logs := map[string][]event.Event{} // by session address
	logOf := func(addr string) []event.Event {
		if evs, ok := logs[addr]; ok {
			return evs
		}
		agentID, key, _ := strings.Cut(addr, "/")
		sess, err := st.SessionByAddress(ctx, agentID, key)
		if err != nil {
			t.Fatalf("session %s: %v", addr, err)
		}
		evs, err := st.Events(ctx, sess.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has sequence number %d: a gap", addr, i+1, e.Seq)
			}
		}
		logs[addr] = evs
		return evs
	}

	children := map[string][]store.Instance{} // by the session they report to
	for _, in := range all {
		children[in.ReportTo] = append(children[in.ReportTo], in)
	}
	for _, p := range inputs {
		inputsSeen := 0
		for _, e := range logOf(p.session) {
			var d event.InputData
			if e.Kind == event.Input && e.Decode(&d) == nil && d.Text == p.text {
				inputsSeen++
			}
		}
		if inputsSeen != 1 {
			t.Errorf("%s: %d input events, want 1", p.text, inputsSeen)
		}
		if n := len(children[p.session]); n != agentsPerParent {
			t.Errorf("%s: %d children, want %d:%s", p.session, n, agentsPerParent, lineage(children[p.session]))
		}
		for _, ch := range children[p.session] {
			if n := len(children[ch.Agent+"/main"]); n != 1 {
				t.Errorf("%s (%s): %d children, want 1:%s\n its log:%s", ch.ID, ch.Task, n, lineage(children[ch.Agent+"/main"]),
					logText(logOf(ch.Agent+"/main")))
			}
		}
	}

	hits := countedTasks(t, cnt)
	interruptedN := 0
	for _, in := range all {
		what := fmt.Sprintf("%s %s (%q, reports to %s)", in.Type, in.ID, in.Task, in.ReportTo)
		if in.State != store.AgentDone {
			t.Errorf("%s ended %s: %s", what, in.State, in.Result)
		}
		if in.ReportedAt.IsZero() {
			t.Errorf("%s: its report is not recorded", what)
		}
		var reported []event.Event
		for _, e := range logOf(in.ReportTo) {
			var d event.InputData
			if e.Kind == event.SystemMessage && e.Decode(&d) == nil && d.Origin == in.ID {
				reported = append(reported, e)
			}
		}
		reports := len(reported)
		switch {
		case in.ReportError != "":
			t.Errorf("%s: report given up (%s), in its parent's log %d times:\n%s", what, in.ReportError, reports, reportTrace(st, in))
		case reports != 1:
			t.Errorf("%s: report in its parent's log %d times, want 1:%s\n%s", what, reports, logText(reported), reportTrace(st, in))
		}
		interrupted := false
		for _, e := range logOf(in.Agent + "/main") {
			var d event.ToolResultData
			if e.Kind == event.ToolResult && e.Decode(&d) == nil && d.Name == "count" && d.Interrupted {
				interrupted = true
			}
		}
		switch n := hits[in.Task]; {
		case n > 1:
			t.Errorf("%s: the non-idempotent tool ran %d times", what, n)
		case n == 0 && !interrupted:
			t.Errorf("%s: the non-idempotent tool never ran and was not recorded as interrupted", what)
		case interrupted:
			interruptedN++
		}
	}
	t.Logf("%d agents checked; %d non-idempotent calls recorded as interrupted", len(all), interruptedN)
}

// countedTasks is what the counter counted, by task: each request's body
// is the task as a JSON string.
func countedTasks(t *testing.T, cnt *counter) map[string]int {
	t.Helper()
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	hits := map[string]int{}
	for body, n := range cnt.hits {
		var task string
		if err := json.Unmarshal([]byte(body), &task); err != nil {
			t.Errorf("the counter got %q: not a task", body)
		}
		hits[task] += n
	}
	return hits
}

// lineage lists instances with what made them, for a failure.
func lineage(ins []store.Instance) string {
	var b strings.Builder
	for _, in := range ins {
		fmt.Fprintf(&b, "\n  %s %q: descriptor %s, turn %d, call %s, created %s, %s", in.ID, in.Task, in.Descriptor,
			in.OriginTurn, in.OriginCall, in.CreatedAt.Format(time.StampMicro), in.State)
	}
	return b.String()
}

// reportTrace says where an instance's report is, for a failure: the
// session it reports to (its state) and that session's pending inbox
// items, and the instance's end and report times.
func reportTrace(st app.Store, in store.Instance) string {
	ctx := context.Background()
	agentID, key, _ := strings.Cut(in.ReportTo, "/")
	sess, err := st.SessionByAddress(ctx, agentID, key)
	if err != nil {
		return fmt.Sprintf("its parent's session: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "it ended %s, its report recorded %s; its parent's session is %s (last event %d)",
		in.EndedAt.Format(time.StampMicro), in.ReportedAt.Format(time.StampMicro), sess.State, sess.LastSeq)
	pending, err := st.Pending(ctx, sess.ID)
	if err != nil {
		return b.String() + fmt.Sprintf("; pending: %v", err)
	}
	for _, it := range pending {
		fmt.Fprintf(&b, "; pending item %d (%s, key %q, origin %s, %s)", it.ID, it.Kind, it.IdempotencyKey, it.Origin,
			it.CreatedAt.Format(time.StampMicro))
	}
	evs, err := st.Events(ctx, sess.ID, 0, 0)
	if err != nil {
		return b.String() + fmt.Sprintf("; its log: %v", err)
	}
	// A child's whole log; a parent's from its last turn's input on.
	from := 0
	for i, e := range evs {
		if len(evs) > 40 && (e.Kind == event.Input || e.Kind == event.SystemMessage) {
			from = i
		}
	}
	return b.String() + logText(evs[from:])
}

// logText is events, one a line, for a failure.
func logText(evs []event.Event) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "\n  %d %s t%d %s %s", e.Seq, e.Time.Format(time.StampMicro), e.Turn, e.Kind, e.Data)
	}
	return b.String()
}

// warnings are the lines of a daemon's log at level WARN or ERROR.
func warnings(log string) string {
	var b strings.Builder
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			b.WriteString(line)
		}
	}
	return b.String()
}
