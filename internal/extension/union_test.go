package extension_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

// armHandler records what a union asks of one arm.
type armHandler struct {
	name  string
	calls *[]string
}

func (h armHandler) Activate(_ context.Context, e *store.Extension) error {
	*h.calls = append(*h.calls, h.name+" activate "+e.Name)
	return nil
}

func (h armHandler) Deactivate(_ context.Context, name string) error {
	*h.calls = append(*h.calls, h.name+" deactivate "+name)
	return nil
}

func (h armHandler) Check(_ context.Context, d *extension.Doc) []schema.Error {
	return []schema.Error{{Pointer: "/spec", Message: "checked by " + h.name}}
}

func unionOf(calls *[]string) extension.Type {
	chat := extension.Type{Name: "chat", Handler: armHandler{"chat", calls},
		Schema:  json.RawMessage(`{"type":"object","properties":{"platform":{"enum":["telegram"]},"agent":{"type":"string"}},"required":["platform","agent"],"additionalProperties":false}`),
		Actor:   func(spec json.RawMessage) []string { return []string{"from-chat"} },
		Machine: func(json.RawMessage) bool { return true }}
	mcp := extension.Type{Name: "mcp", Handler: armHandler{"mcp", calls},
		Schema: json.RawMessage(`{"type":"object","properties":{"kind":{"enum":["mcp"]},"mcp":{"$ref":"#/$defs/server"}},"required":["kind","mcp"],"additionalProperties":false,"$defs":{"server":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}`)}
	return extension.Union("integration", "an MCP server or a chat platform",
		extension.Arm{If: json.RawMessage(`{"required":["platform"]}`), Type: chat}, extension.Arm{Type: mcp})
}

// TestUnionSchema: each document is validated by its own arm's schema
// only, and the arms' $defs still resolve.
func TestUnionSchema(t *testing.T) {
	var calls []string
	s, err := schema.Compile(unionOf(&calls).Schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc  string
		want []string
	}{
		{`{"platform":"telegram","agent":"a"}`, nil},
		{`{"kind":"mcp","mcp":{"command":"x"}}`, nil},
		{`{"platform":"telegram"}`, []string{"/agent: is required"}},
		{`{"platform":"telegram","agent":"a","kind":"mcp"}`, []string{"/kind: is not allowed here"}},
		{`{"kind":"mcp","mcp":{}}`, []string{"/mcp/command: is required"}},
		{`{"kind":"mcp","mcp":{"command":"x"},"agent":"a"}`, []string{"/agent: is not allowed here"}},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.doc), &v); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range s.Validate(v) {
			got = append(got, e.String())
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.doc, diff)
		}
	}
}

// TestUnionDispatch: Check, Actor and Machine go to the spec's arm; a row
// whose spec changes arm is deactivated in the old arm first; Deactivate
// goes to the arm the row is active in.
func TestUnionDispatch(t *testing.T) {
	var calls []string
	u := unionOf(&calls)
	chat, mcp := json.RawMessage(`{"platform":"telegram","agent":"a"}`), json.RawMessage(`{"kind":"mcp","mcp":{"command":"x"}}`)
	ctx := t.Context()
	ck := u.Handler.(extension.Checker)
	for spec, want := range map[string]string{string(chat): "checked by chat", string(mcp): "checked by mcp"} {
		if got := ck.Check(ctx, &extension.Doc{Spec: json.RawMessage(spec)}); got[0].Message != want {
			t.Errorf("Check(%s) = %v, want %s", spec, got, want)
		}
	}
	if got := fmt.Sprint(u.Actor(chat), u.Actor(mcp), u.Machine(chat), u.Machine(mcp)); got != "[from-chat] [] true false" {
		t.Errorf("Actor, Machine = %s", got)
	}
	h := u.Handler
	steps := []func() error{
		func() error { return h.Activate(ctx, &store.Extension{Name: "x", Spec: mcp}) },
		func() error { return h.Activate(ctx, &store.Extension{Name: "x", Spec: mcp}) },
		func() error { return h.Activate(ctx, &store.Extension{Name: "x", Spec: chat}) },
		func() error { return h.Deactivate(ctx, "x") },
		func() error { return h.Deactivate(ctx, "x") },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"mcp activate x", "mcp activate x", "mcp deactivate x", "chat activate x", "chat deactivate x"}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got)\n%s", diff)
	}
}

// A union type holds two kinds of documents under one name: a spec that
// names a platform is the chat arm's, any other the MCP arm's.
func ExampleUnion() {
	chat := extension.Type{Name: "integration", Schema: json.RawMessage(`{"type":"object","required":["platform"]}`),
		Actor: func(json.RawMessage) []string { return []string{"assistant"} }}
	mcp := extension.Type{Name: "integration", Schema: json.RawMessage(`{"type":"object","required":["kind"]}`)}
	u := extension.Union("integration", "an MCP server or a chat platform",
		extension.Arm{If: json.RawMessage(`{"required":["platform"]}`), Type: chat}, extension.Arm{Type: mcp})
	fmt.Println(u.Actor(json.RawMessage(`{"platform":"telegram"}`)), u.Actor(json.RawMessage(`{"kind":"mcp"}`)))
	// Output: [assistant] []
}
