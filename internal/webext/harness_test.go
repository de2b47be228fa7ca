package webext_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
	"agentd/internal/webext"
)

// world is a Manager over an in-memory store with the web types
// registered, their built-in seeds reseeded.
type world struct {
	m    *extension.Manager
	st   *memStore
	apps *webext.Apps
}

var (
	person = extension.Who{Provenance: store.ProvenanceUser, By: "user:test"}
	alice  = extension.Who{Provenance: "agent:alice"}
)

// newWorld starts a Manager over st (a new one when nil) with the web
// types and the seeds embedded in the binary, plus the types given
// (an "action" type, say, for widgets to name).
func newWorld(t *testing.T, st *memStore, more ...extension.Type) *world {
	t.Helper()
	if st == nil {
		st = newMemStore()
	}
	w := &world{st: st, apps: webext.NewApps()}
	w.m = extension.New(st, &extension.Options{Builtins: webSeeds(t)})
	types := append([]extension.Type{webext.ThemeType(), webext.RendererType(), webext.WidgetType(w.m),
		webext.ArtifactType(), webext.AppType(w.apps)}, more...)
	for _, typ := range types {
		if err := w.m.Register(typ); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.m.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return w
}

// webSeeds are the embedded seeds of the web types (others' seeds need
// their types).
func webSeeds(t *testing.T) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	for _, typ := range []string{"theme", "renderer"} {
		entries, err := fs.ReadDir(extension.Builtins(), typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			b, err := fs.ReadFile(extension.Builtins(), typ+"/"+e.Name())
			if err != nil {
				t.Fatal(err)
			}
			out[typ+"/"+e.Name()] = &fstest.MapFile{Data: b}
		}
	}
	return out
}

func doc(typ, name, spec string) extension.Doc {
	return extension.Doc{Type: typ, Name: name, Spec: json.RawMessage(spec)}
}

// problems returns the "pointer: message" lines of a validation error,
// nil for no error; another error fails the test.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *extension.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a validation error, got %v", err)
	}
	var out []string
	for _, e := range ve.Errors {
		out = append(out, e.String())
	}
	return out
}

// hasProblemAt reports whether one of the problems is at ptr and says
// want (a part of its message).
func hasProblemAt(got []string, ptr, want string) bool {
	return slices.ContainsFunc(got, func(p string) bool {
		return strings.HasPrefix(p, ptr+": ") && strings.Contains(p, want)
	})
}

// validator returns the schema validator of raw, or skips the test where
// the validator is not built yet (its package answers every document
// with no error).
func validator(t *testing.T, raw []byte) *schema.Schema {
	t.Helper()
	s, err := schema.Compile(raw)
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	if s.Validate("not an object") == nil {
		t.Skip("the schema validator is not built in this tree")
	}
	return s
}

// check runs a type's own checks (its Handler's Checker) on d, without
// its schema.
func check(t *testing.T, typ extension.Type, d extension.Doc) []string {
	t.Helper()
	ck, ok := typ.Handler.(extension.Checker)
	if !ok {
		t.Fatalf("type %s has no checks", typ.Name)
	}
	var out []string
	for _, e := range ck.Check(t.Context(), &d) {
		out = append(out, e.String())
	}
	return out
}

// decode is a JSON text as encoding/json decodes it into any.
func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}
