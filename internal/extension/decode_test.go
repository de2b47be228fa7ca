package extension_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/extension"
	"agentd/internal/txtar"
)

// TestDecodeDocs decodes each NAME.in of testdata/decode.txtar and
// compares the documents, or the error, with NAME.want.
func TestDecodeDocs(t *testing.T) {
	a, err := txtar.ParseFile("testdata/decode.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range a.Files {
		name, ok := strings.CutSuffix(f.Name, ".in")
		if !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			want, _ := a.Get(name + ".want")
			docs, err := extension.DecodeDocs([]byte(f.Data))
			if d := cmp.Diff(want, describe(docs, err)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if err != nil && !errors.Is(err, extension.ErrMalformed) {
				t.Errorf("%v is not ErrMalformed", err)
			}
		})
	}
}

func describe(docs []extension.Doc, err error) string {
	if err != nil {
		return err.Error() + "\n"
	}
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&b, "line %d: %s ", d.Line, d.Key())
		if d.Enabled != nil {
			fmt.Fprintf(&b, "enabled=%t ", *d.Enabled)
		}
		b.Write(d.Spec)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestDecodeSpec reads PUT bodies by their content type.
func TestDecodeSpec(t *testing.T) {
	for _, c := range []struct {
		body, ct, want string
	}{
		{`{"type":"a","name":"x","spec":{"k":1}}`, "application/json", "line 1: a/x {\"k\":1}\n"},
		{`{"spec":{"k":1}}`, "application/json; charset=utf-8", "line 1: / {\"k\":1}\n"},
		{"spec:\n  k: 1\n", "application/yaml", "line 1: / {\"k\":1}\n"},
		{"name: x\nspec: {k: [a]}\n", "text/yaml", "line 1: /x {\"k\":[\"a\"]}\n"},
		{`{"spec":{}}`, "", "line 1: / {}\n"},
		{"spec: {k: 1}\n", "application/json", "line 1: must be one document (an object with type, name and spec), not a list\n"},
		{`[{"spec":{}}]`, "application/json", "line 1: must be one document (an object with type, name and spec), not a list\n"},
		{"- spec: {}\n", "application/yaml", "line 1: must be a mapping with type, name and spec, not a list\n"},
		{"spec: {}\n---\nspec: {}\n", "application/yaml", "line 3: must be one document; this is another\n"},
		{`{"name":"x"}`, "application/json", "line 1: spec: is required\n"},
		{"spec: {}", "image/png", "extension: unsupported content type \"image/png\": send the document as JSON or YAML\n"},
	} {
		d, err := extension.DecodeSpec([]byte(c.body), c.ct)
		var docs []extension.Doc
		if err == nil {
			docs = []extension.Doc{d}
		}
		if got := describe(docs, err); got != c.want {
			t.Errorf("DecodeSpec(%q, %q) = %q, want %q", c.body, c.ct, got, c.want)
		}
	}
}

// FuzzDecodeDocs: any bytes give documents or an error, never a panic;
// a JSON text that encoding/json reads as a Doc, DecodeDocs reads alike.
func FuzzDecodeDocs(f *testing.F) {
	a, err := txtar.ParseFile("testdata/decode.txtar")
	if err != nil {
		f.Fatal(err)
	}
	for _, x := range a.Files {
		if strings.HasSuffix(x.Name, ".in") {
			f.Add([]byte(x.Data))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := extension.DecodeDocs(data)
		if err != nil {
			if !errors.Is(err, extension.ErrMalformed) {
				t.Fatalf("%v is not ErrMalformed", err)
			}
			return
		}
		for _, d := range docs {
			if !json.Valid(d.Spec) || d.Spec[0] != '{' {
				t.Fatalf("spec %q is not a JSON object", d.Spec)
			}
		}
		var want extension.Doc
		if json.Unmarshal(data, &want) != nil {
			return
		}
		if len(docs) != 1 {
			t.Fatalf("%d documents from one JSON object", len(docs))
		}
		got := docs[0]
		var ws bytes.Buffer
		if want.Spec != nil {
			_ = json.Compact(&ws, want.Spec)
		}
		if got.Type != want.Type || got.Name != want.Name || !bytes.Equal(got.Spec, ws.Bytes()) ||
			(got.Enabled == nil) != (want.Enabled == nil) || (got.Enabled != nil && *got.Enabled != *want.Enabled) {
			t.Fatalf("DecodeDocs: %+v (spec %s)\nencoding/json: %+v (spec %s)", got, got.Spec, want, ws.Bytes())
		}
	})
}
