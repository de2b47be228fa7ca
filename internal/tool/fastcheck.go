package tool

import (
	"encoding/json"
	"math"
	"slices"
	"unicode/utf8"
)

// fastSchema checks the common subset of JSON Schema that tool schemas use
// (types, properties, required, additionalProperties, items, enum, const,
// numeric and length bounds) without the general validator's cost. It only
// ever answers "valid": on any doubt the general validator decides, and
// gives the error message. compileFast returns nil for a schema that uses
// anything else ($ref, combinators, patterns, ...).
type fastSchema struct {
	types      []string // empty: any
	props      map[string]*fastSchema
	required   []string
	addl       *fastSchema // nil: any additional property
	noAddl     bool        // additionalProperties: false
	items      *fastSchema
	enum       []any
	hasConst   bool
	constVal   any
	min, max   *float64
	xmin, xmax *float64
	minLen     int
	maxLen     int // -1: none
	minItems   int
	maxItems   int // -1: none
}

// annotation keywords that do not affect validation.
var annotations = map[string]bool{"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "format": true, "readOnly": true, "writeOnly": true, "deprecated": true}

// plainSchema returns the fast checker of an input schema that is sure to
// compile for the general validator too, and nil for any other: an object
// schema written only with the keywords the fast checker knows, of the
// JSON types they take, with valid type names, and no annotations but a
// title, a description and a format (a default must itself be valid, and
// $schema and $id are checked). Register compiles only the others at once.
// FuzzPlainSchema holds it to the general validator.
func plainSchema(raw json.RawMessage) *fastSchema {
	if len(raw) == 0 || string(raw) == "null" {
		return compileFast(raw)
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil || !plainNode(m, true) {
		return nil
	}
	return compileNode(m)
}

// plainNode reports whether the schema m uses only what plainSchema
// allows; top says it is the whole schema, which must be of objects.
func plainNode(m map[string]any, top bool) bool {
	for k, v := range m {
		switch k {
		case "type":
			names := []any{v}
			if list, ok := v.([]any); ok {
				names = list
			}
			seen := map[string]bool{}
			object := false
			for _, n := range names {
				s, ok := n.(string)
				if !ok || !slices.Contains(jsonTypes, s) || seen[s] {
					return false
				}
				seen[s], object = true, object || s == "object"
			}
			if len(names) == 0 || top && !object {
				return false
			}
		case "properties":
			pm, ok := v.(map[string]any)
			if !ok {
				return false
			}
			for _, sub := range pm {
				sm, ok := sub.(map[string]any)
				if !ok || !plainNode(sm, false) {
					return false
				}
			}
		case "additionalProperties", "items":
			if sm, ok := v.(map[string]any); ok {
				if !plainNode(sm, false) {
					return false
				}
			} else if _, ok := v.(bool); !ok || k == "items" {
				return false
			}
		case "title", "description", "format":
			if _, ok := v.(string); !ok {
				return false
			}
		case "required", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
			"minLength", "maxLength", "minItems", "maxItems":
			// compileNode checks their values
		default:
			return false
		}
	}
	return true
}

func compileFast(raw json.RawMessage) *fastSchema {
	if len(raw) == 0 || string(raw) == "null" {
		return &fastSchema{types: []string{"object"}, maxLen: -1, maxItems: -1}
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return compileNode(m)
}

func compileNode(m map[string]any) *fastSchema {
	s := &fastSchema{maxLen: -1, maxItems: -1}
	num := func(v any) (*float64, bool) {
		f, ok := v.(float64)
		return &f, ok
	}
	count := func(v any) (int, bool) {
		f, ok := v.(float64)
		return int(f), ok && f >= 0 && f == math.Trunc(f) && f < 1<<31
	}
	var ok bool
	for k, v := range m {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				s.types = []string{t}
			case []any:
				if len(t) == 0 {
					return nil // the general validator decides what [] means
				}
				for _, x := range t {
					str, isStr := x.(string)
					if !isStr {
						return nil
					}
					s.types = append(s.types, str)
				}
			default:
				return nil
			}
		case "properties":
			pm, isMap := v.(map[string]any)
			if !isMap {
				return nil
			}
			s.props = make(map[string]*fastSchema, len(pm))
			for name, sub := range pm {
				sm, isMap := sub.(map[string]any)
				if !isMap {
					return nil
				}
				if s.props[name] = compileNode(sm); s.props[name] == nil {
					return nil
				}
			}
		case "required":
			list, isList := v.([]any)
			if !isList {
				return nil
			}
			for _, x := range list {
				str, isStr := x.(string)
				if !isStr {
					return nil
				}
				s.required = append(s.required, str)
			}
		case "additionalProperties":
			switch a := v.(type) {
			case bool:
				s.noAddl = !a
			case map[string]any:
				if s.addl = compileNode(a); s.addl == nil {
					return nil
				}
			default:
				return nil
			}
		case "items":
			im, isMap := v.(map[string]any)
			if !isMap {
				return nil
			}
			if s.items = compileNode(im); s.items == nil {
				return nil
			}
		case "enum":
			if s.enum, ok = v.([]any); !ok {
				return nil
			}
		case "const":
			s.hasConst, s.constVal = true, v
		case "minimum":
			if s.min, ok = num(v); !ok {
				return nil
			}
		case "maximum":
			if s.max, ok = num(v); !ok {
				return nil
			}
		case "exclusiveMinimum":
			if s.xmin, ok = num(v); !ok {
				return nil
			}
		case "exclusiveMaximum":
			if s.xmax, ok = num(v); !ok {
				return nil
			}
		case "minLength":
			if s.minLen, ok = count(v); !ok {
				return nil
			}
		case "maxLength":
			if s.maxLen, ok = count(v); !ok {
				return nil
			}
		case "minItems":
			if s.minItems, ok = count(v); !ok {
				return nil
			}
		case "maxItems":
			if s.maxItems, ok = count(v); !ok {
				return nil
			}
		default:
			if !annotations[k] {
				return nil
			}
		}
	}
	return s
}

// valid reports whether v (decoded by encoding/json) is valid; false means
// "not sure", not "invalid".
func (s *fastSchema) valid(v any) bool {
	if len(s.types) > 0 && !slices.ContainsFunc(s.types, func(t string) bool { return hasType(v, t) }) {
		return false
	}
	if s.enum != nil && !slices.ContainsFunc(s.enum, func(e any) bool { return jsonEqual(e, v) }) {
		return false
	}
	if s.hasConst && !jsonEqual(s.constVal, v) {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.required {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, pv := range x {
			if ps, ok := s.props[k]; ok {
				if !ps.valid(pv) {
					return false
				}
			} else if s.noAddl || s.addl != nil && !s.addl.valid(pv) {
				return false
			}
		}
	case []any:
		if len(x) < s.minItems || s.maxItems >= 0 && len(x) > s.maxItems {
			return false
		}
		if s.items != nil {
			for _, it := range x {
				if !s.items.valid(it) {
					return false
				}
			}
		}
	case string:
		if s.minLen > 0 || s.maxLen >= 0 {
			n := utf8.RuneCountInString(x)
			if n < s.minLen || s.maxLen >= 0 && n > s.maxLen {
				return false
			}
		}
	case float64:
		if s.min != nil && x < *s.min || s.max != nil && x > *s.max ||
			s.xmin != nil && x <= *s.xmin || s.xmax != nil && x >= *s.xmax {
			return false
		}
	}
	return true
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f) && !math.IsInf(f, 0)
	}
	return false
}

// jsonEqual compares decoded JSON values for enum and const. Only scalars
// are compared here; anything else is left to the general validator.
func jsonEqual(a, b any) bool {
	switch a.(type) {
	case string, float64, bool, nil:
		return a == b
	}
	return false
}
