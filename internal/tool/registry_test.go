package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/tool"
)

// echo returns its call's arguments as its output.
func echo(name, schema string) tool.Tool {
	return tool.Func(tool.Spec{Name: name, InputSchema: json.RawMessage(schema)},
		func(_ context.Context, c *tool.Call) (tool.Result, error) {
			return tool.Result{Output: string(c.Args)}, nil
		})
}

func TestRegisterErrors(t *testing.T) {
	tests := []struct {
		name   string
		tool   tool.Tool
		want   error
		substr string
	}{
		{name: "nil tool", tool: nil, want: tool.ErrInvalidName},
		{name: "empty name", tool: echo("", ""), want: tool.ErrInvalidName},
		{name: "space in name", tool: echo("get time", ""), want: tool.ErrInvalidName},
		{name: "dot in name", tool: echo("web.fetch", ""), want: tool.ErrInvalidName},
		{name: "non-ASCII name", tool: echo("naïve", ""), want: tool.ErrInvalidName},
		{name: "name too long", tool: echo(strings.Repeat("a", 65), ""), want: tool.ErrInvalidName},
		{name: "unknown kind", tool: tool.Func(tool.Spec{Name: "k", Kind: "sometimes"}, nil), want: tool.ErrInvalidKind},
		{name: "schema not JSON", tool: echo("s", `{"type":`), want: tool.ErrBadSchema},
		{name: "schema not an object schema", tool: echo("s", `{"type":"string"}`), want: tool.ErrBadSchema, substr: `"string"`},
		{name: "schema types without object", tool: echo("s", `{"type":["string","null"]}`), want: tool.ErrBadSchema},
		{name: "unknown nested type", tool: echo("s", `{"type":"object","properties":{"a":{"type":"strng"}}}`), want: tool.ErrBadSchema, substr: `#/properties/a: unknown type "strng"`},
		{name: "unknown type in items", tool: echo("s", `{"properties":{"a":{"type":"array","items":{"type":"int"}}}}`), want: tool.ErrBadSchema, substr: `#/properties/a/items: unknown type "int"`},
		{name: "bad regexp", tool: echo("s", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`), want: tool.ErrBadSchema},
		{name: "default of the wrong type", tool: echo("s", `{"type":"object","properties":{"a":{"type":"string","default":3}}}`), want: tool.ErrBadSchema},
		{name: "remote reference", tool: echo("s", `{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`), want: tool.ErrBadSchema},
		{name: "dangling reference", tool: echo("s", `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`), want: tool.ErrBadSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tool.NewRegistry(nil).Register(tt.tool)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Register: got %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.substr) {
				t.Errorf("Register: %q does not mention %q", err, tt.substr)
			}
		})
	}
}

func TestRegisterAcceptsSchemas(t *testing.T) {
	for _, schema := range []string{
		``,
		`null`,
		` {} `,
		`{"type":"object"}`,
		`{"type":["object","null"]}`,
		`{"properties":{"a":{"type":"integer"}}}`,
		`{"type":"object","$defs":{"n":{"type":"number"}},"properties":{"a":{"$ref":"#/$defs/n"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"n":{"type":"number"}},"properties":{"a":{"$ref":"#/definitions/n"}}}`,
	} {
		if err := tool.NewRegistry(nil).Register(echo("t", schema)); err != nil {
			t.Errorf("Register with schema %q: %v", schema, err)
		}
	}
}

func TestRegistryLookup(t *testing.T) {
	r := tool.NewRegistry(nil)
	for _, name := range []string{"zeta", "alpha", "mid-1", "Mid_0"} {
		if err := r.Register(echo(name, "")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Register(echo("alpha", "")); !errors.Is(err, tool.ErrDuplicate) {
		t.Errorf("second alpha: got %v, want ErrDuplicate", err)
	}
	if got, want := specNames(r.Specs()), []string{"Mid_0", "alpha", "mid-1", "zeta"}; !cmp.Equal(got, want) {
		t.Errorf("Specs names: %v", cmp.Diff(want, got))
	}
	if tl, ok := r.Get("mid-1"); !ok || tl.Spec().Name != "mid-1" {
		t.Errorf("Get(mid-1) = %v, %v", tl, ok)
	}
	if _, ok := r.Get("nope"); ok {
		t.Error("Get(nope) found a tool")
	}
	if !r.Unregister("alpha") {
		t.Error("Unregister(alpha) = false")
	}
	if r.Unregister("alpha") {
		t.Error("second Unregister(alpha) = true")
	}
	if _, ok := r.Get("alpha"); ok {
		t.Error("alpha still registered")
	}
	if err := r.Register(echo("alpha", "")); err != nil {
		t.Errorf("register alpha again: %v", err)
	}
	if got, want := specNames(r.Specs()), []string{"Mid_0", "alpha", "mid-1", "zeta"}; !cmp.Equal(got, want) {
		t.Errorf("Specs names: %v", cmp.Diff(want, got))
	}
}

func TestSpecsAreCopies(t *testing.T) {
	r := tool.NewRegistry(nil)
	if err := r.Register(echo("a", "")); err != nil {
		t.Fatal(err)
	}
	s := r.Specs()
	s[0].Name = "changed"
	if got := r.Specs()[0].Name; got != "a" {
		t.Errorf("after changing a returned spec, Specs()[0].Name = %q", got)
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := tool.NewRegistry(nil)
	if err := r.Register(echo("stable", "")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				name := fmt.Sprintf("t%d_%d", w, i)
				if err := r.Register(echo(name, "")); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					r.Unregister(name)
				}
			}
		})
		wg.Go(func() {
			for range 200 {
				out := r.Run(t.Context(), &tool.Call{Name: "stable", Args: json.RawMessage(`{"a":1}`)}, nil)
				if out.Result.IsError || out.Result.Output != `{"a":1}` {
					t.Errorf("Run(stable) = %+v", out)
					return
				}
				r.Specs()
				r.Visible(tool.Policy{})
			}
		})
	}
	wg.Wait()
	if got := len(r.Specs()); got != 1+4*25 {
		t.Errorf("%d tools registered, want %d", got, 1+4*25)
	}
}

func specNames(specs []tool.Spec) []string {
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names
}
