package tool

import (
	"encoding/json"
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
