package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agentsys"
	"agentd/internal/event"
	"agentd/internal/gateway"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// golden compares got with testdata/agents/name (-update rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenIn(t, "agents", name, got)
}

// goldenIn compares got with testdata/dir/name (-update rewrites it).
func goldenIn(t *testing.T, dir, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", dir, name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got); go test -update rewrites it:\n%s", p, diff)
	}
}

var at = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

// testAgents is a list as GET /v1/agents gives it: two definitions (one
// invalid) and three dynamic agents, one named with an escape sequence
// that would retitle the terminal.
func testAgents() []gateway.AgentInfo {
	return []gateway.AgentInfo{
		{ID: "assistant", Name: "Assistant", Type: "user", Provider: "openai", Model: "gpt-4o", State: gateway.AgentReady},
		{ID: "broken", File: "agents/broken.yaml", State: gateway.AgentInvalid,
			Problems: []gateway.Problem{{File: "agents/broken.yaml", Line: 3, Field: "model.provider", Message: "unknown provider"}}},
		{ID: "c2kq3v0000000000000000ab", Name: "second\x1b]0;pwned\x07", Type: "subagent", Parent: "p7x0000000000000000000ab",
			State: "running", Model: "gpt-4o", Dynamic: true, CostUSD: 0.125, CreatedAt: at},
		{ID: "c1kq3v0000000000000000ab", Name: "first", Type: "subagent", Parent: "p7x0000000000000000000ab",
			State: "done", Model: "gpt-4o", Dynamic: true, CostUSD: 0.25, CreatedAt: at},
		{ID: "p7x0000000000000000000ab", Name: "research", Type: "background", State: "running", Model: "gpt-4o",
			Dynamic: true, Children: 1, CostUSD: 0.5, CreatedAt: at},
	}
}

func TestWriteAgentsGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		list []gateway.AgentInfo
	}{
		{"list.golden", testAgents()},
		{"definitions.golden", testAgents()[:2]},
		{"dynamic.golden", testAgents()[2:]},
		{"none.golden", nil},
	} {
		var b bytes.Buffer
		if err := writeAgents(&b, tt.list); err != nil {
			t.Fatal(err)
		}
		golden(t, tt.name, b.Bytes())
	}
}

func TestWriteAgentTreeGolden(t *testing.T) {
	a := testAgents()
	node := func(i int, tree float64, children ...gateway.AgentNode) gateway.AgentNode {
		n := gateway.AgentNode{AgentInfo: a[i], Children: children}
		n.CostTreeUSD = tree
		return n
	}
	grand := gateway.AgentNode{AgentInfo: gateway.AgentInfo{ID: "g0000000000000000000000ab", Type: "subagent", State: "failed",
		CostUSD: 0.0625, Dynamic: true}, Children: nil}
	grand.CostTreeUSD = 0.0625
	forest := []gateway.AgentNode{
		node(4, 0.9375, node(3, 0.3125, grand), node(2, 0.125)),
		{AgentInfo: gateway.AgentInfo{ID: "u1000000000000000000000ab", Name: "ann on telegram", Type: "user", State: "idle", Dynamic: true}},
	}
	var b bytes.Buffer
	if err := writeAgentTree(&b, forest); err != nil {
		t.Fatal(err)
	}
	golden(t, "tree.golden", b.Bytes())
	b.Reset()
	if err := writeAgentTree(&b, nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "tree-empty.golden", b.Bytes())
}

func TestWriteAgentStatusGolden(t *testing.T) {
	a := testAgents()
	st := agentsys.Status{
		Info: agentsys.Info{ID: a[4].ID, Name: "research", Type: "background", Template: "researcher", Root: a[4].ID, State: "done",
			Session: a[4].ID + "/main", Model: "gpt-4o", Dynamic: true, CostUSD: 0.5, CreatedAt: at, EndedAt: at.Add(90 * time.Second)},
		SessionState: "idle",
		LastEnd:      &event.TurnEndData{Status: "done"},
		Result:       "The three offers:\n1. cheapest\x1b[2J\n2. fastest",
		ReportedAt:   at.Add(91 * time.Second),
		Children:     []agentsys.Info{{ID: a[2].ID, Name: "second", Type: "subagent", State: "running", CostUSD: 0.125}},
		CostTreeUSD:  0.875,
	}
	var b bytes.Buffer
	if err := writeAgentStatus(&b, st); err != nil {
		t.Fatal(err)
	}
	golden(t, "show.golden", b.Bytes())
}
