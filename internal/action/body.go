package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// bodyTemplate is a JSON template: the body's JSON with every string
// parsed as a template.
type bodyTemplate struct {
	root any // nil, bool, json.Number, template, []any, map[string]any
}

// parseBody parses a body template.
func parseBody(raw json.RawMessage) (*bodyTemplate, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errors.New("not JSON")
	}
	root, err := compileBody(v)
	if err != nil {
		return nil, err
	}
	return &bodyTemplate{root: root}, nil
}

func compileBody(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return parseTemplate(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := compileBody(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := compileBody(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	}
	return v, nil
}

// refs returns the body's references.
func (b *bodyTemplate) refs() []path {
	var out []path
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case template:
			out = append(out, x.refs()...)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(b.root)
	return out
}

// fill returns the body for the arguments args: a string that is exactly
// one reference takes the argument's JSON value (a number stays a
// number; an absent argument leaves its member out of an object and is
// null in an array); inside a longer string, the value's text.
func (b *bodyTemplate) fill(args any) ([]byte, error) {
	v, _ := fillBody(b.root, args)
	return json.Marshal(v)
}

// fillBody fills v; ok is false for a whole reference to nothing.
func fillBody(v any, args any) (any, bool) {
	switch x := v.(type) {
	case template:
		if r, ok := x.whole(); ok {
			return r.lookup(args)
		}
		var sb strings.Builder
		x.fill(&sb, args, nil)
		return sb.String(), true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i], _ = fillBody(e, args)
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if f, ok := fillBody(e, args); ok {
				out[k] = f
			}
		}
		return out, true
	}
	return v, true
}
