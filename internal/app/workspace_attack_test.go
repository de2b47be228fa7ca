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
	link := filepath.Join(t.TempDir(), "link") // made to point at the data directory
	for _, ws := range []string{".", "/", "keys/..", "keys", "workspace", link} {
		t.Run(ws, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "agents"), 0o700)
			if ws == link {
				if err := os.Symlink(dir, link); err != nil {
					t.Fatal(err)
				}
			}
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
			wsDir := ws // the folder the setting names, as the attack reads it
			if !filepath.IsAbs(ws) {
				wsDir = filepath.Join(dir, ws)
			}
			rel, _ := filepath.Rel(wsDir, filepath.Join(dir, KeysDir))
			if ws == link {
				rel = KeysDir
			}
			out := callTool(t, a, "read_file", map[string]any{"path": filepath.ToSlash(filepath.Join(rel, "w.json"))})
			if strings.Contains(out, strings.Join(first, ",")) {
				t.Errorf("workspace %q: agent w reads its identity key from the data directory with read_file (which asks nobody):\n%s", ws, out)
			} else if !strings.Contains(out, "workspace "+strconv.Quote(ws)) {
				t.Errorf("workspace %q: read_file failed without naming the setting: %s", ws, out)
			}
		})
	}
}

// TestWorkspaceOutsideTheDataDirectory: the workspaces that are not
// refused still work: the default, a folder under workspace/, and one
// outside the data directory.
func TestWorkspaceOutsideTheDataDirectory(t *testing.T) {
	for _, ws := range []string{"", "workspace/shared", filepath.Join(t.TempDir(), "elsewhere")} {
		t.Run(ws, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "agents"), 0o700)
			def := "model: {provider: echo, name: echo}\ntools:\n  builtin: [read_file]\n"
			if ws != "" {
				def += "workspace: " + ws + "\n"
			}
			os.WriteFile(filepath.Join(dir, "agents", "w.yaml"), []byte(def), 0o600)
			a, err := Open(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close(context.Background()) })
			w, err := a.Workspaces.For("w")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(w.Dir(), "a.txt"), []byte("hello"), 0o600); err != nil {
				t.Fatal(err)
			}
			if out := callTool(t, a, "read_file", map[string]any{"path": "a.txt"}); !strings.Contains(out, "hello") {
				t.Errorf("workspace %q: read_file: %s", ws, out)
			}
		})
	}
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
