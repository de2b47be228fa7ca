package action

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"agentd/internal/extension"
)

// The action documents in docs/extensions.md pass Check.
func TestDocExamples(t *testing.T) {
	text, err := os.ReadFile("../../docs/extensions.md")
	if err != nil {
		t.Fatal(err)
	}
	hs := newHarness(t, nil)
	n := 0
	for _, block := range strings.Split(string(text), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if !strings.HasPrefix(block, "type: action\n") {
			continue
		}
		var doc struct {
			Name string `yaml:"name"`
			Spec any    `yaml:"spec"`
		}
		if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
			t.Fatalf("%v in\n%s", err, block)
		}
		spec, err := json.Marshal(doc.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if errs := hs.h.Check(context.Background(), &extension.Doc{Type: TypeName, Name: doc.Name, Spec: spec}); errs != nil {
			t.Errorf("%s: %v", doc.Name, errs)
		}
		n++
	}
	if n < 2 {
		t.Errorf("found %d action examples", n)
	}
}
