package schema_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentd/internal/schema"
	"agentd/internal/txtar"
)

// node finds node, which CI has; without it the tests skip unless
// AGENTD_INTEROP=1 asks for them.
func node(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("AGENTD_INTEROP") == "1" {
			t.Fatal("node is needed for the console's JavaScript tests")
		}
		t.Skip("skipping: no node")
	}
	return node
}

// TestJavaScript runs the console's validator (static/schema.js) over the
// cases of testdata, which must give the same errors as this package.
func TestJavaScript(t *testing.T) {
	out, err := exec.Command(node(t), "--test", "../gateway/console/testdata/schema.test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("# fail 0")) {
		t.Fatalf("node --test:\n%s", out)
	}
}

// TestJavaScriptAgrees validates values made by changing the instances of
// testdata at random (a fixed seed) in Go and in JavaScript: every error,
// pointer and message must be the same.
func TestJavaScriptAgrees(t *testing.T) {
	n := node(t)
	type item struct {
		Schema   json.RawMessage `json:"schema"`
		Instance any             `json:"instance"`
		Errors   []string        `json:"errors"`
	}
	var items []item
	r := rand.New(rand.NewPCG(1, 2))
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		a, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range schemasOf(a) {
			s, err := schema.Compile([]byte(raw))
			if err != nil {
				continue
			}
			seeds := instancesOf(t, a)
			for range 300 {
				v := mutate(r, seeds[r.IntN(len(seeds))], 3)
				errs := []string{}
				for _, e := range s.Validate(v) {
					errs = append(errs, e.String())
				}
				items = append(items, item{Schema: json.RawMessage(raw), Instance: v, Errors: errs})
			}
		}
	}
	data, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	cases := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(cases, data, 0o600); err != nil {
		t.Fatal(err)
	}
	lib, _ := filepath.Abs("../gateway/console/static/schema.js")
	script := `
import { compile, errorString } from ` + string(mustJSON(t, (&url.URL{Scheme: "file", Path: lib}).String())) + `;
import { readFileSync } from 'node:fs';
const items = JSON.parse(readFileSync(process.argv[1], 'utf8'));
let bad = 0;
for (const it of items) {
  const got = compile(it.schema).validate(it.instance).map(errorString);
  if (JSON.stringify(got) !== JSON.stringify(it.errors)) {
    if (bad++ < 10) console.log(JSON.stringify({ schema: it.schema, instance: it.instance, go: it.errors, js: got }));
  }
}
console.log('checked ' + items.length + ', differ ' + bad);
process.exit(bad ? 1 : 0);
`
	out, err := exec.Command(n, "--input-type=module", "-e", script, cases).CombinedOutput()
	if err != nil {
		t.Fatalf("Go and JavaScript differ: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// schemasOf lists the schemas of an archive: schema.json, or each schema
// of compile.txtar.
func schemasOf(a *txtar.Archive) []string {
	if raw, ok := a.Get("schema.json"); ok {
		return []string{raw}
	}
	var out []string
	for _, f := range a.Files {
		if strings.HasSuffix(f.Name, ".json") {
			out = append(out, f.Data)
		}
	}
	return out
}

// instancesOf lists an archive's instances, and a few values of each type.
func instancesOf(t *testing.T, a *txtar.Archive) []any {
	out := []any{nil, true, 1.0, "x", []any{}, map[string]any{}}
	if _, ok := a.Get("schema.json"); !ok {
		return out
	}
	for _, f := range a.Files {
		if strings.HasSuffix(f.Name, ".json") && f.Name != "schema.json" {
			var v any
			if err := json.Unmarshal([]byte(f.Data), &v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
	}
	return out
}

// scalars are values mutate puts in place of others: the edges of the
// testdata schemas' rules.
var scalars = []any{nil, true, false, 0.0, -1.0, 1.0, 1.5, 3.0, 5.0, 65535.0, 70000.0, 1e-7, -1e22, 0.3, "", "a", "ab",
	"abc", "ABC", "éééé", "GET", "get", "http", "cron", "x y", "Very-Long-Name", []any{}, map[string]any{}}

// keys are names mutate adds to objects.
var keys = []string{"extra", "url", "name", "id", "kind", "Bad Name", "X_N", "a/b", "t~", "schedule", "argv"}

// mutate returns a changed copy of v.
func mutate(r *rand.Rand, v any, depth int) any {
	if depth == 0 || r.IntN(6) == 0 {
		return scalars[r.IntN(len(scalars))]
	}
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v)+1)
		for _, k := range slices.Sorted(maps.Keys(v)) { // in order: the seed gives the same values
			x := v[k]
			switch r.IntN(4) {
			case 0: // dropped
			case 1:
				out[k] = mutate(r, x, depth-1)
			default:
				out[k] = x
			}
		}
		if r.IntN(2) == 0 {
			k := keys[r.IntN(len(keys))]
			out[k] = mutate(r, out[k], depth-1)
		}
		return out
	case []any:
		out := slices.Clone(v)
		for i := range out {
			if r.IntN(3) == 0 {
				out[i] = mutate(r, out[i], depth-1)
			}
		}
		if len(out) > 0 && r.IntN(2) == 0 {
			out = append(out, out[r.IntN(len(out))])
		}
		return out
	}
	return scalars[r.IntN(len(scalars))]
}
