package agentsys

import (
	"context"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/store"

	"github.com/google/go-cmp/cmp"
)

// spend records usage of an agent's main session.
func (h *harness) spend(agentID string, usd float64) {
	h.t.Helper()
	sess, _, err := h.k.Store.Session(context.Background(), agentID, "main")
	if err != nil {
		h.t.Fatal(err)
	}
	u := store.Usage{Session: sess.ID, Agent: agentID, Model: "echo", InputTokens: 10, OutputTokens: 5, CostUSD: usd, Time: time.Now()}
	if err := h.k.Store.Commit(context.Background(), &store.Batch{Session: sess.ID, Usage: []store.Usage{u}}); err != nil {
		h.t.Fatal(err)
	}
}

type jobs map[string]string

func (j jobs) JobAgents() map[string]string { return j }

func TestListTreeStatus(t *testing.T) {
	h := newHarness(t, nil)
	h.holdText("slow")
	keeper := typedAgent("keeper", agent.TypeSystem, "memory-keeper")
	h.setDef(keeper)
	h.sys.o.Jobs = jobs{"nightly": "assistant", "hourly": "assistant"}
	at := time.Now()
	run := store.JobRun{Job: "hourly", Run: store.RunID(at, ""), ScheduledAt: at, Trigger: store.TriggerManual, Session: "assistant/job",
		Status: store.RunRunning}
	if _, _, err := h.k.Store.StartRun(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	top := h.startChild(StartRequest{Prompt: "slow top", Template: "worker", CallID: "top"})
	kid, err := h.sys.Start(context.Background(), StartRequest{Caller: top.ID, CallerSession: top.ID + "/main", Turn: top.Turn,
		CallID: "kid", Prompt: "slow kid", Template: "worker", Name: "kid"})
	if err != nil {
		t.Fatal(err)
	}
	h.spend(top.ID, 0.25)
	h.spend(kid.ID, 0.5)

	list, next, err := h.sys.List(context.Background(), store.AgentFilter{})
	if err != nil || next != "" {
		t.Fatal(next, err)
	}
	type row struct {
		ID, Type, Parent, State, Descriptor string
		Cost                                float64
		Live                                int
	}
	var got []row
	for _, i := range list {
		got = append(got, row{i.ID, i.Type, i.Parent, i.State, i.Descriptor, i.CostUSD, i.LiveChildren})
	}
	want := []row{
		{kid.ID, store.InstanceSubagent, top.ID, store.AgentRunning, kid.Descriptor, 0.5, 0},
		{top.ID, store.InstanceSubagent, "assistant", store.AgentRunning, top.Descriptor, 0.25, 1},
		{"assistant", agent.TypeCron, "", store.AgentRunning, "cron:hourly", 0, 0},
		{"assistant", agent.TypeCron, "", stateReady, "cron:nightly", 0, 0},
		{"keeper", agent.TypeSystem, "", stateReady, "system:memory-keeper", 0, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	if only, _, _ := h.sys.List(context.Background(), store.AgentFilter{Parent: top.ID}); len(only) != 1 || only[0].ID != kid.ID {
		t.Errorf("parent filter: %+v", only)
	}

	tree, err := h.sys.Tree(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 1 || tree[0].ID != "assistant" || len(tree[0].Children) != 1 {
		t.Fatalf("tree %+v", tree)
	}
	n := tree[0].Children[0]
	if n.ID != top.ID || n.CostTreeUSD != 0.75 || len(n.Children) != 1 || n.Children[0].ID != kid.ID || n.Children[0].CostTreeUSD != 0.5 {
		t.Errorf("top node %+v", n)
	}
	if tree[0].CostTreeUSD != 0.75 {
		t.Errorf("root's cost %v", tree[0].CostTreeUSD)
	}

	st, err := h.sys.Status(context.Background(), top.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.CostUSD != 0.25 || st.CostTreeUSD != 0.75 || len(st.Children) != 1 || st.LiveChildren != 1 || st.SessionState == "" {
		t.Errorf("status %+v", st)
	}
	if st, err := h.sys.Status(context.Background(), "assistant"); err != nil || st.LiveChildren != 1 || st.State != stateReady {
		t.Errorf("a definition's status %+v, %v", st, err)
	}
}
