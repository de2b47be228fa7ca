package webext_test

import (
	"os"
	"path/filepath"
	"testing"

	"agentd/internal/extension"
)

// Every built-in theme and renderer decodes and passes its type's schema
// and checks, and a reseed writes each one as a row.
func TestBuiltinSeedsValidate(t *testing.T) {
	w := newWorld(t, nil)
	for _, typ := range []string{"theme", "renderer"} {
		files, err := filepath.Glob(filepath.Join("..", "extension", "builtin", typ, "*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s seeds: %v", typ, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs, err := extension.DecodeDocs(b)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			for _, d := range docs {
				if d.Type != typ || d.Name+".yaml" != filepath.Base(f) {
					t.Errorf("%s: holds %s", f, d.Key())
				}
				if err := w.m.Check(t.Context(), d); err != nil {
					t.Errorf("%s: %v", f, err)
				}
				st, err := w.m.Get(t.Context(), d.Type, d.Name)
				if err != nil || st.Provenance != "builtin" || !st.Enabled {
					t.Errorf("%s: its row after a reseed: %+v, %v", f, st, err)
				}
			}
		}
	}
	rep, err := w.m.Reseed(t.Context(), false)
	if err != nil || len(rep.Errors) > 0 {
		t.Fatalf("reseed: %+v, %v", rep, err)
	}
}
