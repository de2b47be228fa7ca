package agent

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Schema is the JSON Schema of an agent definition (an agent file, or a
// row of type agent), derived from Definition's fields so that the two
// cannot differ: every field by its YAML name, no other key, durations as
// strings ("90s"). What it cannot say (known providers, valid globs,
// positive budgets) the decoder checks (ParseRow).
var Schema = sync.OnceValue(func() json.RawMessage { return TypeSchema(reflect.TypeFor[Definition]()) })

// MCPServerSchema is the JSON Schema of an MCP server's definition
// (MCPServer), derived from its fields as Schema is.
var MCPServerSchema = sync.OnceValue(func() json.RawMessage { return TypeSchema(reflect.TypeFor[MCPServer]()) })

// TypeSchema is the JSON Schema of a struct of this package, with the
// structs it holds in $defs.
func TypeSchema(t reflect.Type) json.RawMessage {
	defs := map[string]any{}
	root := structSchema(t, defs)
	if len(defs) > 0 {
		root["$defs"] = defs
	}
	b, err := json.Marshal(root)
	if err != nil {
		panic(err) // built from Go types: cannot happen
	}
	return b
}

// schemaOf describes t; structs other than Definition go to defs, by name,
// so that a recursive one (Model's fallbacks) is a $ref.
func schemaOf(t reflect.Type, defs map[string]any) map[string]any {
	if t == reflect.TypeFor[Duration]() {
		return map[string]any{"type": "string", "description": "a duration such as 90s, 5m or 1h30m"}
	}
	if t == reflect.TypeFor[Size]() {
		return map[string]any{"type": []string{"string", "integer"}, "description": "a size such as 512MiB, 1GiB or a number of bytes"}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem(), defs)
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), defs)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem(), defs)}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := strings.ToLower(t.Name())
		if _, ok := defs[name]; !ok {
			defs[name] = nil // placeholder: a recursive field refers to it
			defs[name] = structSchema(t, defs)
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	return map[string]any{}
}

// structSchema describes a struct by its YAML fields. Every field may be
// null, as in a file (`skills: null` is a field left out).
func structSchema(t reflect.Type, defs map[string]any) map[string]any {
	props := map[string]any{}
	for name, f := range yamlFields(t) {
		props[name] = nullable(schemaOf(f.Type, defs))
	}
	return map[string]any{"type": "object", "properties": props, "additionalProperties": false}
}

// nullable lets s be null too.
func nullable(s map[string]any) map[string]any {
	switch typ := s["type"].(type) {
	case string:
		s["type"] = []string{typ, "null"}
		return s
	case nil:
		if _, ok := s["$ref"]; ok {
			return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
	}
	return s // no type: anything, null included
}
