package schema_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"agentd/internal/schema"
	"agentd/internal/txtar"
)

// FuzzAgainstReference checks the verdict (valid or not) against
// github.com/google/jsonschema-go's for every schema both accept, over the
// schemas and instances of testdata; any bytes, as schema or instance,
// never make Compile or Validate panic.
func FuzzAgainstReference(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		a, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		raw, ok := a.Get("schema.json")
		for _, x := range a.Files {
			if !strings.HasSuffix(x.Name, ".json") || x.Name == "schema.json" {
				continue
			}
			if ok {
				f.Add(raw, x.Data)
			} else {
				f.Add(x.Data, `{"a": [1, "x", null]}`)
			}
		}
	}
	f.Fuzz(func(t *testing.T, raw, instance string) {
		s, err := schema.Compile([]byte(raw))
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(instance), &v) != nil {
			return
		}
		errs := s.Validate(v)
		for _, e := range errs {
			if e.Message == "" || (e.Pointer != "" && !strings.HasPrefix(e.Pointer, "/")) {
				t.Fatalf("malformed error %+v", e)
			}
		}
		var ref jsonschema.Schema
		if json.Unmarshal([]byte(raw), &ref) != nil {
			return
		}
		resolved, err := ref.Resolve(nil)
		if err != nil {
			return
		}
		refErr := resolved.Validate(v)
		if (refErr == nil) != (len(errs) == 0) {
			t.Fatalf("schema %s\ninstance %s\nours: %v\nreference: %v", raw, instance, errs, refErr)
		}
	})
}
