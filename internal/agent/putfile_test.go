package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRegistryPutFile(t *testing.T) {
	dir := t.TempDir()
	var changed []string
	r, err := NewRegistry(dir, nil, &RegistryOptions{OnChange: func(id string) { changed = append(changed, id) }})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "agents", "writer.yaml")

	// YAML is written as sent, comments included, readable by the owner only.
	yml := "# the writer\nname: Writer\nmodel:\n  provider: openai\n  name: gpt-4o-mini # cheap\n  api_key_env: OPENAI_API_KEY\n"
	created, err := r.PutFile("writer", []byte(yml))
	if err != nil || !created {
		t.Fatalf("PutFile = %v, %v", created, err)
	}
	if b, _ := os.ReadFile(file); string(b) != yml {
		t.Errorf("file holds %q, want the body as sent", b)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	got, ok := r.Get("writer")
	if !ok || got.Name != "Writer" || got.Model.Name != "gpt-4o-mini" || got.Budgets.MaxSteps != DefaultMaxSteps {
		t.Fatalf("after PutFile: %+v", got)
	}
	if d := cmp.Diff([]string{"assistant", "writer"}, changed); d != "" {
		t.Errorf("OnChange (the built-in assistant goes, writer comes) (-want +got)\n%s", d)
	}

	// JSON means the same and is written in block style.
	js := `{"name": "Writer 2", "system_prompt": "Line one.\nLine two.\n", "model": {"provider": "echo"},
		"tools": {"allow": ["calculator", "web_*"]}, "budgets": {"max_steps": 4}}`
	created, err = r.PutFile("writer", []byte(js))
	if err != nil || created {
		t.Fatalf("PutFile(JSON) = %v, %v", created, err)
	}
	b, _ := os.ReadFile(file)
	if strings.Contains(string(b), "{") || !strings.Contains(string(b), "system_prompt: |") {
		t.Errorf("JSON not written in block style:\n%s", b)
	}
	got, _ = r.Get("writer")
	if got.Name != "Writer 2" || got.SystemPrompt != "Line one.\nLine two.\n" || got.Budgets.MaxSteps != 4 ||
		!cmp.Equal(got.Tools.Allow, []string{"calculator", "web_*"}) {
		t.Errorf("after PutFile(JSON): %+v", got)
	}
}

// Refused documents name the line and field and change nothing.
func TestRegistryPutFileRefuses(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRegistry(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PutFile("a", []byte("name: A\n")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "agents", "a.yaml")
	writeTestFile(t, dir, "agents/p/system.md", "prompt\n")
	for _, tc := range []struct {
		name, id, body string
		line           int
		field          string
	}{
		{"bad value", "a", "name: A\nmodel:\n  provider: nope\n", 3, "model.provider"},
		{"unknown field", "a", "name: A\nbudgets:\n  max_step: 3\n", 3, "budgets.max_step"},
		{"wrong type in JSON", "a", "{\"name\": \"A\",\n \"budgets\": {\"max_steps\": \"many\"}}", 2, "budgets.max_steps"},
		{"id of another agent", "a", "id: b\n", 1, "id"},
		{"a key, not a variable name", "a", "model:\n  provider: openai\n  name: m\n  api_key_env: sk-abcdefabcdefabcdefabcdef\n", 4, "model.api_key_env"},
		{"not YAML", "a", "name: [\n", 1, ""},
		{"two documents", "a", "name: A\n---\nname: B\n", 2, ""},
		{"prompt in both places", "p", "system_prompt: hi\n", 1, "system_prompt"},
		{"too large", "a", "name: " + strings.Repeat("x", 1<<20) + "\n", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(file)
			_, err := r.PutFile(tc.id, []byte(tc.body))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("PutFile = %v, want a *ConfigError", err)
			}
			if fe := ce.Errors[0]; fe.Line != tc.line || fe.Field != tc.field {
				t.Errorf("first problem %+v, want line %d field %q", fe, tc.line, tc.field)
			}
			if after, _ := os.ReadFile(file); string(after) != string(before) {
				t.Error("a refused document changed the file")
			}
			if _, err := os.Stat(filepath.Join(dir, "agents", "p.yaml")); err == nil {
				t.Error("a refused document created a file")
			}
		})
	}
	for _, id := range []string{"../x", "", "a/b", ".hidden"} {
		if _, err := r.PutFile(id, []byte("name: X\n")); !errors.Is(err, ErrInvalidID) {
			t.Errorf("PutFile(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "agents"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if d := cmp.Diff([]string{"a.yaml", "p"}, names); d != "" {
		t.Errorf("agents/ holds (-want +got)\n%s", d)
	}
}

// Whatever PutFile accepts loads as the document it was given means,
// whether it was written as sent or re-rendered from JSON.
func FuzzPutFile(f *testing.F) {
	for _, s := range []string{
		"name: A\n",
		`{"name": "A", "system_prompt": "two\nlines", "tools": {"allow": ["x*"]}}`,
		`{"name": "yes", "description": "123", "servers": [], "model": {"provider": "echo", "params": {"extra": {"k": null, "n": 1e3}}}}`,
		`{"budgets": {"max_wall_time": "1m"}, "memory": {"recall": -1}}`,
		`{"name": "a: b", "description": "- x\n# y"}`,
		"name: [\n",
		"{}",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	r, err := NewRegistry(dir, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, perr := parseDefinition("agents/f.yaml", data, "f", DefaultConfig(), nil)
		_, err := r.PutFile("f", data)
		if (err == nil) != (perr == nil) {
			t.Fatalf("PutFile: %v; the document alone: %v", err, perr)
		}
		if err != nil {
			return
		}
		got, ok := r.Get("f")
		if !ok {
			t.Fatal("accepted but not loaded")
		}
		want.File = got.File
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%q loads as (-meant +loaded)\n%s", data, d)
		}
	})
}

// PutFile writes an agent file from a document a person or a program sent;
// a document with problems is refused with each problem's line and field.
func ExampleRegistry_PutFile() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	r, err := NewRegistry(dir, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	created, err := r.PutFile("helper", []byte(`{"name": "Helper", "model": {"provider": "echo"}}`))
	fmt.Println(created, err)
	b, _ := os.ReadFile(filepath.Join(dir, "agents", "helper.yaml"))
	fmt.Print(string(b))

	_, err = r.PutFile("helper", []byte("name: Helper\nbudgets:\n  max_steps: -1\n"))
	var ce *ConfigError
	if errors.As(err, &ce) {
		fe := ce.Errors[0]
		fmt.Println(fe.Line, fe.Field, fe.Msg)
	}
	// Output:
	// true <nil>
	// name: Helper
	// model:
	//   provider: echo
	// 3 budgets.max_steps must not be negative, got -1
}
