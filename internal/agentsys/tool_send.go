package agentsys

import (
	"context"
	"strings"

	"agentd/internal/runtime"
	"agentd/internal/tool"
)

// agentSender delivers messages to agents (the System).
type agentSender interface {
	Send(ctx context.Context, req SendRequest) (runtime.Receipt, string, error)
}

type sendArgs struct {
	Target string `json:"target"`
	Text   string `json:"text"`
	Silent bool   `json:"silent"`
}

// sendResult says where a message went.
type sendResult struct {
	DeliveredTo string `json:"delivered_to"` // the target's agent id
	Session     string `json:"session"`      // the target's session that got it
	Turn        int64  `json:"turn"`         // the message's inbox item: the turn it starts (or enters, silent)
	Silent      bool   `json:"silent"`
	Duplicate   bool   `json:"duplicate,omitempty"` // this call's message was delivered before
}

const sendDesc = `Send a message to another agent. It arrives as <system_message origin="<your id>">…</system_message> and starts that agent's turn; ` +
	`a silent one is only logged and enters its next turn without starting one. ` +
	`target is an agent id (or a dynamic agent's id), an agent's name, or #tag; left out, the person's conversation you were most recently in (the most recent user agent). ` +
	`You may message your parent, your children, and the agents your definition's agents.targets names.`

func sendSpec() tool.Spec {
	return tool.Spec{Name: ToolSend, Description: sendDesc, Risky: true, Idempotent: true,
		Reach: "acts on other agents: it messages them and starts their turns",
		InputSchema: objectSchema(map[string]any{
			"target": agentProp("Who gets it: an agent id, a dynamic agent's id, a name or #tag; left out, the most recent user agent."),
			"text":   textProp("The message.", 0),
			"silent": map[string]any{"type": "boolean", "description": "true: log it for the target's next turn without starting one."},
		}, "text")}
}

// sendTool is send_agent_message. It is idempotent: the System keys the
// message on the caller's session and call id, so a call re-run after a
// crash cannot deliver it twice.
func sendTool(s agentSender) tool.Tool {
	return agentTool(sendSpec(), func(ctx context.Context, c *tool.Call, a sendArgs) (any, error) {
		if err := nonBlank("text", a.Text); err != nil {
			return nil, err
		}
		if a.Target != "" && strings.TrimSpace(a.Target) == "" {
			return nil, badArg("target", "is blank; leave it out for the most recent user agent")
		}
		rc, session, err := s.Send(ctx, SendRequest{Caller: c.Agent, CallerSession: c.Session, Turn: c.Turn, CallID: c.ID, Hops: c.Hops,
			Target: strings.TrimSpace(a.Target), Text: a.Text, Silent: a.Silent})
		if err != nil {
			return nil, err
		}
		if session == "" {
			session = rc.Session
		}
		to, _, _ := strings.Cut(session, "/")
		return sendResult{DeliveredTo: to, Session: session, Turn: rc.Turn, Silent: a.Silent, Duplicate: rc.Duplicate}, nil
	})
}
