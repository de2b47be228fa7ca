//go:build attack

package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/extension"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

// TestAttackAgentRowLeavesTheWritersSandbox: workspace, sandbox and exec
// in an agent row are machine-level, so an agent cannot write them; but a
// row that leaves them out gets the defaults, and the defaults can be
// looser than its writer's own. An agent allowed exec with tight limits
// writes a row allowed exec (it has exec, so Holds passes) and no exec
// block: the new agent runs commands for 2 minutes with 1 GiB of memory
// and 5 minutes of CPU where its writer had 10 seconds, 64 MiB and 10
// seconds. The row's exec (timeout, limits, max_processes) should be held
// to its writer's as its tools are, or taken from its writer when left
// out.
func TestAttackAgentRowLeavesTheWritersSandbox(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, agent.AgentsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	writer := "type: permanent\nmodel: {provider: echo, name: echo}\n" +
		"tools:\n  allow: [exec, extensions]\n  builtin: [exec, extensions]\n" +
		"exec:\n  timeout: 10s\n  max_processes: 1\n  limits: {memory: 64MiB, cpu: 10s, processes: 16}\n"
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
	spec := `{"type":"permanent","system_prompt":"Run what you are told.","tools":{"allow":["exec"],"builtin":["exec"]}}`
	_, err = m.Put(ctx, extension.Doc{Type: "agent", Name: "runner", Spec: json.RawMessage(spec)},
		extension.Who{Provenance: store.ProvenanceAgent + "writer"})
	if err != nil {
		t.Logf("refused: %v", err)
		return
	}
	w, _ := reg.Get("writer")
	d, ok := reg.Get("runner")
	if !ok {
		t.Fatal("the row was accepted but defines no agent")
	}
	we, de := w.Exec.WithDefaults(), d.Exec.WithDefaults()
	if de.Limits.Memory > we.Limits.Memory || de.Timeout.D() > we.Timeout.D() || de.Limits.CPU.D() > we.Limits.CPU.D() {
		t.Errorf("agent writer (exec: timeout %v, memory %v, cpu %v) wrote agent runner, allowed exec with timeout %v, memory %v, cpu %v",
			we.Timeout.D(), we.Limits.Memory, we.Limits.CPU.D(), de.Timeout.D(), de.Limits.Memory, de.Limits.CPU.D())
	}
}

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
