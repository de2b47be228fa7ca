package agentsys

import (
	"context"
	"strings"

	"agentd/internal/store"
	"agentd/internal/tool"
)

// stopper stops agents (the System).
type stopper interface {
	Stop(ctx context.Context, id, reason, by string) ([]string, error)
}

type stopArgs struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// stopResult lists the agents stopped: the one named and its sub-agents.
type stopResult struct {
	Stopped []string `json:"stopped"`
}

const stopDesc = `Stop an agent and its sub-agents: a running turn is cancelled, queued messages are refused, and it ends "stopped". ` +
	`You may stop the agents you started (and theirs), and those your definition's agents.targets names. ` +
	`An agent that has ended already is not stopped again.`

// maxReason bounds a stop's reason.
const maxReason = 1024

func stopSpec() tool.Spec {
	return tool.Spec{Name: ToolStop, Description: stopDesc, Risky: true, Idempotent: true,
		Reach: "acts on other agents: it stops them",
		InputSchema: objectSchema(map[string]any{
			"id":     agentID("The agent to stop: the id start_background_agent returned, or an agent's id or name."),
			"reason": text("Why, for its log and its report.", maxReason),
		}, "id")}
}

// stopTool is stop_agent. It is idempotent: stopping a stopped agent
// stops nothing more.
func stopTool(s stopper) tool.Tool {
	return agentTool(stopSpec(), func(ctx context.Context, c *tool.Call, a stopArgs) (any, error) {
		if err := nonBlank("id", a.ID); err != nil {
			return nil, err
		}
		ids, err := s.Stop(ctx, strings.TrimSpace(a.ID), a.Reason, store.ProvenanceAgent+c.Agent)
		if err != nil {
			return nil, err
		}
		if ids == nil {
			ids = []string{}
		}
		return stopResult{Stopped: ids}, nil
	})
}
