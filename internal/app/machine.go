package app

import (
	"fmt"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
	"agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/tool/files"
	"agentd/internal/tool/proc"
	"agentd/internal/tool/web"
	"agentd/internal/workspace"
)

// machineLayer builds the tools that act on a machine — the file tools
// over each agent's workspace, exec and process in the sandbox, the web
// tools — and registers them (docs/tools.md, "Tools that act on a
// machine").
func (a *App) machineLayer() error {
	a.Workspaces = workspace.NewSet(a.workspaceDir)
	a.Sandbox = sandbox.New(&sandbox.Options{Logger: a.Logger})
	a.Sandbox.Sweep()
	a.Procs = proc.New(procWorkspaces{a.Workspaces}, proc.SandboxRunner(a.Sandbox), a.execSettings, &proc.Options{Logger: a.Logger})
	tools := files.Tools(a.Workspaces, nil)
	tools = append(tools, a.Procs.Tools()...)
	tools = append(tools, web.Tools(&web.Options{Search: a.Config.Tools.WebSearch, Fetch: a.Config.Tools.WebFetch,
		Secrets: secret.NewResolver(a.Dir, nil), Logger: a.Logger})...)
	for _, t := range tools {
		if err := a.Tools.Register(t); err != nil {
			return fmt.Errorf("app: register tool: %w", err)
		}
	}
	return nil
}

// workspaceDir is the folder of an agent's workspace: its workspace
// setting (relative to the data directory), else workspace/<id> in the
// data directory. A workspace that would hold agentd's data is refused
// (agent.ErrUnsafeWorkspace): every file and exec call of the agent is an
// error naming the setting.
func (a *App) workspaceDir(agentID string) (string, error) {
	d, ok := a.Agents.Get(agentID)
	if !ok {
		return "", fmt.Errorf("app: no agent %q", agentID)
	}
	if d.Workspace == "" && !agent.ValidID(agentID) {
		return "", fmt.Errorf("app: agent id %q cannot name a folder; give the agent a workspace", agentID)
	}
	return d.WorkspaceIn(a.Dir)
}

// warnWorkspace logs an agent's workspace setting that is refused, when
// the agent is loaded or changed.
func (a *App) warnWorkspace(d *agent.Definition) {
	if _, err := d.WorkspaceIn(a.Dir); err != nil {
		a.Logger.Warn("workspace refused: the agent's file and exec tools fail until it is changed", "agent", d.ID, "err", err)
	}
}

// execSettings are an agent's sandbox mode and exec policy.
func (a *App) execSettings(agentID string) (proc.Settings, bool) {
	d, ok := a.Agents.Get(agentID)
	if !ok {
		return proc.Settings{}, false
	}
	return proc.Settings{Mode: d.SandboxMode(), Exec: d.Exec.WithDefaults()}, true
}

// sessionCleared ends what a session held outside its log: its
// background processes and its grants ("allow for this session"). The
// grants are deleted before the session's next input runs (it waits for
// this call), so that input is asked about again.
func (a *App) sessionCleared(s store.Session) {
	if a.Procs != nil {
		a.Procs.CloseSession(s.Address())
	}
	if a.Store != nil {
		a.endGrants(s.Agent, s.Address())
	}
}

// closeMachine stops the background processes, then closes the
// workspaces they and the file tools used.
func (a *App) closeMachine() {
	if a.Procs != nil {
		a.Procs.Close()
	}
	if a.Workspaces != nil {
		a.Workspaces.Close()
	}
}

// procWorkspaces gives the exec tools the workspaces; a failed lookup is
// a nil interface, not a nil pointer in one.
type procWorkspaces struct{ s *workspace.Set }

func (p procWorkspaces) For(agentID string) (proc.Workspace, error) {
	w, err := p.s.For(agentID)
	if err != nil {
		return nil, err
	}
	return w, nil
}
