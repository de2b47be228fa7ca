package engine

import (
	"context"
	"slices"

	"agentd/internal/event"
	"agentd/internal/skill"
	"agentd/internal/tool"
)

// Skills a session has loaded.
//
// Loading a skill that bundles MCP servers makes their tools (model,
// context, action, post-process and hook tools alike) the loading
// session's, not its agent's (tool.Spec.Skills). Which skills a session
// loaded is derived from its log, never kept in memory alone: a skill call
// whose result is not an error loads it, a summary carries the skills of
// the events it folds, and a reset forgets them with the rest of the
// context. So a restarted agentd gives each session the same tools as
// before; the servers themselves, which are not kept across restarts, are
// connected again by SkillServers when a session that loaded their skill
// starts a turn.

// SkillServers connects the MCP servers of the skills a session loaded,
// for its agent, if they are not connected (after a restart they are not).
// A failure is the implementation's to log: the session then goes without
// those tools.
type SkillServers interface {
	ConnectSkills(ctx context.Context, agentID string, skills []string)
}

// loadedSkills tracks the skills a conversation loaded, from its events.
// The zero value is empty.
type loadedSkills struct {
	calls map[string]string // skill calls waiting for their result: call id -> skill
	names []string          // sorted
}

// call notes a tool call that may load a skill.
func (l *loadedSkills) call(d *event.ToolCallData) {
	if name, ok := skill.Loads(d.Name, d.Args); ok {
		if l.calls == nil {
			l.calls = map[string]string{}
		}
		l.calls[d.ID] = name
	}
}

// result notes a tool result: a skill call's success loads the skill.
func (l *loadedSkills) result(d *event.ToolResultData) {
	name, ok := l.calls[d.ID]
	if !ok {
		return
	}
	delete(l.calls, d.ID)
	if !d.IsError {
		l.add(name)
	}
}

// add adds skills. It never changes a slice list returned: a new one is
// made (calls still running may hold the old one).
func (l *loadedSkills) add(names ...string) {
	for _, n := range names {
		if i, found := slices.BinarySearch(l.names, n); !found {
			l.names = slices.Insert(slices.Clip(l.names), i, n)
		}
	}
}

// event notes one logged event.
func (l *loadedSkills) event(e *event.Event) {
	switch e.Kind {
	case event.ToolCall:
		var d event.ToolCallData
		if e.Decode(&d) == nil {
			l.call(&d)
		}
	case event.ToolResult:
		if len(l.calls) == 0 {
			return
		}
		var d event.ToolResultData
		if e.Decode(&d) == nil {
			l.result(&d)
		}
	case event.Summary:
		var d event.SummaryData
		if e.Decode(&d) == nil {
			l.add(d.Skills...)
		}
	}
}

// list returns the skills loaded, sorted; the caller must not change it,
// and later adds leave it as it is.
func (l *loadedSkills) list() []string { return l.names[:len(l.names):len(l.names)] }

// initSkills gathers the skills the session loaded before this turn (and
// in this turn's logged part, when it resumes), then has their servers
// connected.
func (r *run) initSkills(ctx context.Context) {
	r.skills.add(r.t.Skills...)
	for i := range r.t.Prior {
		r.skills.event(&r.t.Prior[i])
	}
	if len(r.skills.names) > 0 && r.e.o.Skills != nil {
		r.e.o.Skills.ConnectSkills(ctx, r.def.ID, r.skills.list())
	}
}

// noteSkills notes the skills a step's calls loaded: their servers' tools
// are this session's from the next step on.
func (r *run) noteSkills(calls []pendingCall, results []event.ToolResultData) {
	for i := range calls {
		r.skills.call(&calls[i].ToolCallData)
		r.skills.result(&results[i])
	}
}

// seesSkill reports whether the session loaded a skill that bundles the
// tool's server (true for a tool no skill bundles).
func (r *run) seesSkill(s *tool.Spec) bool {
	return s.Skills == nil || slices.ContainsFunc(s.Skills, func(n string) bool {
		_, ok := slices.BinarySearch(r.skills.names, n)
		return ok
	})
}
