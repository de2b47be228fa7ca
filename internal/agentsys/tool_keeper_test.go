package agentsys

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/command"
	"agentd/internal/extension"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// TestMemoryKeeper: the built-in system agent is seeded as a row of
// provenance builtin, off until a person turns it on; then a
// "#memory-keeper" target names it (as a chat line does), it has the
// default model and is offered the memory tools and nothing else, no MCP
// server's tool either.
func TestMemoryKeeper(t *testing.T) {
	w := newPermWorld(t)
	row, err := w.ext.Get(t.Context(), "agent", "memory-keeper")
	if err != nil || row.Provenance != store.ProvenanceBuiltin || row.Enabled {
		t.Fatalf("row: provenance %q, enabled %v, %v; want a built-in row, off", row.Provenance, row.Enabled, err)
	}
	if _, ok := w.agents.Get("memory-keeper"); ok {
		t.Fatal("the memory keeper is an agent while its row is off")
	}
	if got := command.NewRouterWith(w.agents).Tagged("memory-keeper"); got != nil {
		t.Errorf("#memory-keeper names %v while the row is off", got)
	}
	if _, err := w.ext.SetEnabled(t.Context(), "agent", "memory-keeper", true, extension.Who{Provenance: store.ProvenanceUser}); err != nil {
		t.Fatal(err)
	}
	d, ok := w.agents.Get("memory-keeper")
	if !ok {
		t.Fatal("no agent memory-keeper")
	}
	if d.Type != agent.TypeSystem || d.SystemPrompt == "" || d.Model.Provider != agent.ProviderEcho {
		t.Errorf("type %q, prompt %q, model %+v: want a system agent with a prompt and the default model", d.Type, d.SystemPrompt, d.Model)
	}
	if got := command.NewRouterWith(w.agents).Tagged("memory-keeper"); !cmp.Equal(got, []string{"memory-keeper"}) {
		t.Errorf("#memory-keeper names %v", got)
	}
	reg := tool.NewRegistry(nil)
	for _, s := range []tool.Spec{{Name: "remember"}, {Name: "recall"}, {Name: "forget"}, {Name: "relate"}, {Name: "clock"},
		{Name: "wm_set"}, {Name: "search_history"}, {Name: "gh__search", Server: "gh"}, startSpec(), sendSpec()} {
		if err := reg.Register(tool.Func(s, nil)); err != nil {
			t.Fatal(err)
		}
	}
	var offered []string
	for _, s := range reg.Specs() {
		if creatorVerdict(d, &s) != tool.Deny {
			offered = append(offered, s.Name)
		}
	}
	if diff := cmp.Diff([]string{"forget", "recall", "relate", "remember"}, offered); diff != "" {
		t.Errorf("tools offered (-want +got):\n%s", diff)
	}
}
