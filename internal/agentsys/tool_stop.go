package agentsys

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"agentd/internal/store"
	"agentd/internal/tool"
)

// agentStopper stops agents and tells their lineage (the System).
type agentStopper interface {
	Stop(ctx context.Context, id, reason, by string) ([]string, error)
	Status(ctx context.Context, id string) (Status, error)
}

type stopArgs struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// stopResult lists the agents stopped: the one named and its sub-agents.
type stopResult struct {
	Stopped []string `json:"stopped"`
	// Note says why none was: the agent had ended already (a call made
	// again after a crash finds it so).
	Note string `json:"note,omitempty"`
}

const stopDesc = `Stop an agent and its sub-agents: a running turn is cancelled, queued messages are refused, and it ends "stopped". ` +
	`You may stop the agents you started (and theirs), and those your definition's agents.targets names. ` +
	`An agent that has ended already is not stopped again.`

// Limits of stop_agent.
const (
	maxReason = 1024
	// maxLineage bounds the parents stop_agent walks up to find the
	// caller: more than any max_depth, and an end to a cycle.
	maxLineage = 64
)

func stopSpec() tool.Spec {
	return tool.Spec{Name: ToolStop, Description: stopDesc, Risky: true, Idempotent: true,
		Reach: "acts on other agents: it stops them",
		InputSchema: objectSchema(map[string]any{
			"id":     agentProp("The agent to stop: the id start_background_agent returned, or an agent's id or name."),
			"reason": textProp("Why, for its log and its report.", maxReason),
		}, "id")}
}

// stopTool is stop_agent: it stops the caller's descendants and the
// agents its definition's agents.targets names (defs resolves the
// caller; nil: descendants only), nothing else. It is idempotent:
// stopping an agent that has ended stops nothing more.
func stopTool(s agentStopper, defs Definitions) tool.Tool {
	return agentTool(stopSpec(), func(ctx context.Context, c *tool.Call, a stopArgs) (any, error) {
		if err := nonBlank("id", a.ID); err != nil {
			return nil, err
		}
		id := strings.TrimSpace(a.ID)
		if err := mayStop(ctx, s, defs, c.Agent, id); err != nil {
			return nil, err
		}
		ids, err := s.Stop(ctx, id, a.Reason, store.ProvenanceAgent+c.Agent)
		if errors.Is(err, ErrEnded) {
			return stopResult{Stopped: []string{}, Note: strings.TrimPrefix(err.Error(), "agentsys: ")}, nil
		}
		if err != nil {
			return nil, err
		}
		if ids == nil {
			ids = []string{}
		}
		return stopResult{Stopped: ids}, nil
	})
}

// mayStop reports, as ErrReach, that the caller may not stop the agent
// id: it is neither the caller's descendant (its parent, or its parent's
// parent …, is the caller) nor named by the caller's agents.targets.
func mayStop(ctx context.Context, s agentStopper, defs Definitions, caller, id string) error {
	st, err := s.Status(ctx, id)
	if err != nil {
		return err
	}
	in := st.Instance
	if defs != nil {
		if d, ok := defs.Get(caller); ok {
			// Its ids only: a template's name does not name its
			// instances, nor a label the agent (as mayReach).
			for _, n := range []string{in.Agent, in.ID, st.ID} {
				if n != "" && globs(d.Agents.Targets, n) {
					return nil
				}
			}
		}
	}
	for p, i := in.Parent, 0; p != "" && i < maxLineage; i++ {
		if p == caller {
			return nil
		}
		ps, err := s.Status(ctx, p)
		if err != nil {
			break
		}
		p = ps.Instance.Parent
	}
	return fmt.Errorf("agentsys: stop %s: %w: %s did not start it, nor does its agents.targets name it", id, ErrReach, caller)
}
