package app

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"time"

	"agentd/approval"
	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/history"
	"agentd/internal/identity"
	"agentd/internal/mcp"
	"agentd/internal/permit"
	"agentd/internal/skill"
	"agentd/internal/tool"
)

// Files and folders of the tool layer inside the data directory.
const (
	KeysDir      = "keys"             // the agents' identity keys
	MCPStateFile = "mcp-servers.json" // where MCP servers added at run time were kept: now integration rows
	SkillsDir    = "skills"           // the default skills folder
)

// toolLayer builds the keyring, the approval broker, the MCP manager and
// the skills, and registers their tools.
func (a *App) toolLayer(version string) error {
	var err error
	a.Permits = permit.New()
	if a.Keys, err = identity.Open(filepath.Join(a.Dir, KeysDir), &identity.Options{Logger: a.Logger}); err != nil {
		return err
	}
	a.MCP, err = mcp.New(&mcp.Options{Logger: a.Logger, Tools: a.Tools, ClientName: "agentd", ClientVersion: version,
		Uses: func(agentID, server string) bool {
			d, ok := a.Agents.Get(agentID)
			return ok && d.UsesServer(server)
		}})
	if err != nil {
		return err
	}
	set, err := skill.Load(a.skillDirs(), &skill.Options{Logger: a.Logger})
	if err != nil {
		return err
	}
	a.skills.Store(set)
	tools := append(a.MCP.Builtins(), skill.Tool(a.skills.Load, skillPolicy{a}, skillServers{a}), a.Contexts.Tool())
	tools = append(tools, history.Tools(workingMemory{a.Store, a.Bus, nil}, &history.Options{Logger: a.Logger, Allowed: func(agentID string) bool {
		d, ok := a.Agents.Get(agentID)
		return ok && d.Memory.SearchAll
	}})...)
	for _, t := range tools {
		if err := a.Tools.Register(t); err != nil {
			return fmt.Errorf("app: register tool: %w", err)
		}
	}
	return nil
}

func (a *App) skillDirs() []string {
	if len(a.Config.SkillDirs) > 0 {
		return a.Config.SkillDirs
	}
	return []string{filepath.Join(a.Dir, SkillsDir)}
}

// Skills returns the current skills.
func (a *App) Skills() *skill.Set { return a.skills.Load() }

// skillPrompt is what an agent's system prompt says about its skills:
// nothing unless it is offered the skill tool that loads them.
func (a *App) skillPrompt(d *agent.Definition) string {
	p := tool.Policy{Allow: d.Tools.Allow, Deny: d.Tools.Deny, Ask: d.Tools.Ask, Grant: d.Tools.Grant}
	if !d.OffersBuiltin(skill.ToolName) || p.Decide(tool.Spec{Name: skill.ToolName}).Verdict == tool.Deny {
		return ""
	}
	if s := a.skills.Load(); s != nil {
		return s.Prompt(d.Skills)
	}
	return ""
}

// warnBuiltin logs each tools.builtin pattern of d that names no built-in
// tool: a misspelt name would otherwise offer nothing, silently.
func (a *App) warnBuiltin(d *agent.Definition) {
	for _, p := range d.Tools.Builtin {
		if !slices.ContainsFunc(a.Tools.Specs(), func(s tool.Spec) bool {
			ok, _ := path.Match(p, s.Name)
			return ok && s.Server == ""
		}) {
			a.Logger.Warn("tools.builtin names no built-in tool", "agent", d.ID, "file", d.File, "pattern", p)
		}
	}
}

type skillPolicy struct{ a *App }

func (p skillPolicy) SkillsFor(agentID string) []string {
	if d, ok := p.a.Agents.Get(agentID); ok {
		return d.Skills
	}
	return []string{} // an unknown agent may load none
}

// skillServers connects the MCP servers a skill bundles when a session
// loads it, and again before each turn of a session that loaded it.
type skillServers struct{ a *App }

// Their tools are the loading agent's (another agent that loads the skill
// is added to them), and within it those of the sessions that loaded the
// skill (Def.Skill).
func (c skillServers) ConnectSkillServers(ctx context.Context, agentID, name string, servers map[string]agent.MCPServer) error {
	for _, sn := range slices.Sorted(maps.Keys(servers)) {
		if _, err := c.a.MCP.Add(ctx, mcp.Def{Name: sn, Config: servers[sn], Agents: []string{agentID}, Source: "skill:" + name, Skill: name}); err != nil {
			return err
		}
	}
	return nil
}

// ConnectSkills connects the servers of the skills a session loaded, as
// loading them did: after a restart they are not connected. A skill that
// is gone, unavailable or no longer allowed for the agent is skipped.
func (c skillServers) ConnectSkills(ctx context.Context, agentID string, names []string) {
	set := c.a.skills.Load()
	patterns := skillPolicy(c).SkillsFor(agentID)
	for _, name := range names {
		sk, ok := set.Get(name)
		if !ok || !sk.Available || !skill.Match(patterns, name) {
			continue
		}
		if servers := sk.Servers(); len(servers) > 0 {
			if err := c.ConnectSkillServers(ctx, agentID, name, servers); err != nil {
				c.a.Logger.Warn("servers of a loaded skill not connected", "agent", agentID, "skill", name, "err", err)
			}
		}
	}
}

// mcpDefs are the MCP servers the configuration and the agent files define.
func (a *App) mcpDefs() []mcp.Def {
	// In a fixed order (agentd.yaml first, then agents by id), so that of
	// two conflicting definitions the same one always wins.
	var defs []mcp.Def
	for _, name := range slices.Sorted(maps.Keys(a.Config.MCPServers)) {
		defs = append(defs, mcp.Def{Name: name, Config: a.Config.MCPServers[name], Source: "config"})
	}
	for _, d := range a.Agents.List() {
		for _, name := range slices.Sorted(maps.Keys(d.MCPServers)) {
			defs = append(defs, mcp.Def{Name: name, Config: d.MCPServers[name], Agents: []string{d.ID}, Source: "agent:" + d.ID})
		}
	}
	if a.integrations != nil {
		defs = append(defs, a.integrations.Defs()...)
	}
	return defs
}

// syncServers brings the MCP manager in step with the files.
func (a *App) syncServers(ctx context.Context) {
	for _, err := range a.MCP.Set(ctx, a.mcpDefs()) {
		a.Logger.Warn("mcp server not started", "err", err)
	}
}

// serverTools resolves the servers hooks and toolArgs name.
type serverTools struct{ a *App }

// ServerName returns the server ref names (by name or by URL).
func (s serverTools) ServerName(ref string) (string, bool) {
	if _, ok := s.a.MCP.Status(ref); ok {
		return ref, true
	}
	for _, d := range s.a.mcpDefs() {
		if d.Config.URL != "" && d.Config.URL == ref {
			return d.Name, true
		}
	}
	return "", false
}

// ServerURL is the URL of an HTTP server (for toolArgs keyed by URL).
func (s serverTools) ServerURL(name string) string {
	for _, d := range s.a.mcpDefs() {
		if d.Name == name {
			return d.Config.URL
		}
	}
	return ""
}

// bootstrap connects the servers, then makes each agent's start-up calls,
// logging their results in the session <agent>/bootstrap.
func (a *App) bootstrap(ctx context.Context) {
	var agents []*agent.Definition
	for _, d := range a.Agents.List() {
		if len(d.Bootstrap) > 0 {
			agents = append(agents, d)
		}
	}
	if len(agents) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	a.MCP.WaitReady(wctx)
	cancel()
	for _, d := range agents {
		var evs []event.Event
		for i, b := range d.Bootstrap {
			args, _ := json.Marshal(b.Args)
			if b.Args == nil {
				args = []byte("{}")
			}
			c := &tool.Call{ID: fmt.Sprintf("bootstrap.%d.%s", i, b.Tool), Name: b.Tool, Args: args, Agent: d.ID, Session: d.ID + "/bootstrap"}
			var spec tool.Spec
			if t, ok := a.Tools.Get(b.Tool); ok {
				spec = t.Spec()
			}
			if spec.Server != "" {
				c.Approval = messageApprover{s: signer{a.Keys}, agent: d.ID, m: approval.Message{Text: "bootstrap", CreatedAt: time.Now(),
					ID: fmt.Sprintf("bootstrap-%d-%d", time.Now().UnixNano(), i), ChannelID: d.ID + "/bootstrap"}}
			}
			out := a.Tools.Run(ctx, c, &tool.RunOptions{Timeout: d.Tools.Timeout.D(), MaxOutputBytes: d.Tools.MaxOutputBytes})
			if ctx.Err() != nil {
				return
			}
			evs = append(evs, event.New(0, 0, event.Lifecycle, event.LifecycleData{Phase: event.PhaseBootstrap, Tool: b.Tool,
				Args: args, Output: out.Result.Output, IsError: out.Result.IsError, DurationMS: float64(out.Duration.Microseconds()) / 1000}))
			if out.Result.IsError {
				a.Logger.Warn("bootstrap call failed", "agent", d.ID, "tool", b.Tool, "output", out.Result.Output)
			}
		}
		if err := a.Runtime.Record(ctx, d.ID+"/bootstrap", evs...); err != nil {
			a.Logger.Error("log bootstrap calls", "agent", d.ID, "err", err)
		}
	}
}
