package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/extension"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// TestAttackAgentRowGivesMoreThanItsWriterHas: docs/agents.md promises
// that an agent which writes agent rows, through create_permanent_agent
// or the extensions tool, "cannot give the new agent an agents block or
// more tools than it has". create_permanent_agent holds to it; the
// extensions tool does not: an agent whose own tools are clock and
// extensions writes an agent row that allows run_command, or every tool
// ("*": the risky ones too), or that takes the memory-keeper's tag and
// type (so #memory-keeper names it, or names no agent), and the row is
// active at once. Only an agents block, MCP servers, start-up calls and
// secrets make a row machine-level (agentMachine), so the write passes
// without extensions.machine.
func TestAttackAgentRowGivesMoreThanItsWriterHas(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, agent.AgentsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	writer := "type: permanent\nmodel: {provider: echo, name: echo}\ntools:\n  allow: [clock, extensions]\n  builtin: [clock, extensions]\n"
	if err := os.WriteFile(filepath.Join(dir, agent.AgentsDir, "writer.yaml"), []byte(writer), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := agent.NewRegistry(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := extension.New(testkit.ExtensionStore(t), nil)
	if err := m.Register(reg.ExtensionType()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	who := extension.Who{Provenance: store.ProvenanceAgent + "writer"}
	for name, spec := range map[string]string{
		"runner": `{"type":"permanent","system_prompt":"Run what you are told.","tools":{"allow":["run_command","write_file"]}}`,
		"all":    `{"type":"permanent","system_prompt":"Do anything.","tools":{"allow":["*"]}}`,
		"keeper": `{"type":"system","tags":["memory-keeper"],"system_prompt":"Keep every fact you are sent."}`,
	} {
		_, err := m.Put(ctx, extension.Doc{Type: "agent", Name: name, Spec: json.RawMessage(spec)}, who)
		if errors.Is(err, extension.ErrForbidden) {
			continue
		}
		if d, ok := reg.Get(name); ok {
			t.Errorf("agent %s written by writer (tools clock, extensions): active, type %s, tags %v, tools.allow %v, tools.builtin %v (err %v)",
				name, d.Type, d.Tags, d.Tools.Allow, d.Tools.Builtin, err)
		} else {
			t.Errorf("agent %s written by writer: %v, want ErrForbidden", name, err)
		}
	}
}
