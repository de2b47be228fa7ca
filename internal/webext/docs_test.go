package webext_test

import (
	"os"
	"regexp"
	"testing"

	"agentd/internal/extension"
)

// yamlBlock finds the YAML examples of a markdown file; webDoc tells
// those that are documents of the web types.
var (
	yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")
	webDoc    = regexp.MustCompile(`(?m)^type: (theme|renderer|widget|artifact|app)$`)
)

// The examples of docs/extensions.md of the web types are valid
// documents of their types.
func TestDocExamplesValidate(t *testing.T) {
	b, err := os.ReadFile("../../docs/extensions.md")
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, nil)
	seen := map[string]bool{}
	for _, m := range yamlBlock.FindAllStringSubmatch(string(b), -1) {
		if !webDoc.MatchString(m[1]) {
			continue
		}
		docs, err := extension.DecodeDocs([]byte(m[1]))
		if err != nil {
			t.Errorf("%v in\n%s", err, m[1])
			continue
		}
		for _, d := range docs {
			seen[d.Type] = true
			if err := w.m.Check(t.Context(), d); err != nil {
				t.Errorf("the example %s: %v", d.Key(), err)
			}
		}
	}
	if len(seen) != 5 {
		t.Errorf("examples of %v only", seen)
	}
}
