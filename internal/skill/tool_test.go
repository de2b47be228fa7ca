package skill

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/tool"
)

type policyMap map[string][]string

func (p policyMap) SkillsFor(agentID string) []string { return p[agentID] }

type connectCall struct {
	Agent   string
	Skill   string
	Servers []string
}

type fakeConnector struct {
	calls []connectCall
	err   error
}

func (c *fakeConnector) ConnectSkillServers(_ context.Context, agentID, skill string, servers map[string]agent.MCPServer) error {
	c.calls = append(c.calls, connectCall{Agent: agentID, Skill: skill, Servers: sortedKeys(servers)})
	return c.err
}

func TestTool(t *testing.T) {
	_, root, set := loadFixture(t, "testdata/tool.txtar")
	policy := policyMap{
		"alice": {"notes", "github", "video", "broken"},
		"bob":   {},
		"eve":   {"["},
	}
	notesBody, err := set.Body("notes")
	if err != nil {
		t.Fatal(err)
	}
	githubBody, err := set.Body("github")
	if err != nil {
		t.Fatal(err)
	}
	notesBody, githubBody = relative(root, notesBody), relative(root, githubBody)
	gh := []connectCall{{Agent: "alice", Skill: "github", Servers: []string{"gh"}}}
	tests := []struct {
		name       string
		agent      string
		args       string
		connectErr error
		noConn     bool
		want       string // the output, or the error message
		wantErr    bool
		wantCalls  []connectCall
	}{
		{name: "load", agent: "alice", args: `{"name":"notes"}`, want: notesBody},
		{name: "not allowed", agent: "alice", args: `{"name":"secret"}`, wantErr: true,
			want: "skill secret is not allowed for this agent; skills this agent can load: github, notes"},
		{name: "unknown", agent: "alice", args: `{"name":"nope"}`, wantErr: true,
			want: `unknown skill "nope"; skills this agent can load: github, notes`},
		{name: "unavailable", agent: "alice", args: `{"name":"video"}`, wantErr: true,
			want: "skill video is unavailable: binary ffmpeg not found on PATH; environment variable VIDEO_KEY is not set; tell the user what is missing, and do the task without it"},
		{name: "invalid", agent: "alice", args: `{"name":"broken"}`, wantErr: true,
			want: `skill broken cannot be loaded: its SKILL.md is invalid (skills/broken/SKILL.md:1: front matter has no closing "---" line); tell the user, and do the task without it`},
		{name: "no skills allowed", agent: "bob", args: `{"name":"notes"}`, wantErr: true,
			want: "skill notes is not allowed for this agent; this agent has no skills it can load"},
		{name: "malformed pattern allows nothing", agent: "eve", args: `{"name":"notes"}`, wantErr: true,
			want: "skill notes is not allowed for this agent; this agent has no skills it can load"},
		{name: "no policy entry allows all", agent: "carol", args: `{"name":"secret"}`, want: "Secret instructions.\n\n---\nSkill folder: skills/secret\n"},
		{name: "no name", agent: "carol", args: `{"name":""}`, wantErr: true,
			want: "no skill name given; skills this agent can load: github, notes, secret"},
		{name: "bad arguments", agent: "carol", args: `{"name":3}`, wantErr: true,
			want: `invalid arguments for skill: property "name": type: 3 has type "integer", want "string"`},
		{name: "unknown argument", agent: "carol", args: `{"name":"notes","path":"x"}`, wantErr: true,
			want: `invalid arguments for skill: unexpected additional properties ["path"]`},
		{name: "servers connected", agent: "alice", args: `{"name":"github"}`,
			want:      githubBody + "MCP servers of this skill, now connected (their tools are named <server>__<tool>):\n- gh\n",
			wantCalls: gh},
		{name: "servers fail", agent: "alice", args: `{"name":"github"}`, connectErr: errors.New("gh-mcp: executable file not found"), wantErr: true,
			want:      "skill github: connecting its MCP servers (gh) failed: gh-mcp: executable file not found",
			wantCalls: gh},
		{name: "no connector", agent: "alice", args: `{"name":"github"}`, noConn: true,
			want: githubBody + "This skill bundles MCP servers (gh), but they cannot be connected here: do without their tools.\n"},
		{name: "read file", agent: "alice", args: `{"name":"github","file":"ref.md"}`, want: "# Reference\n"},
		{name: "read file of a skill not allowed", agent: "alice", args: `{"name":"secret","file":"SKILL.md"}`, wantErr: true,
			want: "skill secret is not allowed for this agent; skills this agent can load: github, notes"},
		{name: "read file outside", agent: "alice", args: `{"name":"github","file":"../secret/SKILL.md"}`, wantErr: true,
			want: `skill: github: invalid skill file path: "../secret/SKILL.md" contains ".."; only files inside the skill's folder can be read; the files of skill github are listed when it is loaded (call skill with name "github" and no file)`},
		{name: "read missing file", agent: "alice", args: `{"name":"github","file":"nope.md"}`, wantErr: true,
			want: `skill: github: invalid skill file path: no file "nope.md" in the skill's folder; the files of skill github are listed when it is loaded (call skill with name "github" and no file)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := &fakeConnector{err: tt.connectErr}
			var c Connector = conn
			if tt.noConn {
				c = nil
			}
			r := tool.NewRegistry(nil)
			if err := r.Register(Tool(func() *Set { return set }, policy, c)); err != nil {
				t.Fatal(err)
			}
			out := r.Run(t.Context(), &tool.Call{ID: "1", Name: ToolName, Args: json.RawMessage(tt.args), Agent: tt.agent}, &tool.RunOptions{MaxOutputBytes: 1 << 20})
			if out.Result.IsError != tt.wantErr {
				t.Errorf("IsError = %v, want %v (output %q)", out.Result.IsError, tt.wantErr, out.Result.Output)
			}
			if diff := cmp.Diff(tt.want, relative(root, out.Result.Output)); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCalls, conn.calls); diff != "" {
				t.Errorf("connector calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolWithoutSkills(t *testing.T) {
	for name, current := range map[string]func() *Set{
		"nil func":    nil,
		"nil set":     func() *Set { return nil },
		"current set": func() *Set { return &Set{} },
	} {
		t.Run(name, func(t *testing.T) {
			tl := Tool(current, nil, nil)
			_, err := tl.Call(t.Context(), &tool.Call{Name: ToolName, Args: json.RawMessage(`{"name":"notes"}`)})
			want := `unknown skill "notes"; this agent has no skills it can load`
			if err == nil || err.Error() != want {
				t.Errorf("error = %v, want %s", err, want)
			}
		})
	}
}

func TestToolSpec(t *testing.T) {
	s := Tool(nil, nil, nil).Spec()
	if s.Name != ToolName || !s.ReadOnly || s.Risky || s.Kind != "" {
		t.Errorf("spec = %+v", s)
	}
	if !strings.Contains(s.Description, "system prompt") {
		t.Errorf("description does not point to the listing: %q", s.Description)
	}
}

// The tool is offered only to agents that may load a skill.
func TestToolServes(t *testing.T) {
	_, _, set := loadFixture(t, "testdata/tool.txtar")
	policy := policyMap{"alice": {"notes"}, "bob": {}, "carol": {"broken"}}
	serves := Tool(func() *Set { return set }, policy, nil).Spec().Serves
	for agentID, want := range map[string]bool{"alice": true, "bob": false, "carol": false} {
		if serves(agentID) != want {
			t.Errorf("serves(%s) = %v, want %v", agentID, !want, want)
		}
	}
	if Tool(func() *Set { return nil }, nil, nil).Spec().Serves("alice") {
		t.Error("offered with no skills")
	}
	if !Tool(func() *Set { return set }, nil, nil).Spec().Serves("anyone") {
		t.Error("not offered without a policy, with skills")
	}
}

func TestLoads(t *testing.T) {
	tests := []struct {
		tool, args string
		want       string
		ok         bool
	}{
		{"skill", `{"name":"tea"}`, "tea", true},
		{"skill", `{"name":"tea","file":"a.md"}`, "", false},
		{"skill", `{"name":""}`, "", false},
		{"skill", `not json`, "", false},
		{"other", `{"name":"tea"}`, "", false},
	}
	for _, tt := range tests {
		if got, ok := Loads(tt.tool, json.RawMessage(tt.args)); got != tt.want || ok != tt.ok {
			t.Errorf("Loads(%s, %s) = %q, %v; want %q, %v", tt.tool, tt.args, got, ok, tt.want, tt.ok)
		}
	}
}
