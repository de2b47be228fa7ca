package agentsys

import (
	"context"
	"strings"

	"agentd/internal/tool"
)

// agentStatuser tells an agent's state (the System).
type agentStatuser interface {
	Status(ctx context.Context, id string) (Status, error)
}

type statusArgs struct {
	ID string `json:"id"`
}

const statusDesc = `Show one agent's state: its type, parent, state, cost (its own and with its sub-agents), ` +
	`its live children, the end of its last turn, and its result once it has ended.`

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
		return s.Status(ctx, strings.TrimSpace(a.ID))
	})
}
