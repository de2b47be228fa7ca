package action

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/tool"
)

// Activating a new version replaces the tool in one step; a version that
// fails keeps the previous one; a name another tool has is refused;
// deactivating removes the tool.
func TestActivateLifecycle(t *testing.T) {
	srv, _ := recorder(t, jsonAnswer(`{"v": "server"}`))
	hs := newHarness(t, local)
	if err := hs.reg.Register(tool.Func(tool.Spec{Name: "clock"}, nil)); err != nil {
		t.Fatal(err)
	}
	v1 := `{"description": "one", "url": "$URL/1", "extract": {"template": "v1 {{v}}"}, "allow_hosts": ["$HOST"]}`
	v2 := `{"description": "two", "url": "$URL/2", "extract": {"template": "v2 {{v}}"}, "read_only": true, "idempotent": true, "input": {"type": "object", "properties": {"q": {"type": "string"}}}, "allow_hosts": ["$HOST"]}`
	hs.mustActivate("weather", v1, srv)
	if res := hs.call("weather", `{}`); res.Output != "v1 server" {
		t.Fatalf("v1: %+v", res)
	}
	spec := func() tool.Spec { tl, _ := hs.reg.Get("weather"); return tl.Spec() }
	if s := spec(); !s.Risky || s.ReadOnly || s.Description != "one" || string(s.InputSchema) != noInput {
		t.Errorf("v1 spec: %+v", s)
	}
	hs.mustActivate("weather", v2, srv)
	if res := hs.call("weather", `{"q": "x"}`); res.Output != "v2 server" {
		t.Fatalf("v2: %+v", res)
	}
	if s := spec(); !s.Risky || !s.ReadOnly || !s.Idempotent || s.Description != "two" {
		t.Errorf("v2 spec: %+v", s)
	}
	// A version that fails to activate leaves v2 active.
	if err := hs.activate("weather", `{"description": "three", "url": "http://10.0.0.1/", "allow_hosts": ["10.0.0.1"]}`, srv); err == nil {
		t.Fatal("a blocked URL activated")
	}
	if res := hs.call("weather", `{}`); res.Output != "v2 server" {
		t.Fatalf("after a failed activation: %+v", res)
	}
	// Another tool's name is not taken.
	if err := hs.activate("clock", v1, srv); err == nil || !strings.Contains(err.Error(), "a tool named clock exists already") {
		t.Errorf("activate over a built-in tool: %v", err)
	}
	if tl, _ := hs.reg.Get("clock"); tl.Spec().Description != "" {
		t.Errorf("the built-in clock was replaced: %+v", tl.Spec())
	}
	// Deactivating removes the tool; the built-in one of another name stays.
	for range 2 {
		if err := hs.h.Deactivate(context.Background(), "weather"); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := hs.reg.Get("weather"); ok {
		t.Error("weather is still registered")
	}
	if err := hs.h.Deactivate(context.Background(), "clock"); err != nil {
		t.Fatal(err)
	}
	if _, ok := hs.reg.Get("clock"); !ok {
		t.Error("deactivating an action named clock removed the built-in clock")
	}
	// Active again after being deactivated.
	hs.mustActivate("weather", v1, srv)
	if res := hs.call("weather", `{}`); res.Output != "v1 server" {
		t.Fatalf("reactivated: %+v", res)
	}
}

// The schema names exactly Spec's fields and uses only the keywords the
// extension schema subset has.
func TestSchema(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(Schema, &s); err != nil {
		t.Fatal(err)
	}
	var props []string
	for k := range s["properties"].(map[string]any) {
		props = append(props, k)
	}
	var fields []string
	for f := range reflect.TypeFor[Spec]().Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields = append(fields, name)
	}
	slices.Sort(props)
	slices.Sort(fields)
	if d := cmp.Diff(fields, props); d != "" {
		t.Errorf("Spec's fields (-) and the schema's properties (+):\n%s", d)
	}
	subset := []string{"type", "properties", "required", "additionalProperties", "propertyNames", "patternProperties",
		"items", "minItems", "maxItems", "enum", "const", "minimum", "maximum", "minLength", "maxLength", "pattern",
		"$ref", "$defs", "anyOf", "oneOf", "allOf", "title", "description", "default", "examples"}
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, sub := range m {
			if !slices.Contains(subset, k) && !strings.HasPrefix(k, "x-") {
				t.Errorf("%s: keyword %q is outside the subset", ptr, k)
			}
			switch k {
			case "properties", "patternProperties", "$defs":
				for name, p := range sub.(map[string]any) {
					walk(ptr+"/"+k+"/"+name, p)
				}
			case "anyOf", "oneOf", "allOf":
				for i, p := range sub.([]any) {
					walk(ptr+"/"+k+"/"+string(rune('0'+i)), p)
				}
			case "items", "additionalProperties", "propertyNames":
				walk(ptr+"/"+k, sub)
			}
		}
	}
	walk("", s)
}
