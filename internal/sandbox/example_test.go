package sandbox_test

import (
	"context"
	"fmt"
	"os"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

// A command run in a workspace; mode none here so the example runs where
// bubblewrap is not installed (agent.SandboxBwrap is the default).
func ExampleSandbox_Run() {
	ws, _ := os.MkdirTemp("", "workspace-")
	defer os.RemoveAll(ws)
	s := sandbox.New(nil)
	e, err := s.Run(context.Background(), &sandbox.Spec{
		Argv:      []string{"echo", "hello"},
		Workspace: ws,
		Mode:      agent.SandboxNone,
		Limits:    agent.Limits{}.WithDefaults(),
		Stdout:    os.Stdout,
	})
	fmt.Println(e.Code, e.Mode, err)
	fmt.Println(s.Describe(agent.SandboxNone, false))
	// Output:
	// hello
	// 0 none <nil>
	// none
}
