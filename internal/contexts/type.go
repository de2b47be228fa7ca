package contexts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/prompt"
	"agentd/internal/schema"
)

// ctype is an active context type: its spec with its schemas compiled.
type ctype struct {
	name    string
	spec    *Spec
	args    *schema.Schema // nil: any object
	state   *schema.Schema // nil: any object
	initial map[string]any // never nil
	budgets *agent.Budgets
}

// compile compiles a spec's schemas and checks its initial state; the
// errors point into the row ("/spec/state_schema/…").
func compile(name string, s *Spec) (*ctype, []schema.Error) {
	t := &ctype{name: name, spec: s, initial: map[string]any{}}
	var errs []schema.Error
	add := func(ptr, format string, args ...any) {
		errs = append(errs, schema.Error{Pointer: "/spec" + ptr, Message: fmt.Sprintf(format, args...)})
	}
	var err error
	if len(s.ArgsSchema) > 0 {
		if t.args, err = schema.Compile(s.ArgsSchema); err != nil {
			add("/args_schema", "%v", err)
		}
	}
	if len(s.StateSchema) > 0 {
		if t.state, err = schema.Compile(s.StateSchema); err != nil {
			add("/state_schema", "%v", err)
		}
	}
	if len(s.InitialState) > 0 {
		if t.initial, err = object(s.InitialState); err != nil {
			add("/initial_state", "%v", err)
			t.initial = map[string]any{}
		}
	}
	if t.state != nil {
		errs = append(errs, schema.Under("/spec/initial_state", t.state.Validate(t.initial))...)
	}
	if t.budgets, err = s.Budget.Budgets(); err != nil {
		add("/budget/max_wall_time", "%v", err)
	}
	return t, errs
}

// object decodes a JSON object, numbers as json.Number.
func object(raw json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("want a JSON object, not %s", te.Value)
		}
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("want a JSON object, not null")
	}
	return m, nil
}

// properties are the top-level properties a schema declares; nil for a
// schema that declares none.
func properties(raw json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkRefs checks that a key template refers only to declared args, and
// a render or a use's args only to args.X and state.X of declared
// properties (or args/state whole).
func (t *ctype) checkRefs(add func(ptr, format string, args ...any)) {
	argProps, stateProps := properties(t.spec.ArgsSchema), properties(t.spec.StateSchema)
	for _, ref := range prompt.Refs(t.spec.Key) {
		if first, _, _ := strings.Cut(ref, "."); !slices.Contains(argProps, first) {
			add("/key", "{{%s}} is not a property of args_schema (its properties: %v)", ref, argProps)
		}
	}
	scoped := func(ptr, tmpl string) {
		for _, ref := range prompt.Refs(tmpl) {
			parts := strings.Split(ref, ".")
			var props []string
			switch parts[0] {
			case "args":
				props = argProps
			case "state":
				props = stateProps
			default:
				add(ptr, "{{%s}}: a reference begins with args. or state. ({{args.userId}}, {{state.notes}})", ref)
				continue
			}
			if len(parts) > 1 && !slices.Contains(props, parts[1]) {
				add(ptr, "{{%s}}: %q is not a property of %s_schema (its properties: %v)", ref, parts[1], parts[0], props)
			}
		}
	}
	scoped("/render", t.spec.Render)
	for i, u := range t.spec.Use {
		for _, k := range sortedKeys(u.Args) {
			scoped(fmt.Sprintf("/use/%d/args/%s", i, schema.Escape(k)), u.Args[k])
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
