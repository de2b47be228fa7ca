package schema_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/schema"
	"agentd/internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected errors in testdata")

// TestCases validates each instance NAME.json of each testdata archive
// (but compile.txtar) against its schema.json and compares the errors, one
// "pointer: message" a line, with NAME.errors. The console's validator
// (static/schema.js) runs over the same archives.
func TestCases(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		if filepath.Base(file) == "compile.txtar" {
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			raw, ok := a.Get("schema.json")
			if !ok {
				t.Fatal("no schema.json")
			}
			s, err := schema.Compile([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			changed := false
			for _, f := range a.Files {
				name, ok := strings.CutSuffix(f.Name, ".json")
				if !ok || f.Name == "schema.json" {
					continue
				}
				var v any
				if err := json.Unmarshal([]byte(f.Data), &v); err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				got := lines(s.Validate(v))
				want, _ := a.Get(name + ".errors")
				if *update {
					if got != want {
						a.Set(name+".errors", got)
						changed = true
					}
					continue
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%s (-want +got):\n%s", name, d)
				}
				if numbers := validateNumbers(t, s, f.Data); numbers != got {
					t.Errorf("%s with json.Number: %q, with float64: %q", name, numbers, got)
				}
			}
			if changed {
				if err := os.WriteFile(file, a.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// validateNumbers validates data decoded with UseNumber.
func validateNumbers(t *testing.T, s *schema.Schema, data string) string {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return lines(s.Validate(v))
}

func lines(errs []schema.Error) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestCompile compiles each NAME.json of testdata/compile.txtar and
// compares the error with NAME.error (empty: the schema compiles).
func TestCompile(t *testing.T) {
	a, err := txtar.ParseFile("testdata/compile.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range a.Files {
		name, ok := strings.CutSuffix(f.Name, ".json")
		if !ok {
			continue
		}
		want, _ := a.Get(name + ".error")
		want = strings.TrimSuffix(want, "\n")
		_, err := schema.Compile([]byte(f.Data))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
}
