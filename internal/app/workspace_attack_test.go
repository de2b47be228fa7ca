//go:build attack

package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"agentd/internal/tool"
)

// TestAttackWorkspaceHoldsTheDataDirectory: an agent's workspace may be
// the data directory itself (workspace: .), a folder above it
// (workspace: /, workspace: ..), or any absolute path: nothing refuses a
// workspace that holds the data directory. Then read_file, which asks
// nobody (ReadOnly), reads the agents' identity keys, the store and the
// secrets, and exec's sandbox binds them read-write: docs/tools.md's
// "Nothing else of the data directory ... is reachable by these tools"
// holds only for the default workspace. A typo (workspace: . for
// workspace: ./work) is enough. agentd should refuse, at load, a
// workspace that is the data directory, holds it, or is inside it but
// outside workspace/ (keys/, secrets, the store).
func TestAttackWorkspaceHoldsTheDataDirectory(t *testing.T) {
	for _, ws := range []string{".", "/", "keys/.."} {
		t.Run(ws, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "agents"), 0o700)
			def := "model: {provider: echo, name: echo}\nworkspace: " + ws + "\ntools:\n  builtin: [read_file, list_dir]\n"
			os.WriteFile(filepath.Join(dir, "agents", "w.yaml"), []byte(def), 0o600)
			a, err := Open(context.Background(), dir, nil)
			if err != nil {
				t.Logf("refused at load: %v", err)
				return
			}
			t.Cleanup(func() { a.Close(context.Background()) })
			key, err := a.Keys.Key("w")
			if err != nil {
				t.Fatalf("key: %v", err)
			}
			var first []string // the key file holds its bytes as numbers
			for _, b := range key[:8] {
				first = append(first, strconv.Itoa(int(b)))
			}
			rel, _ := filepath.Rel(mustWS(t, a), filepath.Join(dir, KeysDir))
			out := callTool(t, a, "read_file", map[string]any{"path": filepath.ToSlash(filepath.Join(rel, "w.json"))})
			if strings.Contains(out, strings.Join(first, ",")) {
				t.Errorf("workspace %q: agent w reads its identity key from the data directory with read_file (which asks nobody):\n%s", ws, out)
			} else {
				t.Logf("workspace %q: %s", ws, out)
			}
		})
	}
}

func mustWS(t *testing.T, a *App) string {
	t.Helper()
	w, err := a.Workspaces.For("w")
	if err != nil {
		t.Fatal(err)
	}
	return w.Dir()
}

func callTool(t *testing.T, a *App, name string, args map[string]any) string {
	t.Helper()
	tl, ok := a.Tools.Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	b, _ := json.Marshal(args)
	r, err := tl.Call(context.Background(), &tool.Call{Name: name, Args: b, Agent: "w", Session: "w/s"})
	if err != nil {
		return "error " + err.Error()
	}
	return r.Output
}
