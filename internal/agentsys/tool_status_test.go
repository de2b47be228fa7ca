package agentsys

import (
	"fmt"
	"testing"

	"agentd/internal/event"
	"agentd/internal/tool"
)

func TestStatusTool(t *testing.T) {
	for _, tc := range []toolCase{{
		name: "a sub-agent that is done",
		args: `{"id":" ` + childID + ` "}`,
		set: func(f *fakeSystem) {
			f.status = Status{Info: Info{ID: childID, Type: "subagent", Parent: callerID, State: "done", Dynamic: true, CostUSD: 0.25},
				Result: "found it", LastEnd: &event.TurnEndData{Status: "done", Reply: "found it", Steps: 2, CostUSD: 0.25}, CostTreeUSD: 0.75}
		},
		want: []any{statusCall{childID}},
		out: `{"id":"` + childID + `","type":"subagent","parent":"` + callerID + `","state":"done","dynamic":true,"cost_usd":0.25,` +
			`"last_end":{"status":"done","reply":"found it","steps":2,"cost_usd":0.25,"input_tokens":0,"output_tokens":0,"duration_ms":0},"result":"found it","cost_tree_usd":0.75}`,
	}, {
		name: "no id", args: `{}`, errs: []string{"id"},
	}, {
		name: "a blank id", args: `{"id":"  "}`, errs: []string{"id", "empty"},
	}, {
		name: "no such agent",
		args: `{"id":"ghost"}`,
		set:  func(f *fakeSystem) { f.err = fmt.Errorf("agentsys: status of ghost: %w", ErrNotFound) },
		want: []any{statusCall{"ghost"}},
		errs: []string{"no such agent", "list_agents"},
	}} {
		runTool(t, ToolStatus, func(f *fakeSystem) tool.Tool { return statusTool(f) }, []toolCase{tc})
	}
}
