package agentsys

import (
	"testing"

	"agentd/internal/store"
	"agentd/internal/tool"
)

func TestListTool(t *testing.T) {
	two := func(f *fakeSystem) {
		f.infos = []Info{
			{ID: childID, Type: "subagent", Parent: callerID, State: "running", Session: childID + "/main", Dynamic: true, CostUSD: 0.5},
			{ID: "nightly", Type: "cron", Descriptor: "cron:nightly", State: "idle"},
		}
		f.next = "i1.next"
	}
	for _, tc := range []toolCase{{
		name: "everything",
		args: `{}`,
		want: []any{listCall{store.AgentFilter{Limit: maxListed}}},
		out:  `{"agents":[]}`,
	}, {
		name: "the caller's children, running",
		args: `{"parent":"me","state":"running","type":"subagent","limit":2}`,
		set:  two,
		want: []any{listCall{store.AgentFilter{Type: "subagent", Parent: callerID, State: "running", Limit: 2}}},
		out: `{"agents":[{"id":"` + childID + `","type":"subagent","parent":"` + callerID + `","state":"running","session":"` + childID +
			`/main","dynamic":true,"cost_usd":0.5},{"id":"nightly","type":"cron","descriptor":"cron:nightly","state":"idle"}],"next":"i1.next"}`,
	}, {
		name: "another agent's children, the next page",
		args: `{"parent":"planner","before":"i1.abc"}`,
		want: []any{listCall{store.AgentFilter{Parent: "planner", Before: "i1.abc", Limit: maxListed}}},
		out:  `{"agents":[]}`,
	}, {
		name: "an unknown type", args: `{"type":"robot"}`, errs: []string{"type"},
	}, {
		name: "an unknown state", args: `{"state":"asleep"}`, errs: []string{"state"},
	}, {
		name: "a page too long", args: `{"limit":101}`, errs: []string{"limit"},
	}, {
		name: "a page of none", args: `{"limit":0}`, errs: []string{"limit"},
	}} {
		runTool(t, ToolList, func(f *fakeSystem) tool.Tool { return listTool(f) }, []toolCase{tc})
	}
}
