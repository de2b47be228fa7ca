package contexts

import (
	"encoding/json"
	"strings"

	"agentd/internal/prompt"
)

// Templates are package prompt's: {{name}} references with dotted names.
// A key's names are the args' properties (chat:{{userId}}); a render's
// and a use's args' begin with "args" or "state" ({{state.notes}}).

// fill returns tmpl with each reference replaced by the text of its value
// in vars, and the references that have no value.
func fill(tmpl string, vars map[string]any) (string, []string) {
	var missing []string
	out := prompt.Fill(tmpl, func(name string) (string, bool) {
		v, ok := lookup(vars, strings.Split(name, "."))
		if !ok {
			missing = append(missing, name)
			return "", false
		}
		return text(v), true
	})
	return out, missing
}

// whole returns the name of the one reference tmpl is, spaces aside.
func whole(tmpl string) (string, bool) {
	refs := prompt.Refs(tmpl)
	if len(refs) != 1 {
		return "", false
	}
	t := strings.TrimSpace(tmpl)
	if !strings.HasPrefix(t, "{{") || !strings.HasSuffix(t, "}}") || strings.TrimSpace(t[2:len(t)-2]) != refs[0] {
		return "", false
	}
	return refs[0], true
}

// lookup walks path through nested objects.
func lookup(v any, path []string) (any, bool) {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

// text is a value as a template inserts it: a string as it is, anything
// else as compact JSON.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
