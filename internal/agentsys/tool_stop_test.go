package agentsys

import (
	"fmt"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/store"
	"agentd/internal/tool"
)

func TestStopTool(t *testing.T) {
	const grandchild = "cgrandchild0000000000000"
	by := "agent:" + callerID
	instance := func(id, agentID, parent string) Status {
		return Status{Info: Info{ID: id, Parent: parent}, Instance: store.Instance{ID: id, Agent: agentID, Parent: parent}}
	}
	lineage := map[string]Status{
		childID:                    instance(childID, childID, callerID),
		grandchild:                 instance(grandchild, grandchild, childID),
		"cstranger000000000000000": instance("cstranger000000000000000", "cstranger000000000000000", "assistant"),
		"assistant":                {Info: Info{ID: "assistant", Type: "permanent"}},
		"release-notes":            instance("crelease0000000000000000", "release-notes", "helper"),
		"helper":                   {Info: Info{ID: "helper", Type: "permanent"}},
	}
	family := func(f *fakeSystem) { f.statuses = lineage }
	defs := definitions{callerID: {ID: callerID, Agents: agent.AgentsPolicy{Targets: []string{"release-*"}}}}
	for _, tc := range []toolCase{{
		name: "a child and its own",
		args: `{"id":"` + childID + `","reason":"the answer came in"}`,
		set:  func(f *fakeSystem) { family(f); f.stopped = []string{grandchild, childID} },
		want: []any{statusCall{childID}, stopCall{childID, "the answer came in", by}},
		out:  `{"stopped":["` + grandchild + `","` + childID + `"]}`,
	}, {
		name: "a grandchild",
		args: `{"id":"` + grandchild + `"}`,
		set:  func(f *fakeSystem) { family(f); f.stopped = []string{grandchild} },
		want: []any{statusCall{grandchild}, statusCall{childID}, stopCall{grandchild, "", by}},
		out:  `{"stopped":["` + grandchild + `"]}`,
	}, {
		name: "an agent its agents.targets names",
		args: `{"id":"release-notes"}`,
		set:  func(f *fakeSystem) { family(f); f.stopped = []string{"crelease0000000000000000"} },
		want: []any{statusCall{"release-notes"}, stopCall{"release-notes", "", by}},
		out:  `{"stopped":["crelease0000000000000000"]}`,
	}, {
		name: "one that has ended already",
		args: `{"id":"` + childID + `"}`,
		set: func(f *fakeSystem) {
			family(f)
			f.err = fmt.Errorf("agentsys: stop: %w: %s is done", ErrEnded, childID)
		},
		want: []any{statusCall{childID}, stopCall{childID, "", by}},
		out:  `{"stopped":[],"note":"stop: agent has ended: ` + childID + ` is done"}`,
	}, {
		name: "another agent's child",
		args: `{"id":"cstranger000000000000000"}`,
		set:  family,
		want: []any{statusCall{"cstranger000000000000000"}, statusCall{"assistant"}},
		errs: []string{"out of reach", "did not start it", "agents.targets"},
	}, {
		name: "an agent defined in a file",
		args: `{"id":"assistant"}`,
		set:  family,
		want: []any{statusCall{"assistant"}},
		errs: []string{"out of reach"},
	}, {
		name: "no such agent",
		args: `{"id":"ghost"}`,
		set:  family,
		want: []any{statusCall{"ghost"}},
		errs: []string{"no such agent"},
	}, {
		name: "no id", args: `{"reason":"x"}`, errs: []string{"id"},
	}, {
		name: "a blank id", args: `{"id":" "}`, errs: []string{"id", "empty"},
	}} {
		runTool(t, ToolStop, func(f *fakeSystem) tool.Tool { return stopTool(f, defs) }, []toolCase{tc})
	}
}

// TestStopToolNoDefinitions: without the caller's definition only its
// descendants are in reach.
func TestStopToolNoDefinitions(t *testing.T) {
	runTool(t, ToolStop, func(f *fakeSystem) tool.Tool { return stopTool(f, nil) }, []toolCase{{
		name: "an agent targets would name",
		args: `{"id":"release-notes"}`,
		set: func(f *fakeSystem) {
			f.statuses = map[string]Status{"release-notes": {Instance: store.Instance{ID: "crelease0000000000000000", Agent: "release-notes", Parent: "helper"}}}
		},
		want: []any{statusCall{"release-notes"}, statusCall{"helper"}},
		errs: []string{"out of reach"},
	}})
}
