package agent

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"agentd/internal/store"
)

// Every type an instance row may have is an agent type: the store's list
// is held to this package's.
func TestTypesHoldInstanceTypes(t *testing.T) {
	for _, typ := range store.InstanceTypes() {
		if !slices.Contains(Types(), typ) {
			t.Errorf("instance type %q is not an agent type (Types: %v)", typ, Types())
		}
	}
}

// Get asks the instances hook for an id no file or row defines, and only
// then; List leaves instances out.
func TestSetInstances(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, dir, "agents/support.yaml", "type: swarm\n")
	r, err := NewRegistry(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Get("ck1"); ok {
		t.Fatal("an unknown id was found with no hook")
	}
	tpl, _ := r.Get("support")
	var (
		mu    sync.Mutex
		asked []string
	)
	r.SetInstances(func(id string) (*Definition, bool) {
		mu.Lock()
		asked = append(asked, id)
		mu.Unlock()
		if id != "ck1" {
			return nil, false
		}
		d := *tpl
		d.ID, d.Template, d.Scope, d.KeyOwner = "ck1", "support", "ck1", "support"
		return &d, true
	})
	if d, ok := r.Get("support"); !ok || d != tpl {
		t.Errorf("Get(support) = %v, %v; want the file's definition", d, ok)
	}
	d, ok := r.Get("ck1")
	if !ok || d.ID != "ck1" || d.ScopeID() != "ck1" || d.KeyOwnerID() != "support" {
		t.Errorf("Get(ck1) = %+v, %v; want the derived definition", d, ok)
	}
	if _, ok := r.Get("ck2"); ok {
		t.Error("the hook's false was not kept")
	}
	if !slices.Equal(asked, []string{"ck1", "ck2"}) {
		t.Errorf("the hook was asked for %v; want only the ids no file defines", asked)
	}
	for _, d := range r.List() {
		if d.ID == "ck1" {
			t.Error("List includes an instance")
		}
	}
	r.SetInstances(nil)
	if _, ok := r.Get("ck1"); ok {
		t.Error("an instance was found after the hook was removed")
	}
	// A definition of its own scope and key falls back to its id.
	if d := (&Definition{ID: "x"}); d.ScopeID() != "x" || d.KeyOwnerID() != "x" {
		t.Errorf("ScopeID %q, KeyOwnerID %q; want the id", d.ScopeID(), d.KeyOwnerID())
	}
}

// An agent row that gives agents rights over other agents is
// machine-level: an agent, which may not write those, cannot make an
// agent with more reach than its own.
func TestAgentMachine(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want bool
	}{
		{`{"system_prompt":"hi"}`, false},
		{`{"agents":null}`, false},
		{`{"agents":{}}`, false},
		{`{"agents":{"templates":["*"]}}`, true},
		{`{"agents":{"targets":["boss"]}}`, true},
		{`{"agents":{"max_children":50}}`, true},
		{`{"extensions":{"any":true}}`, true},
		{`{"bootstrap":[{"tool":"x"}]}`, true},
	} {
		if got := agentMachine(json.RawMessage(tc.spec)); got != tc.want {
			t.Errorf("agentMachine(%s) = %v, want %v", tc.spec, got, tc.want)
		}
	}
}
