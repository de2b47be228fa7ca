//go:build attack

package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	"agentd/internal/agent"
)

// TestAttackAgentFileWithoutBuiltinGetsTheMachineTools: docs/tools.md's
// first rule is "Nothing is on until you offer it": the machine's tools
// are not in a fresh agent's tools.builtin. But an agent file that has no
// tools.builtin (every agent file written before these tools, and any a
// person writes with only tools.allow) is offered every built-in tool:
// read_file, list_dir, glob and grep run at once, without asking, and
// exec, process, write_file and web_fetch are offered, waiting only for a
// person's click. An upgrade turns them on for every such agent, a
// customer-facing swarm agent too. The machine's tools should be offered
// only when tools.builtin names them (left out = the built-ins without
// them).
func TestAttackAgentFileWithoutBuiltinGetsTheMachineTools(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, agent.AgentsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	def := "type: swarm\nmodel: {provider: echo, name: echo}\nsystem_prompt: Help the customer.\ntools:\n  allow: [clock]\n"
	if err := os.WriteFile(filepath.Join(dir, agent.AgentsDir, "support.yaml"), []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := agent.NewRegistry(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := reg.Get("support")
	if !ok {
		t.Fatal("no agent support")
	}
	for _, name := range []string{"read_file", "grep", "exec", "process", "write_file", "apply_patch", "web_fetch"} {
		if d.OffersBuiltin(name) {
			t.Errorf("agent support (tools.builtin left out) is offered %s", name)
		}
	}
}
