package job

import "testing"

// TestVarsAreFilled: every variable Vars lists is one a run fills, and
// the checks know no other.
func TestVarsAreFilled(t *testing.T) {
	f := &Fire{Payload: map[string]string{"k": "v"}}
	get := f.vars("j", "r")
	for _, v := range append(Vars, "payload.k") {
		if _, ok := get(v); !ok || !knownVar(v) {
			t.Errorf("%s: filled %v, known %v", v, ok, knownVar(v))
		}
	}
	if _, ok := get("team"); ok || knownVar("team") {
		t.Error("an unknown variable was filled")
	}
}
