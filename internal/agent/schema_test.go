package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/schema"
)

// The agent schema accepts the agent file agentd init writes, which shows
// every field (nulls included).
func TestSchemaAcceptsAgentFiles(t *testing.T) {
	s, err := schema.Compile(Schema())
	if err != nil {
		t.Fatal(err)
	}
	files := []string{filepath.Join("example", "assistant.yaml")}
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseDefinition(f, data, strings.TrimSuffix(filepath.Base(f), ".yaml"), DefaultConfig(), nil); err != nil {
			t.Logf("%s: %v", f, err)
			continue // a fixture of a broken file
		}
		v, err := yamlToJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		var doc any
		_ = json.Unmarshal(b, &doc)
		for _, e := range s.Validate(doc) {
			t.Errorf("%s: %s", f, e)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no agent file checked")
	}
}
