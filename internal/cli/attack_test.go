package cli

import (
	"bytes"
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/gateway"
)

// TestAttackDefinitionNameEscapesTheTerminal: an agent definition's name
// and model are text an agent can write (an agent row written through
// the extensions tool: the registry takes any string there), and
// `agentd agents` prints the definitions' table with them as they are,
// unlike the dynamic agents' names, which go through termSafe. A name
// that retitles the terminal, writes to the clipboard (OSC 52) or clears
// the screen reaches the person's terminal.
func TestAttackDefinitionNameEscapesTheTerminal(t *testing.T) {
	reg, err := agent.NewRegistry(t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	def, err := reg.ParseRow("scribe", []byte(`{"name":"scribe\u001b]52;c;cm0gLXJmIH4K\u0007","system_prompt":"x",`+
		`"model":{"provider":"echo","name":"echo\u001b[2J\u001b]0;pwned\u0007"}}`))
	if err != nil {
		t.Fatalf("the row is refused (the hole is closed where rows are read): %v", err)
	}
	var out bytes.Buffer
	list := []gateway.AgentInfo{{ID: def.ID, Name: def.Name, Type: def.Type, Provider: def.Model.Provider, Model: def.Model.Name,
		State: gateway.AgentReady}}
	if err := writeAgents(&out, list); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(out.String(), "\x1b\x07") {
		t.Errorf("agentd agents printed an escape sequence from a definition's name or model: %q", out.String())
	}
}
