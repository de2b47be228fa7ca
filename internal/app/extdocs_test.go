package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/extension"
	"agentd/internal/store"
)

// Every document docs/extensions.md shows is valid: written in the order
// the page gives them (a capability before the agent that includes it),
// each is accepted by the type it names.
func TestExtensionDocsExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "extensions.md"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agentd.yaml"), []byte("actions:\n  allow_networks: [127.0.0.1/32]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := Open(context.Background(), dir, &Options{ReadOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if _, err := a.Ext.Reseed(context.Background(), false); err != nil { // the built-in renderers
		t.Fatal(err)
	}
	var docs []extension.Doc
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		text, _, _ := strings.Cut(block, "```")
		if !strings.Contains(text, "\ntype: ") && !strings.HasPrefix(text, "type: ") && !strings.Contains(text, "\n  type: ") {
			continue
		}
		got, err := extension.DecodeDocs([]byte(text))
		if err != nil {
			t.Errorf("a document of docs/extensions.md does not decode: %v\n%s", err, text)
			continue
		}
		docs = append(docs, got...)
	}
	if len(docs) < 12 {
		t.Fatalf("only %d documents in docs/extensions.md", len(docs))
	}
	// Documents may name others shown later (a capability, a renderer):
	// each pass writes what it can, until one writes nothing.
	seen := map[string]bool{}
	who := extension.Who{Provenance: store.ProvenanceUser}
	errs := map[string]error{}
	for left := docs; len(left) > 0; {
		var next []extension.Doc
		for _, d := range left {
			if _, err := a.Ext.Put(context.Background(), d, who); err != nil {
				errs[d.Key()] = err
				next = append(next, d)
				continue
			}
			seen[d.Type] = true
		}
		if len(next) == len(left) {
			for _, d := range next {
				t.Errorf("docs/extensions.md: %s: %v", d.Key(), errs[d.Key()])
			}
			break
		}
		left = next
	}
	for _, typ := range a.Ext.Types() {
		if !seen[typ.Name] {
			t.Errorf("docs/extensions.md shows no %s document", typ.Name)
		}
	}
}
