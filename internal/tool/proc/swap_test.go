package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
	"agentd/internal/tool"
	"agentd/internal/workspace"
)

// TestWorkspaceSwappedBeforeTheBind: the file tools hold the workspace
// open (os.Root), and so does the sandbox: were it given the path, bwrap
// would bind whatever that path names when the command starts. Where
// someone else may rename in the workspace's parent — another local
// user, when workspace: is under a shared folder; or another agent, when
// one agent's workspace holds another's (workspace: workspace, or
// workspace/b/sub), whose sandboxed commands may rename in it and leave a
// symlink to / behind — swapping the folder for a symlink between HostDir's check and
// bwrap's --bind gives the command another folder of the host,
// read-write: here a stand-in for /etc. bwrap 0.8's --bind-fd binds an
// open directory; given the workspace's own descriptor (DirOpener), no
// path is looked up again.
func TestWorkspaceSwappedBeforeTheBind(t *testing.T) {
	shared, err := filepath.EvalSymlinks(t.TempDir()) // a folder another user may write
	if err != nil {
		t.Fatal(err)
	}
	victim := t.TempDir() // stands for /etc
	wsPath := filepath.Join(shared, "ws")
	ws, err := workspace.Open(wsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	spaces := WorkspacesFunc(func(string) (Workspace, error) { return ws, nil })
	settings := func(string) (Settings, bool) {
		return Settings{Mode: agent.SandboxBwrap, Exec: agent.ExecPolicy{}.WithDefaults()}, true
	}
	m := New(spaces, SandboxRunner(sandbox.New(nil)), settings, &Options{LookupEnv: func(string) (string, bool) { return "", false }})
	defer m.Close()
	var execTool tool.Tool
	for _, tl := range m.Tools() {
		if tl.Spec().Name == "exec" {
			execTool = tl
		}
	}

	// the other user: swap the workspace for a symlink to the victim and
	// back, as fast as it can
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		aside := filepath.Join(shared, "ws.aside")
		for !stop.Load() {
			if os.Rename(wsPath, aside) != nil {
				continue
			}
			os.Symlink(victim, wsPath)
			os.Remove(wsPath)
			os.Rename(aside, wsPath)
		}
	}()
	defer func() { stop.Store(true); <-done }()

	for i := 0; i < 300; i++ {
		_, err := execTool.Call(context.Background(), &tool.Call{Name: "exec", Agent: "a", Session: "s",
			Args: []byte(`{"argv": ["touch", "pwned"]}`)})
		if err != nil && !errors.Is(err, workspace.ErrOutside) && !strings.Contains(err.Error(), "no such file") {
			t.Logf("exec: %v", err)
		}
		if _, err := os.Stat(filepath.Join(victim, "pwned")); err == nil {
			t.Fatalf("after %d tries, a command in the sandbox wrote into a folder outside its workspace", i+1)
		}
	}
}
