package extension

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"agentd/internal/schema"
	"agentd/internal/store"
)

// Arm is one kind of document of a union type: If (a JSON Schema) says
// whether a spec is of it; the last arm has no If and takes the rest.
type Arm struct {
	If   json.RawMessage
	Type Type
}

// Union is one type made of arms, so that one type name (integration)
// holds documents of several owners (an MCP server, a chat platform): its
// schema is if/then/else over the arms' schemas; Check, Activate,
// Machine and Actor go to the spec's arm, Deactivate to the arm the name
// is active in. A row whose spec moves from one arm to another is
// deactivated in the old arm first. PersonEnables and Shared are the OR of
// the arms'. It panics on arms that do not compile (they are built into
// the binary).
func Union(name, summary string, arms ...Arm) Type {
	u := &union{arms: make([]unionArm, len(arms)), active: map[string]int{}}
	t := Type{Name: name, Summary: summary, Handler: u}
	for i, a := range arms {
		if (a.If == nil) != (i == len(arms)-1) {
			panic("extension: union " + name + ": every arm but the last has an If")
		}
		if a.If != nil {
			s, err := schema.Compile(a.If)
			if err != nil {
				panic(fmt.Sprintf("extension: union %s: arm %s: %v", name, a.Type.Name, err))
			}
			u.arms[i].when = s
		}
		u.arms[i].t = a.Type
		t.PersonEnables = t.PersonEnables || a.Type.PersonEnables
		t.Shared = t.Shared || a.Type.Shared
	}
	t.Schema = unionSchema(name, arms)
	t.Machine = func(spec json.RawMessage) bool {
		a := u.arm(spec)
		return a.Machine != nil && a.Machine(spec)
	}
	t.Actor = func(spec json.RawMessage) []string {
		if a := u.arm(spec); a.Actor != nil {
			return a.Actor(spec)
		}
		return nil
	}
	return t
}

type unionArm struct {
	when *schema.Schema // nil: the last arm
	t    Type
}

// union is a Union's handler. Activations of one type are one at a time
// (Handler), so mu only guards active against readers elsewhere.
type union struct {
	arms   []unionArm
	mu     sync.Mutex
	active map[string]int // name → the arm it is active in
}

// which returns the index of spec's arm.
func (u *union) which(spec json.RawMessage) int {
	var v any
	if err := json.Unmarshal(spec, &v); err == nil {
		for i, a := range u.arms {
			if a.when != nil && len(a.when.Validate(v)) == 0 {
				return i
			}
		}
	}
	return len(u.arms) - 1
}

func (u *union) arm(spec json.RawMessage) Type { return u.arms[u.which(spec)].t }

// Check runs the spec's arm's checks.
func (u *union) Check(ctx context.Context, d *Doc) []schema.Error {
	if ck, ok := u.arm(d.Spec).Handler.(Checker); ok {
		return ck.Check(ctx, d)
	}
	return nil
}

// CheckWriter runs the spec's arm's writer checks.
func (u *union) CheckWriter(ctx context.Context, d *Doc, writer string, created bool) error {
	if wc, ok := u.arm(d.Spec).Handler.(WriterChecker); ok {
		return wc.CheckWriter(ctx, d, writer, created)
	}
	return nil
}

// Activate activates e in its spec's arm, after deactivating it in the
// arm it was active in when that is another.
func (u *union) Activate(ctx context.Context, e *store.Extension) error {
	i := u.which(e.Spec)
	u.mu.Lock()
	prev, was := u.active[e.Name]
	u.mu.Unlock()
	if was && prev != i {
		if err := u.deactivateIn(ctx, prev, e.Name); err != nil {
			return err
		}
	}
	if h := u.arms[i].t.Handler; h != nil {
		if err := h.Activate(ctx, e); err != nil {
			return err
		}
	}
	u.mu.Lock()
	u.active[e.Name] = i
	u.mu.Unlock()
	return nil
}

// Deactivate deactivates name in the arm it is active in.
func (u *union) Deactivate(ctx context.Context, name string) error {
	u.mu.Lock()
	i, ok := u.active[name]
	u.mu.Unlock()
	if !ok {
		return nil
	}
	return u.deactivateIn(ctx, i, name)
}

func (u *union) deactivateIn(ctx context.Context, i int, name string) error {
	if h := u.arms[i].t.Handler; h != nil {
		if err := h.Deactivate(ctx, name); err != nil {
			return err
		}
	}
	u.mu.Lock()
	delete(u.active, name)
	u.mu.Unlock()
	return nil
}

// unionSchema nests the arms' schemas in if/then/else, the last arm's in
// the innermost else; the arms' $defs move to the root, where $ref finds
// them.
func unionSchema(name string, arms []Arm) json.RawMessage {
	defs := map[string]any{}
	var rest any
	for i := len(arms) - 1; i >= 0; i-- {
		var s map[string]any
		if err := json.Unmarshal(arms[i].Type.Schema, &s); err != nil {
			panic(fmt.Sprintf("extension: union %s: arm %s: %v", name, arms[i].Type.Name, err))
		}
		if d, ok := s["$defs"].(map[string]any); ok {
			for k, v := range d {
				if _, dup := defs[k]; dup {
					panic(fmt.Sprintf("extension: union %s: $defs/%s in two arms", name, k))
				}
				defs[k] = v
			}
			delete(s, "$defs")
		}
		if arms[i].If == nil {
			rest = s
			continue
		}
		rest = map[string]any{"if": arms[i].If, "then": s, "else": rest}
	}
	root := map[string]any{}
	if m, ok := rest.(map[string]any); ok {
		maps.Copy(root, m)
	}
	if len(defs) > 0 {
		root["$defs"] = defs
	}
	b, err := json.Marshal(root)
	if err != nil {
		panic(err)
	}
	return b
}
