package openai

import (
	"bytes"
	"encoding/json"

	"agentd/internal/model"
)

// reserved reports whether key is a body key the client owns, which
// Request.Extra cannot replace.
func reserved(key string) bool {
	switch key {
	case "model", "messages", "tools", "stream", "stream_options":
		return true
	}
	return false
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"` // null for a tool-calling turn without text
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireToolSpec `json:"function"`
}

type wireToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// encodeRequest builds the JSON body for req.
//
// Request.Extra is merged into the body and wins over the client's own
// parameters (max_tokens, temperature, ...), except for the keys the client
// owns (model, messages, tools, stream, stream_options). When Extra sets
// "max_completion_tokens", which newer OpenAI models require, max_tokens is
// left out.
func (c *Client) encodeRequest(req *model.Request) ([]byte, error) {
	if req == nil {
		return nil, c.ep.Fail(model.ErrBadRequest, 0, "nil request")
	}
	msgs := make([]wireMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, wireMessage{Role: "system", Content: &req.System})
	}
	for i := range req.Messages {
		m := &req.Messages[i]
		wm := wireMessage{Role: string(m.Role), Content: &m.Content}
		switch m.Role {
		case model.RoleAssistant:
			for _, tc := range m.ToolCalls {
				wm.ToolCalls = append(wm.ToolCalls, wireToolCall{
					ID:       tc.ID,
					Type:     "function",
					Function: wireFunction{Name: tc.Name, Arguments: argumentsText(tc.Args)},
				})
			}
			if m.Content == "" && len(m.ToolCalls) > 0 {
				wm.Content = nil
			}
		case model.RoleTool:
			wm.ToolCallID = m.ToolCallID
		}
		msgs = append(msgs, wm)
	}

	body := map[string]any{
		"model":          req.Model,
		"messages":       msgs,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	}
	if len(req.Tools) > 0 {
		tools := make([]wireTool, 0, len(req.Tools))
		for _, t := range req.Tools {
			params, err := c.ep.Schema(t)
			if err != nil {
				return nil, err
			}
			tools = append(tools, wireTool{Type: "function", Function: wireToolSpec{
				Name: t.Name, Description: t.Description, Parameters: params,
			}})
		}
		body["tools"] = tools
	}
	if req.MaxTokens > 0 {
		body["max_tokens"] = req.MaxTokens
	}
	if req.Temperature != nil {
		body["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		body["top_p"] = *req.TopP
	}
	if len(req.Stop) > 0 {
		body["stop"] = req.Stop
	}
	for k, v := range req.Extra {
		if reserved(k) {
			continue
		}
		if k == "max_completion_tokens" {
			delete(body, "max_tokens")
		}
		body[k] = v
	}
	return c.ep.Encode(body)
}

// argumentsText returns the arguments string to send for a tool call the
// model made earlier. Args holding a JSON string are arguments that were not
// valid JSON when received (see the package documentation): their raw text
// is sent back as it was.
func argumentsText(args json.RawMessage) string {
	a := bytes.TrimSpace(args)
	if len(a) == 0 {
		return "{}"
	}
	if a[0] == '"' {
		var s string
		if json.Unmarshal(a, &s) == nil {
			return s
		}
	}
	return string(a)
}
