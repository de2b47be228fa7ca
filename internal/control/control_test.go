package control_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/control"
	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

type agents map[string]bool

func (a agents) Has(id string) bool { return a[id] }

func row(name, spec string, version int64) *store.Extension {
	return &store.Extension{Type: "control", Name: name, Spec: json.RawMessage(spec), Enabled: true, Version: version, UpdatedBy: "user:test"}
}

// What the schema cannot say is checked, with pointers.
func TestCheck(t *testing.T) {
	c := control.New(&control.Options{Agents: agents{"researcher": true}})
	sch, err := schema.Compile(c.Type().Schema)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec string
		want []string
	}{
		{`{"kind":"bool","value":true,"agent":"researcher","effect":"pause_agent"}`, nil},
		{`{"kind":"enum","value":"best","options":["economy","standard"]}`, []string{`/spec/value: must be one of its options ["economy" "standard"]`}},
		{`{"kind":"number","value":11,"min":0,"max":10}`, []string{"/spec/value: must be at most 10"}},
		{`{"kind":"bool","value":true,"agent":"ghost","effect":"pause_agent"}`, []string{`/spec/agent: no agent "ghost" exists`}},
		{`{"kind":"bool","value":true,"effect":"disable_tools","tools":["[x"]}`, []string{"/spec/tools/0: is not a valid glob: syntax error in pattern"}},
	}
	for _, tt := range tests {
		var v any
		_ = json.Unmarshal([]byte(tt.spec), &v)
		if errs := sch.Validate(v); len(errs) > 0 {
			t.Errorf("%s: the schema refuses it: %v", tt.spec, errs)
			continue
		}
		var got []string
		for _, e := range c.Check(context.Background(), &extension.Doc{Type: "control", Name: "x", Spec: json.RawMessage(tt.spec)}) {
			got = append(got, e.String())
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.spec, diff)
		}
	}
	// The schema ties a value to its kind and an effect to what it needs.
	for _, spec := range []string{`{"kind":"bool","value":"yes"}`, `{"kind":"bool","value":true,"effect":"pause_agent"}`,
		`{"kind":"text","value":true,"effect":"disable_tools"}`, `{"kind":"enum","value":"a"}`} {
		var v any
		_ = json.Unmarshal([]byte(spec), &v)
		if len(sch.Validate(v)) == 0 {
			t.Errorf("%s: the schema accepts it", spec)
		}
	}
}

// Effects follow the value: a pause while on, a kill switch while on, and
// both lifted when the row goes.
func TestEffects(t *testing.T) {
	var paused []string
	var denied map[string][]string = map[string][]string{}
	c := control.New(&control.Options{
		Paused: func(agent string, on bool) {
			paused = append(paused, agent+map[bool]string{true: ":on", false: ":off"}[on])
		},
		Deny: func(src string, globs []string) {
			if globs == nil {
				delete(denied, src)
			} else {
				denied[src] = globs
			}
		},
	})
	ctx := context.Background()
	_ = c.Activate(ctx, row("hold", `{"kind":"bool","value":true,"agent":"a","effect":"pause_agent"}`, 1))
	if !c.Paused("a") || c.Paused("b") {
		t.Fatal("pause not in effect")
	}
	_ = c.Activate(ctx, row("hold", `{"kind":"bool","value":false,"agent":"a","effect":"pause_agent"}`, 2))
	if c.Paused("a") {
		t.Fatal("pause still in effect")
	}
	if !slices.Equal(paused, []string{"a:on", "a:off"}) {
		t.Fatalf("pauses told: %v", paused)
	}
	_ = c.Activate(ctx, row("kill", `{"kind":"bool","value":true,"effect":"disable_tools","tools":["exec*"]}`, 1))
	if !slices.Equal(denied["control:kill"], []string{"exec*"}) {
		t.Fatalf("denied: %v", denied)
	}
	_ = c.Deactivate(ctx, "kill")
	if len(denied) != 0 {
		t.Fatalf("denied after the row went: %v", denied)
	}
}

// A change is logged when its value changes and it names an agent.
func TestChange(t *testing.T) {
	on := row("hold", `{"kind":"bool","value":true,"agent":"a","effect":"pause_agent"}`, 2)
	off := row("hold", `{"kind":"bool","value":false,"agent":"a","effect":"pause_agent"}`, 1)
	agent, d, ok := control.Change(off, on)
	if !ok || agent != "a" || string(d.Value) != "true" || string(d.Previous) != "false" || d.Version != 2 {
		t.Fatalf("a flip: %q %+v %v", agent, d, ok)
	}
	if _, _, ok := control.Change(on, on); ok {
		t.Fatal("no change logged")
	}
	if _, _, ok := control.Change(nil, row("tier", `{"kind":"enum","value":"a","options":["a"]}`, 1)); ok {
		t.Fatal("a control of no agent logged")
	}
}
