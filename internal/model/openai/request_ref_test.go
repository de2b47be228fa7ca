package openai

import (
	"encoding/json"

	"agentd/internal/model"
	"agentd/internal/model/internal/wiretest"
)

// The request body as encoding/json makes it from a map of structs: what
// encodeRequest writes by hand must decode to the same (FuzzEncodeRequest).

type wireMessage struct {
	Role string `json:"role"`
	// Content is a *string, nil (null) for a tool-calling turn without
	// text, or a []wirePart for a user message with images.
	Content    any            `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// wirePart is a content part of a user message: text or an image.
type wirePart struct {
	Type     string        `json:"type"`
	Text     *string       `json:"text,omitempty"`
	ImageURL *wireImageURL `json:"image_url,omitempty"`
}

type wireImageURL struct {
	URL string `json:"url"`
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

// referenceBody is the body encodeRequest must be equal to.
func referenceBody(c *Client, req *model.Request, stream bool) ([]byte, error) {
	msgs := make([]wireMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, wireMessage{Role: "system", Content: &req.System})
	}
	// Tool messages are text only: the images of a run of tool results go
	// in one user message right after it.
	var toolImages []wirePart
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role != model.RoleTool && len(toolImages) > 0 {
			msgs = append(msgs, wireMessage{Role: string(model.RoleUser), Content: toolImages})
			toolImages = nil
		}
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
			toolImages = refImages(toolImages, m.Images)
		case model.RoleUser:
			if len(m.Images) > 0 {
				parts := make([]wirePart, 0, len(m.Images)+1)
				if m.Content != "" {
					parts = append(parts, wirePart{Type: "text", Text: &m.Content})
				}
				wm.Content = refImages(parts, m.Images)
			}
		}
		msgs = append(msgs, wm)
	}
	if len(toolImages) > 0 {
		msgs = append(msgs, wireMessage{Role: string(model.RoleUser), Content: toolImages})
	}

	body := map[string]any{
		"model":    req.Model,
		"messages": msgs,
	}
	if stream {
		body["stream"] = true
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	if len(req.Tools) > 0 {
		tools := make([]wireTool, 0, len(req.Tools))
		for _, t := range req.Tools {
			params, err := wiretest.RefSchema(t)
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
	return wiretest.RefEncode(body)
}

// appendImages appends an image_url part with a data: URL for each image.
func refImages(parts []wirePart, imgs []model.Image) []wirePart {
	for _, img := range imgs {
		parts = append(parts, wirePart{Type: "image_url", ImageURL: &wireImageURL{URL: img.DataURL()}})
	}
	return parts
}
