package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentd/internal/tool"
)

// A server a skill bundles is gated by the skill: its tools carry the
// skills whose loading sessions see them, and so do its resources. Another
// skill bundling the same server widens the gate; a definition that is not
// a skill's lifts it. Adding it again changes and writes nothing.
func TestSkillServers(t *testing.T) {
	net := newMemNet()
	net.add("tea", newTestServer(false))
	reg := newRecorder()
	state := filepath.Join(t.TempDir(), "state.json")
	m := newTestManager(t, &Options{Tools: reg, dial: net.dial, StatePath: state})
	ctx := context.Background()
	add := func(agentID, skill string) Status {
		t.Helper()
		d := memDef("tea")
		d.Agents, d.Source, d.Skill = []string{agentID}, "skill:"+skill, skill
		if skill == "" {
			d.Source = "runtime"
		}
		st, err := m.Add(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	gate := func() []string {
		tl, ok := reg.Get("tea__echo")
		if !ok {
			t.Fatal("tea__echo is not registered")
		}
		return tl.Spec().Skills
	}

	if st := add("alice", "brew"); !slices.Equal(st.Skills, []string{"brew"}) || !slices.Equal(gate(), []string{"brew"}) {
		t.Fatalf("status %+v, tool gate %q", st, gate())
	}
	// The resource tools reach it only for a session that loaded brew.
	listing := func(skills ...string) string {
		for _, b := range m.Builtins() {
			if b.Spec().Name == "mcp_list_resources" {
				res, err := b.Call(ctx, &tool.Call{Name: "mcp_list_resources", Args: json.RawMessage(`{}`), Agent: "alice", Skills: skills})
				if err != nil {
					t.Fatal(err)
				}
				return res.Output
			}
		}
		t.Fatal("no mcp_list_resources")
		return ""
	}
	if out := listing(); strings.Contains(out, "test://hello") {
		t.Errorf("resources listed for a session that loaded nothing: %s", out)
	}
	if out := listing("brew"); !strings.Contains(out, "test://hello") {
		t.Errorf("resources not listed for a session that loaded brew: %s", out)
	}

	// Loading it again changes and writes nothing.
	info, _ := os.Stat(state)
	add("alice", "brew")
	if after, _ := os.Stat(state); info != nil && after != nil && !after.ModTime().Equal(info.ModTime()) {
		t.Error("adding the same skill server again rewrote the state file")
	}
	if st := add("bob", "steep"); !slices.Equal(st.Skills, []string{"brew", "steep"}) || !slices.Equal(st.Agents, []string{"alice", "bob"}) {
		t.Errorf("after a second skill: %+v", st)
	}
	waitFor(t, "the gate to widen", func() bool { return slices.Equal(gate(), []string{"brew", "steep"}) })
	// Added by a person (agentd mcp add): everyone's, no gate.
	if st := add("alice", ""); st.Skills != nil {
		t.Errorf("after a plain definition: %+v", st)
	}
	waitFor(t, "the gate to go", func() bool { return gate() == nil })
}
