package tool_test

import (
	"context"
	"errors"
	"testing"

	"agentd/internal/tool"
)

// versioned is a comparable tool: Replace tells tools apart by ==.
type versioned struct {
	name, out string
}

func (v *versioned) Spec() tool.Spec { return tool.Spec{Name: v.name} }

func (v *versioned) Call(context.Context, *tool.Call) (tool.Result, error) {
	return tool.Result{Output: v.out}, nil
}

// Replace swaps a tool for its next version in one step, and refuses to
// take a name another tool holds.
func TestReplace(t *testing.T) {
	r := tool.NewRegistry(nil)
	v1, v2 := &versioned{"weather", "v1"}, &versioned{"weather", "v2"}
	if err := r.Replace(nil, v1); err != nil {
		t.Fatal(err)
	}
	ver := r.Version()
	if err := r.Replace(v1, v2); err != nil {
		t.Fatalf("Replace(v1, v2): %v", err)
	}
	if got, _ := r.Get("weather"); got != v2 || r.Version() == ver {
		t.Fatalf("after Replace: %v, version %d (was %d)", got, r.Version(), ver)
	}
	// v1 is no longer there to replace; another tool's name is not taken.
	if err := r.Replace(v1, &versioned{"weather", "v3"}); !errors.Is(err, tool.ErrDuplicate) {
		t.Errorf("Replace of a tool no longer registered: %v", err)
	}
	if err := r.Register(echo("clock", "")); err != nil {
		t.Fatal(err)
	}
	if err := r.Replace(nil, &versioned{"clock", "mine"}); !errors.Is(err, tool.ErrDuplicate) {
		t.Errorf("Replace(nil) over another tool: %v", err)
	}
	if err := r.Replace(v2, &versioned{"clock", "mine"}); !errors.Is(err, tool.ErrDuplicate) {
		t.Errorf("Replace(v2) over another tool: %v", err)
	}
	if err := r.Replace(v2, &versioned{"bad name", ""}); !errors.Is(err, tool.ErrInvalidName) {
		t.Errorf("Replace with a bad name: %v", err)
	}
	if got, _ := r.Get("weather"); got != v2 {
		t.Errorf("a refused Replace changed the tool: %v", got)
	}
	// A tool of a type == cannot compare is refused, not a panic.
	if err := r.Replace(echo("clock", ""), echo("clock", "")); err == nil {
		t.Error("Replace with an incomparable old tool succeeded")
	}
}

func TestCheckSpec(t *testing.T) {
	if err := tool.CheckSpec(tool.Spec{Name: "ok", InputSchema: []byte(`{"type":"object","properties":{"a":{"type":"strng"}}}`)}); !errors.Is(err, tool.ErrBadSchema) {
		t.Errorf("CheckSpec with a bad schema: %v", err)
	}
	if err := tool.CheckSpec(tool.Spec{Name: "ok", InputSchema: []byte(`{"type":"object"}`)}); err != nil {
		t.Errorf("CheckSpec: %v", err)
	}
}
