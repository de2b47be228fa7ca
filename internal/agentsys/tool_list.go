package agentsys

import (
	"context"

	"agentd/internal/agent"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// agentLister lists agents (the System).
type agentLister interface {
	List(ctx context.Context, f store.AgentFilter) ([]Info, string, error)
}

// maxListed bounds the agents list_agents returns in one call.
const maxListed = 100

// parentMe is the parent argument of list_agents that means the caller.
const parentMe = "me"

type listArgs struct {
	Type   string `json:"type"`
	Parent string `json:"parent"`
	State  string `json:"state"`
	Limit  int    `json:"limit"`
	Before string `json:"before"`
}

// listResult is a page of agents and the cursor of the next ("" none).
type listResult struct {
	Agents []Info `json:"agents"`
	Next   string `json:"next,omitempty"`
}

const listDesc = `List the agents of this node: dynamic agents (started, created or contacted at run time) with their type, parent, state and cost, ` +
	`and the cron and system agents. Filter by type, parent ("me": the agents you started) and state; ` +
	`a page stops at limit (default and most 100): pass its next as before for the next page.`

func listSpec() tool.Spec {
	return tool.Spec{Name: ToolList, Description: listDesc, Risky: true, ReadOnly: true,
		Reach: "reads which agents run on this node, and what they cost",
		InputSchema: objectSchema(map[string]any{
			"type":   enumProp("Only agents of this type.", agent.Types()),
			"parent": agentProp(`Only the agents this one started; "me" for yours.`),
			"state":  enumProp("Only agents in this state.", store.AgentStates()),
			"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": maxListed, "description": "The most agents to return (default 100)."},
			"before": textProp("The next of the page before, for the page after it.", 128),
		})}
}

// listTool is list_agents.
func listTool(s agentLister) tool.Tool {
	return agentTool(listSpec(), func(ctx context.Context, c *tool.Call, a listArgs) (any, error) {
		f := store.AgentFilter{Type: a.Type, Parent: a.Parent, State: a.State, Limit: a.Limit, Before: a.Before}
		if f.Parent == parentMe {
			f.Parent = c.Agent
		}
		if f.Limit == 0 {
			f.Limit = maxListed
		}
		rows, next, err := s.List(ctx, f)
		if err != nil {
			return nil, err
		}
		if rows == nil {
			rows = []Info{}
		}
		return listResult{Agents: rows, Next: next}, nil
	})
}
