package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/tool"
)

type outputTypes map[string][]OutputType

func (o outputTypes) OutputTypes(d *agent.Definition) []OutputType { return o[d.ID] }

// Each agent is offered the output tool with its own types: their names
// in the schema's enum, their content schemas in the description; an
// agent without types, and every other tool, as registered.
func TestOutputSpec(t *testing.T) {
	e := New(&Options{Outputs: outputTypes{"a": {
		{Name: "memory", Description: "a note", Schema: json.RawMessage(`{"type": "object", "required": ["text"]}`)},
		{Name: "ticket", Schema: json.RawMessage(`{"type":"object"}`)},
	}}})
	registered := &tool.Spec{Name: OutputTool, Description: "Produces an output.", InputSchema: json.RawMessage(`{"type":"object"}`)}
	r := &run{e: e, def: &agent.Definition{ID: "a"}}
	got := r.outputSpec(registered)
	var params struct {
		Properties struct {
			Type struct {
				Enum []string `json:"enum"`
			} `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(got.InputSchema, &params); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"memory", "ticket"}, params.Properties.Type.Enum); diff != "" {
		t.Errorf("enum (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"type", "content"}, params.Required); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	for _, want := range []string{"Produces an output.", `- memory: a note; content schema: {"type":"object","required":["text"]}`, `- ticket; content schema: {"type":"object"}`} {
		if !strings.Contains(got.Description, want) {
			t.Errorf("description %q lacks %q", got.Description, want)
		}
	}
	if string(registered.InputSchema) != `{"type":"object"}` {
		t.Error("the registered spec changed")
	}
	other := &run{e: e, def: &agent.Definition{ID: "b"}}
	if other.outputSpec(registered) != registered {
		t.Error("an agent without output types is offered another spec")
	}
	clock := &tool.Spec{Name: "clock"}
	if r.outputSpec(clock) != clock {
		t.Error("another tool is changed")
	}
}
