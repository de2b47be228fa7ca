package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/extension"
	"agentd/internal/store"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

// TestAgentRowHeldToItsWriter: an agent row an agent writes may give what
// its writer has (a tool it is allowed, one it may call with approval
// only as ask), nothing more, whether the tool is registered or not, and
// no looser budget; and it does not take a name a dynamic or deleted
// agent had.
func TestAgentRowHeldToItsWriter(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, agent.AgentsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	writer := "type: permanent\nmodel: {provider: echo, name: echo}\ntools:\n  allow: [clock, web_*, extensions]\n  ask: [web_post]\nbudgets: {max_usd_per_day: 2}\n"
	if err := os.WriteFile(filepath.Join(dir, agent.AgentsDir, "writer.yaml"), []byte(writer), 0o600); err != nil {
		t.Fatal(err)
	}
	reg, err := agent.NewRegistry(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetTools(func() []tool.Spec {
		return []tool.Spec{{Name: "clock"}, {Name: "web_fetch", Risky: true}, {Name: "web_post", Risky: true}, {Name: "remember"}}
	})
	reg.SetTaken(func(_ context.Context, name string) (bool, error) { return name == "gone", nil })
	m := extension.New(testkit.ExtensionStore(t), nil)
	if err := m.Register(reg.ExtensionType()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	who := extension.Who{Provenance: store.ProvenanceAgent + "writer"}
	for _, c := range []struct {
		name, tools string
		ok          bool
		budgets     string // left out: {"max_usd_per_day":1}
	}{
		{"clocked", `{"allow":["clock"]}`, true, ""},
		{"fetcher", `{"allow":["web_fetch"]}`, true, ""},
		{"asker", `{"allow":["web_*"],"ask":["web_post"]}`, true, ""},
		{"poster", `{"allow":["web_*"]}`, false, ""},             // web_post without approval
		{"defaults", `{}`, false, ""},                            // every tool that is not risky: remember
		{"unregistered", `{"allow":["shell_*"]}`, false, ""},     // a tool not registered yet
		{"denier", `{"allow":["clock"],"deny":["x"]}`, true, ""}, // a deny gives nothing
		{"gone", `{"allow":["clock"]}`, false, ""},               // a deleted agent's name
		{"unbounded", `{"allow":["clock"]}`, false, `{}`},        // no day budget
		{"spender", `{"allow":["clock"]}`, false, `{"max_usd_per_day":5}`},
		{"tighter", `{"allow":["clock"]}`, true, `{"max_usd_per_day":2,"max_usd_per_turn":0.1}`},
	} {
		if c.budgets == "" {
			c.budgets = `{"max_usd_per_day":1}`
		}
		spec := `{"type":"permanent","system_prompt":"Work.","tools":` + c.tools + `,"budgets":` + c.budgets + `}`
		_, err := m.Put(ctx, extension.Doc{Type: "agent", Name: c.name, Spec: json.RawMessage(spec)}, who)
		if c.ok && err != nil || !c.ok && !errors.Is(err, extension.ErrForbidden) {
			t.Errorf("row %s (tools %s): %v, want ok %v", c.name, c.tools, err, c.ok)
		}
	}
	// A person writes what they like.
	if _, err := m.Put(ctx, extension.Doc{Type: "agent", Name: "gone", Spec: json.RawMessage(`{"type":"permanent"}`)},
		extension.Who{Provenance: store.ProvenanceUser}); err != nil {
		t.Errorf("a person's row: %v", err)
	}
}

// A tool marked OptIn is offered only when tools.builtin names it: an
// agent file that leaves tools.builtin out gets every other built-in
// tool, not the machine's.
func TestOptInToolsNeedTheirName(t *testing.T) {
	exec := &tool.Spec{Name: "exec", AskFirst: true, OptIn: true}
	clock := &tool.Spec{Name: "clock"}
	for _, tc := range []struct {
		name      string
		builtin   []string
		exec, clk tool.Verdict
	}{
		{"builtin left out", nil, tool.Deny, tool.Allow},
		{"builtin names exec", []string{"clock", "exec"}, tool.Ask, tool.Allow},
		{"builtin by glob", []string{"*"}, tool.Ask, tool.Allow},
		{"builtin without exec", []string{"clock"}, tool.Deny, tool.Allow},
	} {
		d := &agent.Definition{ID: "a", Tools: agent.ToolPolicy{Builtin: tc.builtin}}
		if got := d.Verdict(exec); got != tc.exec {
			t.Errorf("%s: exec %s, want %s", tc.name, got, tc.exec)
		}
		if got := d.Verdict(clock); got != tc.clk {
			t.Errorf("%s: clock %s, want %s", tc.name, got, tc.clk)
		}
	}
}

// TestAgentRowHeldToItsWritersExec: an agent row offered exec or process
// is held to its writer's sandbox and exec settings, the defaults
// counted: each looser setting is refused naming its field; the same or
// tighter ones, and a row offered no tool that runs commands, pass.
func TestAgentRowHeldToItsWritersExec(t *testing.T) {
	tight := agent.ExecPolicy{Env: []string{"GOPATH"}, Timeout: agent.Duration(10 * time.Second), MaxOutputBytes: 1000,
		MaxProcesses: 1, Limits: agent.Limits{CPU: agent.Duration(10 * time.Second), Memory: 64 << 20, Processes: 16,
			FileSize: 1 << 20, Disk: 1 << 20, Tmp: 1 << 20}}
	writer := &agent.Definition{ID: "writer", Sandbox: agent.SandboxAuto, Exec: tight,
		Tools: agent.ToolPolicy{Builtin: []string{"exec", "process", "clock"}, Allow: []string{"exec", "process", "clock"}}}
	for _, tc := range []struct {
		field   string
		builtin []string
		sandbox string
		change  func(e *agent.ExecPolicy)
	}{
		{"", []string{"exec"}, "", func(e *agent.ExecPolicy) {}},
		{"", []string{"process"}, agent.SandboxAuto, func(e *agent.ExecPolicy) { e.Env = nil }},
		{"", []string{"clock"}, agent.SandboxNone, func(e *agent.ExecPolicy) { *e = agent.ExecPolicy{Network: true} }},
		{"sandbox", []string{"exec"}, agent.SandboxNone, func(e *agent.ExecPolicy) {}},
		{"exec.network", []string{"process"}, "", func(e *agent.ExecPolicy) { e.Network = true }},
		{"exec.shell", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.Shell = true }},
		{"exec.env", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.Env = append(e.Env, "AWS_SECRET_ACCESS_KEY") }},
		{"exec.timeout", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.Timeout = 0 }},
		{"exec.max_output_bytes", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.MaxOutputBytes++ }},
		{"exec.max_processes", []string{"process"}, "", func(e *agent.ExecPolicy) { e.MaxProcesses = 2 }},
		{"exec.limits.cpu", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.Limits.CPU = 0 }},
		{"exec.limits.memory", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.Limits.Memory *= 2 }},
		{"exec.limits.processes", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.Limits.Processes = 0 }},
		{"exec.limits.file_size", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.Limits.FileSize++ }},
		{"exec.limits.disk", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.Limits.Disk = 0 }},
		{"exec.limits.tmp", []string{"exec"}, "", func(e *agent.ExecPolicy) { e.Limits.Tmp++ }},
	} {
		def := &agent.Definition{ID: "row", Sandbox: tc.sandbox, Exec: tight,
			Tools: agent.ToolPolicy{Builtin: tc.builtin, Allow: tc.builtin}}
		def.Exec.Env = slices.Clone(tight.Env)
		tc.change(&def.Exec)
		err := agent.Holds(writer, def, nil)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%v %+v: refused: %v", tc.builtin, def.Exec, err)
		case tc.field != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.field+":")):
			t.Errorf("%v %+v: %v; want a refusal naming %s", tc.builtin, def.Exec, err, tc.field)
		}
	}
}
