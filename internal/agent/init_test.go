package agent

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.yaml.in/yaml/v3"
)

func TestInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	created, err := Init(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "agentd.yaml"), filepath.Join(dir, "agents", "assistant.yaml")}
	if diff := cmp.Diff(want, created); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}

	// The example files load without errors, on the echo model.
	cfg, err := LoadConfig(dir)
	if err != nil {
		t.Fatalf("example agentd.yaml: %v", err)
	}
	if diff := cmp.Diff(DefaultConfig(), cfg, cmpIgnoreFile, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("example agentd.yaml differs from the defaults it documents (-defaults +example):\n%s", diff)
	}
	defs, errs := LoadAll(dir, cfg)
	if len(errs) > 0 {
		t.Fatalf("example agent: %v", errs)
	}
	a := defs["assistant"]
	if a == nil || len(defs) != 1 {
		t.Fatalf("agents = %v, want just assistant", defs)
	}
	if a.Model.Provider != ProviderEcho || a.SystemPrompt == "" || a.File != want[1] {
		t.Errorf("example assistant = %+v", a)
	}
	// A fresh agent is offered the default set, as the built-in one is.
	if diff := cmp.Diff(DefaultBuiltin(), a.Tools.Builtin); diff != "" {
		t.Errorf("example assistant's tools.builtin (-DefaultBuiltin +example):\n%s", diff)
	}

	// A second run writes nothing and keeps the user's edits.
	edited := "name: Mine\n"
	if err := os.WriteFile(want[1], []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	created, err = Init(dir)
	if err != nil || len(created) != 0 {
		t.Errorf("second Init = %v, %v; want nothing created", created, err)
	}
	if b, _ := os.ReadFile(want[1]); string(b) != edited {
		t.Errorf("Init overwrote %s", want[1])
	}
}

var cmpIgnoreFile = cmp.FilterPath(func(p cmp.Path) bool {
	return p.Last().String() == ".File"
}, cmp.Ignore())

// The example files show every field, so users can see what exists.
func TestExampleFilesShowEveryField(t *testing.T) {
	for _, tt := range []struct {
		name string
		data []byte
		typ  reflect.Type
	}{
		{"agentd.yaml", exampleConfig, reflect.TypeFor[Config]()},
		{"assistant.yaml", exampleAgent, reflect.TypeFor[Definition]()},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal(tt.data, &doc); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, missing := range missingFields(doc.Content[0], tt.typ, "") {
			t.Errorf("%s does not show %s", tt.name, missing)
		}
	}
}

// missingFields lists the fields of struct t that mapping n leaves out,
// descending into nested structs that n sets.
func missingFields(n *yaml.Node, t reflect.Type, path string) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == durationType || n.Kind != yaml.MappingNode {
		return nil
	}
	values := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		values[n.Content[i].Value] = n.Content[i+1]
	}
	var missing []string
	fields := yamlFields(t)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		v, ok := values[name]
		if !ok {
			missing = append(missing, join(path, name))
			continue
		}
		missing = append(missing, missingFields(v, fields[name].Type, join(path, name))...)
	}
	return missing
}

func TestModelHint(t *testing.T) {
	h := ModelHint()
	for _, want := range []string{"echo", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "base_url", "Ollama"} {
		if !strings.Contains(h, want) {
			t.Errorf("ModelHint() does not mention %s: %s", want, h)
		}
	}
	if strings.Contains(h, "\n") {
		t.Errorf("ModelHint() is not one line: %q", h)
	}
}
