package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

var fastCases = []struct {
	schema string
	values []string
}{
	{`{"type":"object","properties":{"q":{"type":"string","minLength":2,"maxLength":4}},"required":["q"],"additionalProperties":false}`,
		[]string{`{"q":"ab"}`, `{"q":"a"}`, `{"q":"abcde"}`, `{"q":"日本"}`, `{}`, `{"q":"ab","x":1}`, `{"q":3}`}},
	{`{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":10},"f":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}}}`,
		[]string{`{"n":1}`, `{"n":0}`, `{"n":10}`, `{"n":11}`, `{"n":1.5}`, `{"f":0}`, `{"f":0.5}`, `{"f":1}`, `{"n":"1"}`}},
	{`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2}}}`,
		[]string{`{"tags":["a"]}`, `{"tags":[]}`, `{"tags":["a","b","c"]}`, `{"tags":[1]}`, `{"tags":"a"}`}},
	{`{"type":"object","properties":{"u":{"enum":["c","f",null]},"k":{"const":3},"b":{"type":["boolean","null"]}}}`,
		[]string{`{"u":"c"}`, `{"u":"k"}`, `{"u":null}`, `{"k":3}`, `{"k":4}`, `{"b":true}`, `{"b":null}`, `{"b":0}`}},
	{`{"type":"object","additionalProperties":{"type":"number"}}`,
		[]string{`{"a":1,"b":2}`, `{"a":"x"}`}},
	{`{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}}}`,
		[]string{`{"o":{"x":"y"}}`, `{"o":{}}`, `{"o":[]}`}},
}

// The fast path may only say "valid" where the general validator agrees,
// and it should say so for the common valid cases.
func TestFastSchemaAgrees(t *testing.T) {
	for _, c := range fastCases {
		fast := compileFast(json.RawMessage(c.schema))
		if fast == nil {
			t.Fatalf("%s: not compiled", c.schema)
		}
		full, err := compileSchema(json.RawMessage(c.schema))
		if err != nil {
			t.Fatal(err)
		}
		for _, val := range c.values {
			var v any
			json.Unmarshal([]byte(val), &v)
			f, g := fast.valid(v), full.Validate(v) == nil
			if f != g {
				t.Errorf("schema %s value %s: fast %v, full %v", c.schema, val, f, g)
			}
		}
	}
}

func TestFastSchemaFallsBack(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`,
		`{"anyOf":[{"type":"object"}]}`,
		`{"type":"object","properties":{"s":{"type":"string","pattern":"^a"}}}`,
		`{"type":"object","properties":{"n":{"type":"number","multipleOf":0.5}}}`,
		`{"type":"object","properties":{"x":{"type":[]}}}`,
	} {
		if compileFast(json.RawMessage(s)) != nil {
			t.Errorf("%s: compiled, want the general validator", s)
		}
	}
	// A structured enum value is left to the general validator.
	f := compileFast(json.RawMessage(`{"type":"object","properties":{"e":{"enum":[[1]]}}}`))
	if f == nil || f.valid(map[string]any{"e": []any{1.0}}) {
		t.Error("the fast path decided a structured enum value")
	}
}

// FuzzFastSchema checks soundness: whatever the fast path accepts, the
// general validator accepts too.
func FuzzFastSchema(f *testing.F) {
	for _, c := range fastCases {
		for _, v := range c.values {
			f.Add(c.schema, v)
		}
	}
	f.Fuzz(func(t *testing.T, schema, value string) {
		fast := compileFast(json.RawMessage(schema))
		if fast == nil {
			return
		}
		full, err := compileSchema(json.RawMessage(schema))
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		if fast.valid(v) {
			if err := full.Validate(v); err != nil {
				t.Fatalf("schema %s value %s: fast path accepted, validator says %v", schema, value, err)
			}
		}
	})
}

// plainCases are schemas Register may leave uncompiled, and ones it must
// compile at once.
var plainCases = []struct {
	schema string
	plain  bool
}{
	{``, true},
	{`{"type":"object"}`, true},
	{`{"type":["object","null"],"title":"t","description":"d","properties":{"a":{"type":"string","format":"date"}}}`, true},
	{`{"properties":{"a":{"type":"array","items":{"type":"integer"}}},"additionalProperties":false}`, true},
	{`{"type":"string"}`, false},
	{`{"type":"object","properties":{"a":{"type":"strng"}}}`, false},
	{`{"type":"object","properties":{"a":{"type":"string","default":3}}}`, false},
	{`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`, false},
	{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`, false},
	{`{"type":"object","title":5}`, false},
	{`{"type":["object","object"]}`, false},
	{`{"type":"object","items":true}`, false},
}

func TestPlainSchema(t *testing.T) {
	for _, c := range plainCases {
		if got := plainSchema(json.RawMessage(c.schema)) != nil; got != c.plain {
			t.Errorf("%s: plain %v, want %v", c.schema, got, c.plain)
		}
	}
}

// FuzzPlainSchema checks that a schema Register leaves uncompiled (see
// plainSchema) compiles for the general validator: Register would not
// have refused it.
func FuzzPlainSchema(f *testing.F) {
	for _, c := range plainCases {
		f.Add(c.schema)
	}
	for _, c := range fastCases {
		f.Add(c.schema)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		if plainSchema(json.RawMessage(schema)) == nil {
			return
		}
		if _, err := compileSchema(json.RawMessage(schema)); err != nil {
			t.Errorf("%s: plain, but it does not compile: %v", schema, err)
		}
	})
}

// Register leaves a plain schema uncompiled for the general validator (the
// fast checker answers every valid call) and compiles it when a call with
// bad arguments first needs its error message; any other schema is
// compiled at once.
func TestRegisterCompilesOnFirstNeed(t *testing.T) {
	r := NewRegistry(nil)
	noop := func(context.Context, *Call) (Result, error) { return Result{Output: "ok"}, nil }
	plain := `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`
	other := `{"type":"object","properties":{"q":{"type":"string","pattern":"^a"}}}`
	for name, schema := range map[string]string{"plain": plain, "other": other} {
		if err := r.Register(Func(Spec{Name: name, InputSchema: json.RawMessage(schema)}, noop)); err != nil {
			t.Fatal(err)
		}
	}
	compiled := func(name string) bool { return r.snap.Load().byName[name].schema != nil }
	if compiled("plain") || !compiled("other") {
		t.Fatalf("after Register: plain compiled %v, other compiled %v", compiled("plain"), compiled("other"))
	}
	ctx := context.Background()
	if out := r.Run(ctx, &Call{Name: "plain", Args: json.RawMessage(`{"q":"x"}`)}, nil); out.Result.IsError || compiled("plain") {
		t.Fatalf("a valid call: %+v; compiled %v", out.Result, compiled("plain"))
	}
	out := r.Run(ctx, &Call{Name: "plain", Args: json.RawMessage(`{"q":3}`)}, nil)
	if !out.Result.IsError || !strings.Contains(out.Result.Output, "q") || !compiled("plain") {
		t.Errorf("a bad call: %+v; compiled %v", out.Result, compiled("plain"))
	}
}
