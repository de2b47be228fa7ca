package agent

import (
	"encoding/json"
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/txtar"
)

// asJSON compares free-form values as the JSON the provider receives, in
// which 4 and 4.0 are the same number.
var asJSON = cmp.Transformer("json", func(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return string(b)
})

// FuzzParseDefinition feeds arbitrary bytes to the agent file parser. It
// must never panic; a failure must be a *ConfigError naming the file; and
// a definition that loads must come back unchanged when written out and
// loaded again.
func FuzzParseDefinition(f *testing.F) {
	f.Add(exampleAgent)
	paths, _ := filepath.Glob("testdata/load/*.txtar")
	for _, p := range paths {
		a, err := txtar.ParseFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range a.Files {
			if strings.HasPrefix(file.Name, "agents/") && strings.HasSuffix(file.Name, ".yaml") {
				f.Add([]byte(file.Data))
			}
		}
	}
	f.Add([]byte("a: &a [*a, *a]\nb: *a\n"))
	f.Add([]byte("model: {<<: [{provider: echo}, {name: x}]}\n"))
	f.Add([]byte("model:\n  params:\n    extra: {a: !!binary aGVsbG8=, t: 2001-12-14}\n"))

	cfg := DefaultConfig()
	const rel = "agents/fuzz.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		def, err := parseDefinition(rel, data, "fuzz", cfg, nil)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || len(ce.Errors) == 0 {
				t.Fatalf("error is not a non-empty *ConfigError: %v", err)
			}
			for _, fe := range ce.Errors {
				if fe.File != rel || fe.Line < 0 || fe.Msg == "" {
					t.Fatalf("malformed error %#v", fe)
				}
			}
			return
		}
		if diff := cmp.Diff(def, def.Clone()); diff != "" {
			t.Fatalf("Clone differs:\n%s", diff)
		}
		out, err := encodeDefinition(def)
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, err := parseDefinition(rel, out, "fuzz", cfg, nil)
		if err != nil {
			t.Fatalf("written definition does not load: %v\n%s", err, out)
		}
		if diff := cmp.Diff(def, again, asJSON); diff != "" {
			t.Fatalf("round trip changed the definition (-before +after):\n%s\n%s", diff, out)
		}
	})
}

// FuzzParseConfig feeds arbitrary bytes to the agentd.yaml parser: no
// panic, and any failure is a *ConfigError naming the file.
func FuzzParseConfig(f *testing.F) {
	f.Add(exampleConfig)
	f.Add([]byte("default_model: {provider: openai, name: x, fallbacks: [{provider: echo}]}\nprices: {m: {input: 1}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parseConfig(ConfigFile, data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || len(ce.Errors) == 0 || ce.Errors[0].File != ConfigFile {
				t.Fatalf("error is not a *ConfigError for %s: %v", ConfigFile, err)
			}
			return
		}
		if cfg.MaxConcurrentTurns < 1 || cfg.Log.Level == "" || cfg.Store.Synchronous == "" {
			t.Fatalf("defaults not applied: %+v", cfg)
		}
	})
}

// FuzzOffersBuiltin holds OffersBuiltin's shortcut for names that are not
// patterns to path.Match.
func FuzzOffersBuiltin(f *testing.F) {
	f.Add("clock", "clock")
	f.Add("wm_*", "wm_get")
	f.Add("a[", "a[")
	f.Add(`a\b`, "ab")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		d := &Definition{Tools: ToolPolicy{Builtin: []string{pattern}}}
		ok, err := path.Match(pattern, name)
		if want := ok && err == nil; d.OffersBuiltin(name) != want {
			t.Errorf("OffersBuiltin(%q) with %q = %v, path.Match says %v", name, pattern, !want, want)
		}
	})
}
