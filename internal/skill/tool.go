package skill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/tool"
)

// ToolName is the name of the tool that loads skills.
const ToolName = "skill"

// Connector connects the MCP servers a skill bundles, for the agent that
// loaded it; their tools are seen only in the sessions that loaded the
// skill (see Loads). agentd's wiring implements it over the MCP manager.
type Connector interface {
	ConnectSkillServers(ctx context.Context, agentID, skill string, servers map[string]agent.MCPServer) error
}

// Policy says which skills an agent may load.
type Policy interface {
	// SkillsFor returns the agent's allow patterns (path.Match globs over
	// skill names); nil allows every skill, an empty list none.
	SkillsFor(agentID string) []string
}

const toolSchema = `{
	"type": "object",
	"properties": {
		"name": {"type": "string", "description": "The skill's name, as listed in the system prompt."},
		"file": {"type": "string", "description": "Optional: a file of the skill to read instead of its instructions, as a path relative to the skill's folder (listed when the skill is loaded), such as \"scripts/run.sh\"."}
	},
	"required": ["name"],
	"additionalProperties": false
}`

type skillTool struct {
	current func() *Set
	policy  Policy
	conn    Connector
}

// Tool returns the skill tool. Called with a skill's name, it returns the
// skill's instructions and file list (Set.Body); with a file as well, that
// file's content (Set.ReadFile). It refuses, with an error telling the
// model what it can do instead, unknown skills, skills the calling agent's
// Policy does not allow (p nil allows all), invalid ones and ones whose
// requirements are missing.
//
// Loading a skill that bundles MCP servers connects them through c (which
// may be nil: the output then says they are not connected) before
// returning, and the output names them; if connecting fails, the call
// fails. Disabled servers are left out.
//
// current returns the skills in force (such as the latest Set from Watch)
// and is called once per call; it may return nil.
//
// The tool is offered only to agents that may load at least one skill
// (Spec.Serves): with no skill installed it costs no tokens.
func Tool(current func() *Set, p Policy, c Connector) tool.Tool {
	return skillTool{current: current, policy: p, conn: c}
}

func (t skillTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        ToolName,
		Description: "Loads a skill: instructions (and scripts or references) for a specific kind of task. Call it with the name of a skill listed in the system prompt before starting a task that skill covers, then follow its instructions. With file, returns one of the skill's files instead.",
		InputSchema: json.RawMessage(toolSchema),
		ReadOnly:    true,
		Serves:      t.serves,
	}
}

// serves reports whether the agent may load any skill now.
func (t skillTool) serves(agentID string) bool {
	var set *Set
	if t.current != nil {
		set = t.current()
	}
	return len(set.Allowed(t.patterns(agentID))) > 0
}

func (t skillTool) patterns(agentID string) []string {
	if t.policy == nil {
		return nil
	}
	return t.policy.SkillsFor(agentID)
}

type toolArgs struct {
	Name string `json:"name"`
	File string `json:"file"`
}

// Loads reports whether a call of the tool named tool with args loads a
// skill (rather than reading one of its files), and which: with a
// successful result, the calling session has loaded it. Its servers'
// tools are then that session's (tool.Spec.Skills), for as long as the
// session's log says so, across restarts.
func Loads(tool string, args json.RawMessage) (string, bool) {
	if tool != ToolName {
		return "", false
	}
	var a toolArgs
	if json.Unmarshal(args, &a) != nil || a.Name == "" || a.File != "" {
		return "", false
	}
	return a.Name, true
}

func (t skillTool) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var args toolArgs
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return tool.Result{}, fmt.Errorf("skill: invalid arguments: %w", err)
	}
	var set *Set
	if t.current != nil {
		set = t.current()
	}
	sk, err := check(set, t.patterns(c.Agent), args.Name)
	if err != nil {
		return tool.Result{}, err
	}
	if args.File != "" {
		out, err := set.ReadFile(sk.Name, args.File)
		if errors.Is(err, ErrBadPath) {
			return tool.Result{}, fmt.Errorf("%w; the files of skill %s are listed when it is loaded (call %s with name %q and no file)", err, sk.Name, ToolName, sk.Name)
		}
		if err != nil {
			return tool.Result{}, err
		}
		return tool.Result{Output: out}, nil
	}
	body, err := set.Body(sk.Name)
	if err != nil {
		return tool.Result{}, err
	}
	servers := sk.Servers()
	if len(servers) == 0 {
		return tool.Result{Output: body}, nil
	}
	names := sortedKeys(servers)
	if t.conn == nil {
		return tool.Result{Output: body + "This skill bundles MCP servers (" + strings.Join(names, ", ") + "), but they cannot be connected here: do without their tools.\n"}, nil
	}
	if err := t.conn.ConnectSkillServers(ctx, c.Agent, sk.Name, servers); err != nil {
		return tool.Result{}, fmt.Errorf("skill %s: connecting its MCP servers (%s) failed: %w", sk.Name, strings.Join(names, ", "), err)
	}
	var b strings.Builder
	b.WriteString(body)
	b.WriteString("MCP servers of this skill, now connected (their tools are named <server>__<tool>):\n")
	for _, n := range names {
		b.WriteString("- ")
		b.WriteString(n)
		b.WriteByte('\n')
	}
	return tool.Result{Output: b.String()}, nil
}

// check returns the skill called name if an agent with patterns may load
// it, or an error the model can act on.
func check(set *Set, patterns []string, name string) (Skill, error) {
	allowed := set.Allowed(patterns)
	if name == "" {
		return Skill{}, fmt.Errorf("no skill name given; %s", choices(allowed))
	}
	sk, ok := set.Get(name)
	switch {
	case !ok:
		return Skill{}, fmt.Errorf("unknown skill %q; %s", name, choices(allowed))
	case !Match(patterns, name):
		return Skill{}, fmt.Errorf("skill %s is not allowed for this agent; %s", name, choices(allowed))
	case sk.Err != nil:
		return Skill{}, fmt.Errorf("skill %s cannot be loaded: its SKILL.md is invalid (%v); tell the user, and do the task without it", name, sk.Err)
	case !sk.Available:
		return Skill{}, fmt.Errorf("skill %s is unavailable: %s; tell the user what is missing, and do the task without it", name, strings.Join(sk.Missing, "; "))
	}
	return sk, nil
}

// choices names the skills the agent can load.
func choices(allowed []Skill) string {
	if len(allowed) == 0 {
		return "this agent has no skills it can load"
	}
	names := make([]string, len(allowed))
	for i, sk := range allowed {
		names[i] = sk.Name
	}
	return "skills this agent can load: " + strings.Join(names, ", ")
}
