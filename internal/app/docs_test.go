package app

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"agentd/internal/agent"
)

// The agent file example in docs/configuration.md ("a complete example,
// with every field") loads without a problem, writes every field an agent
// file has, and names only built-in tools that exist: a field or a tool
// added to agentd without a line in the example fails here.
func TestConfigurationExample(t *testing.T) {
	example := agentExample(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o700)
	if err := os.WriteFile(filepath.Join(dir, "agents", "assistant.yaml"), []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	for file, err := range a.Agents.Errors() {
		t.Errorf("the example does not load: %s: %v", file, err)
	}

	var doc any
	if err := yaml.Unmarshal([]byte(example), &doc); err != nil {
		t.Fatal(err)
	}
	for _, p := range fieldPaths(reflect.TypeFor[agent.Definition](), "", map[reflect.Type]bool{}) {
		if !hasPath(doc, strings.Split(p, ".")) {
			t.Errorf("the example does not write %s", p)
		}
	}

	d, ok := a.Agents.Get("assistant")
	if !ok {
		t.Fatal("no assistant")
	}
	var builtin []string
	for _, s := range a.Tools.Specs() {
		if s.Server == "" {
			builtin = append(builtin, s.Name)
		}
	}
	tp := d.Tools
	for _, pat := range slices.Concat(tp.Allow, tp.Deny, tp.Ask, tp.Builtin) {
		if strings.Contains(pat, "__") {
			continue // an MCP server's tool: <server>__<tool>
		}
		if !slices.ContainsFunc(builtin, func(name string) bool { ok, _ := path.Match(pat, name); return ok }) {
			t.Errorf("the example names %q, which matches no built-in tool (%v)", pat, builtin)
		}
	}
}

// agentExample is the first YAML block after "## Agent files" in
// docs/configuration.md.
func agentExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n## Agent files\n")
	if !ok {
		t.Fatal("configuration.md has no section Agent files")
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	if !ok {
		t.Fatal("no yaml block under Agent files")
	}
	block, _, _ := strings.Cut(rest, "```")
	return block
}

// fieldPaths lists the YAML paths of t's fields, "*" standing for a map's
// keys and "[]" for a list's items; a struct's fields are listed where the
// struct is first met (a model's fallbacks and the summary model are
// models: their fields are the agent's model's).
func fieldPaths(t reflect.Type, prefix string, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		return fieldPaths(t.Elem(), prefix+".[]", seen)
	case reflect.Map:
		return fieldPaths(t.Elem(), prefix+".*", seen)
	case reflect.Struct:
		if seen[t] || t.NumField() == 0 || !strings.HasPrefix(t.PkgPath(), "agentd/") {
			return nil
		}
		seen[t] = true
	default:
		return nil
	}
	var out []string
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		p := strings.TrimPrefix(prefix+"."+tag, ".")
		out = append(out, p)
		out = append(out, fieldPaths(f.Type, p, seen)...)
	}
	return out
}

// hasPath reports whether some value in v is at path (see fieldPaths).
func hasPath(v any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		if path[0] == "*" {
			for _, e := range x {
				if hasPath(e, path[1:]) {
					return true
				}
			}
			return false
		}
		e, ok := x[path[0]]
		return ok && hasPath(e, path[1:])
	case []any:
		if path[0] != "[]" {
			return false
		}
		for _, e := range x {
			if hasPath(e, path[1:]) {
				return true
			}
		}
		return len(x) == 0 && len(path) == 1
	}
	return false
}
