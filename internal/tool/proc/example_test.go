package proc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
	"agentd/internal/tool"
	"agentd/internal/tool/proc"
)

// folder is a workspace over a folder (agentd's is internal/workspace's).
type folder string

func (f folder) Dir() string { return string(f) }

func (f folder) HostDir(rel string) (string, error) {
	if filepath.IsAbs(rel) || !filepath.IsLocal(filepath.Clean(rel)) && filepath.Clean(rel) != "." {
		return "", fmt.Errorf("%s: outside the workspace", rel)
	}
	return filepath.Join(string(f), rel), nil
}

func ExampleManager() {
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)
	dir, _ = filepath.EvalSymlinks(dir)

	m := proc.New(
		proc.WorkspacesFunc(func(string) (proc.Workspace, error) { return folder(dir), nil }),
		proc.SandboxRunner(sandbox.New(nil)),
		func(agentID string) (proc.Settings, bool) {
			return proc.Settings{Mode: agent.SandboxNone, Exec: agent.ExecPolicy{}.WithDefaults()}, true
		},
		nil,
	)
	defer m.Close()
	exec := m.Tools()[0]
	res, err := exec.Call(context.Background(), &tool.Call{
		Name: "exec", Args: json.RawMessage(`{"argv": ["echo", "hello"]}`), Agent: "a", Session: "s",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	first, out, _ := strings.Cut(res.Output, "\n")
	fmt.Println(strings.HasPrefix(first, "exit 0 · "), strings.HasSuffix(first, " · none"))
	fmt.Print(out)
	// Output:
	// true true
	// hello
}
