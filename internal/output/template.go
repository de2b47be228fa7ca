package output

import (
	"encoding/json"
	"fmt"
	"strings"

	"agentd/internal/prompt"
)

// Fill returns a handler's args template with the content's values in
// place of its references ({{content}}, {{content.x.y}}): a string that is one reference alone
// becomes that JSON value, a reference inside a longer string its text (a
// string as it is, any other value as JSON). A reference the content does
// not have is an error.
func Fill(args, content json.RawMessage) (json.RawMessage, error) {
	tmpl, err := decode(args)
	if err != nil {
		return nil, fmt.Errorf("handler args: %w", err)
	}
	c, err := decode(content)
	if err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	v, err := fill(tmpl, c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// fill fills v's strings, recursively.
func fill(v, content any) (any, error) {
	switch t := v.(type) {
	case string:
		return fillString(t, content)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			y, err := fill(x, content)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			y, err := fill(x, content)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	return v, nil
}

// fillString fills one string of the template.
func fillString(s string, content any) (any, error) {
	refs := prompt.Refs(s)
	if len(refs) == 0 {
		return s, nil
	}
	if len(refs) == 1 && strings.Count(s, "{{") == 1 && prompt.Fill(s, func(string) (string, bool) { return "", true }) == "" {
		return lookup(refs[0], content)
	}
	var ferr error
	out := prompt.Fill(s, func(name string) (string, bool) {
		v, err := lookup(name, content)
		if err != nil {
			ferr = err
			return "", false
		}
		if str, ok := v.(string); ok {
			return str, true
		}
		b, _ := json.Marshal(v)
		return string(b), true
	})
	return out, ferr
}

// lookup returns the value a reference names in content.
func lookup(ref string, content any) (any, error) {
	if !isContentRef(ref) {
		return nil, fmt.Errorf("{{%s}}: a handler's arguments refer only to the content", ref)
	}
	v := content
	parts := strings.Split(ref, ".")[1:]
	for i, p := range parts {
		switch t := v.(type) {
		case map[string]any:
			x, ok := t[p]
			if !ok {
				return nil, fmt.Errorf("{{%s}}: the content has no %s", ref, strings.Join(parts[:i+1], "."))
			}
			v = x
		default:
			return nil, fmt.Errorf("{{%s}}: the content has no %s", ref, strings.Join(parts[:i+1], "."))
		}
	}
	return v, nil
}

// isContentRef reports whether ref is {{content}} or under it.
func isContentRef(ref string) bool {
	return ref == "content" || strings.HasPrefix(ref, "content.")
}

// argRefs lists the references in a handler's args template.
func argRefs(args json.RawMessage) []string {
	v, err := decode(args)
	if err != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			out = append(out, prompt.Refs(t)...)
		case map[string]any:
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}
