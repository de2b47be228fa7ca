package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/extension"
	"agentd/internal/store"
)

// TestGrantsOfAnAgentRemovedWhileStopped: an agent file removed while
// agentd is stopped takes its grants with it at the next start; an agent
// whose file no longer loads keeps its grants for when it is fixed.
func TestGrantsOfAnAgentRemovedWhileStopped(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o700)
	def := []byte("model: {provider: echo, name: echo}\ntools:\n  builtin: [write_file]\n")
	for _, id := range []string{"gone", "broken"} {
		if err := os.WriteFile(filepath.Join(dir, "agents", id+".yaml"), def, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, err := Open(ctx, dir, &Options{ReadOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"gone", "broken"} {
		g := store.Grant{ID: "g-" + id, Agent: id, Tool: "write_file", Exact: "a.txt", By: "alice", CreatedAt: time.Unix(1, 0).UTC()}
		if err := a.Store.PutGrant(ctx, &g); err != nil {
			t.Fatal(err)
		}
	}
	a.Close(ctx)
	if err := os.Remove(filepath.Join(dir, "agents", "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents", "broken.yaml"), []byte("model: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err = Open(ctx, dir, &Options{ReadOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	gs, err := a.Store.Grants(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range gs {
		ids = append(ids, g.ID)
	}
	if d := cmp.Diff([]string{"g-broken"}, ids); d != "" {
		t.Errorf("grants after the start (-want +got):\n%s", d)
	}
}

// TestGrantsOfAnAgentRow: an agent row's grants stay while the row is
// disabled (it comes back as it was) and end when the row is deleted.
func TestGrantsOfAnAgentRow(t *testing.T) {
	ctx := context.Background()
	a, err := Open(ctx, t.TempDir(), &Options{ReadOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	who := extension.Who{Provenance: store.ProvenanceUser, By: "user:test"}
	spec := json.RawMessage(`{"model":{"provider":"echo","name":"echo"},"tools":{"builtin":["write_file"]}}`)
	if _, err := a.Ext.Put(ctx, extension.Doc{Type: "agent", Name: "r", Spec: spec}, who); err != nil {
		t.Fatal(err)
	}
	g := store.Grant{ID: "g1", Agent: "r", Tool: "write_file", Session: "r/main", By: "alice", CreatedAt: time.Unix(1, 0).UTC()}
	if err := a.Store.PutGrant(ctx, &g); err != nil {
		t.Fatal(err)
	}
	grants := func() int {
		gs, err := a.Store.Grants(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		return len(gs)
	}
	if _, err := a.Ext.SetEnabled(ctx, "agent", "r", false, who); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Agents.Get("r"); ok {
		t.Fatal("a disabled agent row still defines its agent")
	}
	if n := grants(); n != 1 {
		t.Errorf("after the row was disabled: %d grants, want 1", n)
	}
	if _, err := a.Ext.SetEnabled(ctx, "agent", "r", true, who); err != nil {
		t.Fatal(err)
	}
	if err := a.Ext.Delete(ctx, "agent", "r", who); err != nil {
		t.Fatal(err)
	}
	if n := grants(); n != 0 {
		t.Errorf("after the row was deleted: %d grants, want 0", n)
	}
}
