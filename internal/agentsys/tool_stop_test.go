package agentsys

import (
	"fmt"
	"testing"

	"agentd/internal/tool"
)

func TestStopTool(t *testing.T) {
	by := "agent:" + callerID
	for _, tc := range []toolCase{{
		name: "a child and its own",
		args: `{"id":"` + childID + `","reason":"the answer came in"}`,
		set:  func(f *fakeSystem) { f.stopped = []string{"cgrandchild0000000000000", childID} },
		want: []any{stopCall{childID, "the answer came in", by}},
		out:  `{"stopped":["cgrandchild0000000000000","` + childID + `"]}`,
	}, {
		name: "one that has ended already",
		args: `{"id":"` + childID + `"}`,
		want: []any{stopCall{childID, "", by}},
		out:  `{"stopped":[]}`,
	}, {
		name: "no id", args: `{"reason":"x"}`, errs: []string{"id"},
	}, {
		name: "a blank id", args: `{"id":" "}`, errs: []string{"id", "empty"},
	}, {
		name: "out of reach",
		args: `{"id":"assistant"}`,
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: stop assistant: %w", ErrReach) },
		want: []any{stopCall{"assistant", "", by}},
		errs: []string{"out of reach", "agents.targets"},
	}} {
		runTool(t, ToolStop, func(f *fakeSystem) tool.Tool { return stopTool(f) }, []toolCase{tc})
	}
}
