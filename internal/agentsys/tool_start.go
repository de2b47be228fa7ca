package agentsys

import (
	"context"

	"agentd/internal/store"
	"agentd/internal/tool"
)

// agentStarter starts agents (the System).
type agentStarter interface {
	Start(ctx context.Context, req StartRequest) (store.Instance, error)
}

// maxLabel bounds an agent's name given to start_background_agent.
const maxLabel = 64

type startArgs struct {
	Prompt   string `json:"prompt"`
	Template string `json:"template"`
	Name     string `json:"name"`
	Detached bool   `json:"detached"`
	Report   string `json:"report"`
}

// startResult is what start_background_agent returns at once, before the
// new agent runs.
type startResult struct {
	ID      string `json:"id"`
	Session string `json:"session"` // its main session, where its log is
	Type    string `json:"type"`    // subagent, or background when detached
	State   string `json:"state"`
}

const startDesc = `Start a new agent on a task and return at once with its id; it works on its own while you go on. ` +
	`Its final answer (or its failure) comes back to this conversation as a system message with its cost: ` +
	`a loud report starts your next turn, a silent one waits for it. ` +
	`By default it is your sub-agent: it spends from your turn's budget and stops if your turn is cancelled. ` +
	`detached: true makes it a background agent with a budget of its own that lives on without you.`

func startSpec() tool.Spec {
	return tool.Spec{Name: ToolStart, Description: startDesc, Risky: true, Idempotent: true,
		Reach: "starts other agents, which run and spend on their own",
		InputSchema: objectSchema(map[string]any{
			"prompt":   textProp("The task: the new agent's first message. Say what to do and what to answer with.", 0),
			"template": textProp("The agent definition to start from (its id); left out, your own. Your definition's agents.templates says which you may use.", 64),
			"name":     textProp("A short label for the new agent, shown in lists.", maxLabel),
			"detached": map[string]any{"type": "boolean", "description": "true: a background agent with its own budget that is not stopped with your turn; false (default): your sub-agent."},
			"report":   enumProp("How its end reaches you: loud (default) starts your next turn, silent enters it without starting one.", []string{store.ReportLoud, store.ReportSilent}),
		}, "prompt")}
}

// startTool is start_background_agent. It is idempotent: the System keys
// the new agent on the caller's session and call id, so a call re-run
// after a crash finds the agent it started rather than start another.
func startTool(s agentStarter) tool.Tool {
	return agentTool(startSpec(), func(ctx context.Context, c *tool.Call, a startArgs) (any, error) {
		if err := nonBlank("prompt", a.Prompt); err != nil {
			return nil, err
		}
		if len(a.Prompt) > store.MaxInstanceTask {
			return nil, badArg("prompt", "longer than %d bytes", store.MaxInstanceTask)
		}
		in, err := s.Start(ctx, StartRequest{Caller: c.Agent, CallerSession: c.Session, Turn: c.Turn, CallID: c.ID, Hops: c.Hops,
			Prompt: a.Prompt, Template: a.Template, Name: a.Name, Detached: a.Detached, Report: a.Report})
		if err != nil {
			return nil, err
		}
		return startResult{ID: in.ID, Session: instanceSession(in), Type: in.Type, State: in.State}, nil
	})
}

// instanceSession is the address of an instance's main session.
func instanceSession(in store.Instance) string {
	agentID := in.Agent
	if agentID == "" {
		agentID = in.ID
	}
	return agentID + "/main"
}
