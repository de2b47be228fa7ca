package agent

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden sections of the testdata fixtures")

// Each testdata/load/*.txtar fixture is a data directory. Its "errors"
// section is the golden list of errors from LoadConfig and LoadAll, and
// its "agents.json" section the golden definitions.
func TestLoadFixtures(t *testing.T) {
	paths, err := filepath.Glob("testdata/load/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no fixtures")
	}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(p)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for _, f := range a.Files {
				if f.Name == "errors" || f.Name == "agents.json" {
					continue
				}
				writeTestFile(t, dir, f.Name, f.Data)
			}
			gotErrs, gotDefs := loadForTest(t, dir)
			if *update {
				a.Set("errors", gotErrs)
				a.Set("agents.json", gotDefs)
				if err := os.WriteFile(p, a.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErrs, _ := a.Get("errors")
			wantDefs, _ := a.Get("agents.json")
			if diff := cmp.Diff(wantErrs, gotErrs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantDefs, gotDefs); diff != "" {
				t.Errorf("agents.json (-want +got):\n%s", diff)
			}
		})
	}
}

// loadForTest loads dir as agentd does and renders the errors, one per
// line, and the definitions as JSON with file paths relative to dir. It
// also checks that LoadDefinition agrees with LoadAll.
func loadForTest(t *testing.T, dir string) (errs, defs string) {
	t.Helper()
	var lines []string
	cfg, err := LoadConfig(dir)
	if err != nil {
		lines = append(lines, err.Error())
		cfg = nil
	}
	all, loadErrs := LoadAll(dir, cfg)
	for _, e := range loadErrs {
		var ce *ConfigError
		if !errors.As(e, &ce) {
			t.Errorf("LoadAll error %v is not a *ConfigError", e)
		}
		lines = append(lines, e.Error())
	}
	for id, d := range all {
		one, err := LoadDefinition(dir, id, cfg)
		if err != nil {
			t.Errorf("LoadDefinition(%q): %v", id, err)
		} else if diff := cmp.Diff(d, one); diff != "" {
			t.Errorf("LoadDefinition(%q) differs from LoadAll (-all +one):\n%s", id, diff)
		}
		if d.File != "" {
			rel, err := filepath.Rel(dir, d.File)
			if err != nil {
				t.Fatal(err)
			}
			d.File = filepath.ToSlash(rel)
		}
	}
	out, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) > 0 {
		errs = strings.Join(lines, "\n") + "\n"
	}
	return errs, string(out) + "\n"
}

func writeTestFile(t testing.TB, dir, rel, data string) {
	t.Helper()
	name := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
