package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
