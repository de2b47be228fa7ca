package agentsys

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// PermanentMaker makes permanent agents: what create_permanent_agent
// consumes (*Permanents).
type PermanentMaker interface {
	CreatePermanent(ctx context.Context, req PermanentRequest) (PermanentResult, error)
}

// PermanentRequest asks for a permanent agent: an agent row of its own
// (name, description, system prompt, tools) that persists across
// restarts, made by Creator.
type PermanentRequest struct {
	// Creator is the creating agent's id, CreatorSession its session's
	// address, CallID the tool call.
	Creator        string
	CreatorSession string
	CallID         string
	Name           string
	Description    string
	SystemPrompt   string
	// Tools are tool names and globs; each must name tools the creator
	// may use itself.
	Tools []string
}

// PermanentResult is the permanent agent made (or found, when the same
// request was made before: Created false).
type PermanentResult struct {
	Instance store.Instance
	Created  bool
	// Allow and Ask are the tools the new agent was given: those the
	// creator may call, and those it may call with a person's approval.
	Allow, Ask []string
}

// Limits of create_permanent_agent's arguments.
const (
	maxSystemPrompt = 64 << 10
	maxDescription  = 1024
	maxToolPatterns = 100
)

type permanentArgs struct {
	Name         string   `json:"name"`
	Description  string   `json:"description"`
	SystemPrompt string   `json:"system_prompt"`
	Tools        []string `json:"tools"`
}

// permanentResult is what create_permanent_agent returns.
type permanentResult struct {
	ID      string   `json:"id"`      // its instance id
	Name    string   `json:"name"`    // its agent id: address it with this
	Created bool     `json:"created"` // false: it existed already, made by you with this spec
	Allow   []string `json:"allow"`   // the tools it may call
	Ask     []string `json:"ask,omitempty"`
}

const permanentDesc = `Create a permanent agent: one with a stable name, a description and a system prompt of its own, which persists across restarts ` +
	`and which you and others can then message or ask by its name. ` +
	`tools lists the tools it may use (names or globs such as "web_*"); you can only give tools you may use yourself. ` +
	`Left out, it has no tools. Creating one may wait for a person's approval.`

func permanentSpec() tool.Spec {
	return tool.Spec{Name: ToolPermanent, Description: permanentDesc, Risky: true, AskFirst: true,
		Reach: "creates a lasting agent with tools and a prompt of its own",
		InputSchema: objectSchema(map[string]any{
			"name":          textProp("Its id: letters, digits, - and _, starting with a letter or digit, at most 64.", 64),
			"description":   textProp("What it is for, in a line.", maxDescription),
			"system_prompt": textProp("Its instructions.", maxSystemPrompt),
			"tools": map[string]any{"type": "array", "maxItems": maxToolPatterns, "items": textProp("A tool name or glob.", 64),
				"description": "The tools it may use: names or globs over names; each must be a tool you may use."},
		}, "name", "description", "system_prompt")}
}

// permanentTool is create_permanent_agent. It is not idempotent (it
// writes a row); a call made again with the same arguments, as after a
// crash, finds the row it wrote and returns it.
func permanentTool(p PermanentMaker) tool.Tool {
	return agentTool(permanentSpec(), func(ctx context.Context, c *tool.Call, a permanentArgs) (any, error) {
		if p == nil {
			return nil, errors.New("agentd makes no permanent agents here (no agent rows)")
		}
		if err := checkPermanent(&a); err != nil {
			return nil, err
		}
		r, err := p.CreatePermanent(ctx, PermanentRequest{Creator: c.Agent, CreatorSession: c.Session, CallID: c.ID,
			Name: a.Name, Description: a.Description, SystemPrompt: a.SystemPrompt, Tools: a.Tools})
		if err != nil {
			return nil, err
		}
		allow := r.Allow
		if allow == nil {
			allow = []string{}
		}
		return permanentResult{ID: r.Instance.ID, Name: r.Instance.Agent, Created: r.Created, Allow: allow, Ask: r.Ask}, nil
	})
}

// checkPermanent checks what the schema cannot: the name is an agent id
// that is not an instance's, the texts are not blank, the prompt's size
// in bytes.
func checkPermanent(a *permanentArgs) error {
	switch {
	case !agent.ValidID(a.Name):
		return badArg("name", "%q: an agent id is 1 to 64 letters, digits, - and _, starting with a letter or digit", a.Name)
	case store.IsInstanceID(a.Name):
		return badArg("name", "%q has the shape of a dynamic agent's id; choose a name", a.Name)
	case strings.TrimSpace(a.Description) == "":
		return badArg("description", "is empty")
	case strings.TrimSpace(a.SystemPrompt) == "":
		return badArg("system_prompt", "is empty")
	case len(a.SystemPrompt) > maxSystemPrompt:
		return badArg("system_prompt", "longer than %d bytes", maxSystemPrompt)
	case len(a.Description) > maxDescription:
		return badArg("description", "longer than %d bytes", maxDescription)
	}
	for i, p := range a.Tools {
		if strings.TrimSpace(p) != p || p == "" {
			return badArg(fmt.Sprintf("tools[%d]", i), "%q: a tool name or glob, without spaces", p)
		}
	}
	return nil
}
