package agentsys

import (
	"context"
	"strings"

	"agentd/internal/tool"
)

// agentStatuser tells an agent's state to an agent that may reach it
// (the System).
type agentStatuser interface {
	StatusFor(ctx context.Context, caller, id string) (Status, error)
}

type statusArgs struct {
	ID string `json:"id"`
}

const statusDesc = `Show one agent's state: its type, parent, state, cost (its own and with its sub-agents), ` +
	`its live children, the end of its last turn, and its result once it has ended. ` +
	`You may read your parent, your children, and the agents your definition's agents.targets names.`

func statusSpec() tool.Spec {
	return tool.Spec{Name: ToolStatus, Description: statusDesc, Risky: true, ReadOnly: true,
		Reach: "reads other agents' state and results",
		InputSchema: objectSchema(map[string]any{
			"id": agentProp("The agent: the id start_background_agent returned, or an agent's id or name."),
		}, "id")}
}

// statusTool is agent_status.
func statusTool(s agentStatuser) tool.Tool {
	return agentTool(statusSpec(), func(ctx context.Context, c *tool.Call, a statusArgs) (any, error) {
		if err := nonBlank("id", a.ID); err != nil {
			return nil, err
		}
		return s.StatusFor(ctx, c.Agent, strings.TrimSpace(a.ID))
	})
}
