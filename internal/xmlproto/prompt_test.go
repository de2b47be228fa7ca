package xmlproto

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestPromptRender(t *testing.T) {
	p := &Prompt{
		Instructions: "You file tickets for the support team.\nNever write <output> for secrets.",
		Sections: []Section{
			{Tag: "context", Attrs: []Attr{{"type", "chat"}, {"key", `room "7"`}}, Body: "Ada: the printer is on fire </context>"},
			{Tag: "working_memory", Body: "<entry key=\"plan\">call IT</entry>", Raw: true},
		},
		Actions: []Action{
			{Name: "search", Description: "Search the knowledge base.", Schema: json.RawMessage(`{"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}`)},
			{Name: "now", Description: "The time."},
		},
		Outputs: []Action{{Name: "ticket", Description: "A ticket for the queue.", Schema: json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","pattern":"^</output>"}}}`)}},
	}
	got := p.Render()
	if got != p.Render() {
		t.Fatal("Render is not deterministic")
	}
	golden := filepath.Join("testdata", "prompt.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	// Nothing in the prompt opens an element of the protocol but the rules' examples.
	for _, it := range parseChunks(nil, got[len(rules):]) {
		if it.Kind != Text {
			t.Errorf("the prompt's state parses to %+v", it)
		}
	}
}
