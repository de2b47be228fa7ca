package agentsys

import (
	"context"
	"strings"
	"time"

	"agentd/internal/tool"
)

// agentAsker asks agents questions and waits for their answers (the System).
type agentAsker interface {
	Ask(ctx context.Context, req AskRequest) (AskResult, error)
}

type askArgs struct {
	Name     string `json:"name"`
	Question string `json:"question"`
	Timeout  string `json:"timeout"`
}

const askDesc = `Ask another agent a question and wait for its answer, as a call to a tool. ` +
	`It answers in a conversation of its own with you (its session ask:<your id>), on its own budget. ` +
	`name is an agent id, a dynamic agent's id, a name or #tag. ` +
	`timeout (e.g. "90s", "5m") bounds the wait; agentd.yaml's agents.ask_timeout and your tools.timeout bound it too. ` +
	`If the time runs out its turn is cancelled and the question stays in its log.`

func askSpec() tool.Spec {
	return tool.Spec{Name: ToolAsk, Description: askDesc, Risky: true, Idempotent: true,
		Reach: "acts on other agents: it asks them, and they run a turn",
		InputSchema: objectSchema(map[string]any{
			"name":     agentProp("Whom to ask: an agent id, a dynamic agent's id, a name or #tag."),
			"question": textProp("The question, with what it needs to answer.", 0),
			"timeout":  textProp(`The longest wait, as a duration: "30s", "2m".`, 32),
		}, "name", "question")}
}

// askTool is ask_agent. It is idempotent: the System keys the question on
// the call id, so a call re-run after a crash waits for the same answer.
func askTool(s agentAsker) tool.Tool {
	return agentTool(askSpec(), func(ctx context.Context, c *tool.Call, a askArgs) (any, error) {
		if err := nonBlank("name", a.Name); err != nil {
			return nil, err
		}
		if err := nonBlank("question", a.Question); err != nil {
			return nil, err
		}
		var timeout time.Duration
		if a.Timeout != "" {
			d, err := time.ParseDuration(strings.TrimSpace(a.Timeout))
			if err != nil || d <= 0 {
				return nil, badArg("timeout", "%q is not a positive duration such as \"90s\" or \"2m\"", a.Timeout)
			}
			timeout = d
		}
		return s.Ask(ctx, AskRequest{Caller: c.Agent, CallerSession: c.Session, CallID: c.ID, Hops: c.Hops,
			Target: strings.TrimSpace(a.Name), Question: a.Question, Timeout: timeout})
	})
}
