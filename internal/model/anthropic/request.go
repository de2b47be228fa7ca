package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"agentd/internal/jsonstr"
	"agentd/internal/model"
	"agentd/internal/model/internal/wire"
)

// reserved reports whether key is a body key the client owns, which
// Request.Extra cannot replace.
func reserved(key string) bool {
	switch key {
	case "model", "messages", "system", "tools", "stream":
		return true
	}
	return false
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is a text, image, tool_use or tool_result content block.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`        // text
	Source    *wireSource     `json:"source,omitempty"`      // image
	ID        string          `json:"id,omitempty"`          // tool_use
	Name      string          `json:"name,omitempty"`        // tool_use
	Input     json.RawMessage `json:"input,omitempty"`       // tool_use
	ToolUseID string          `json:"tool_use_id,omitempty"` // tool_result
	// Content is a tool_result's: nil, a string, or []wireBlock when the
	// tool returned images.
	Content any  `json:"content,omitempty"`
	IsError bool `json:"is_error,omitempty"` // tool_result
}

// wireSource is an image block's source: base64 data.
type wireSource struct {
	Type      string `json:"type"` // base64
	MediaType string `json:"media_type"`
	Data      []byte `json:"data"` // base64 in JSON
}

// encodeRequest builds the JSON body for req.
//
// Request.Extra is merged into the body and wins over the client's own
// parameters (max_tokens, temperature, ...), except for the keys the client
// owns (model, messages, system, tools, stream). Extra is where parameters
// such as "thinking", "top_k" or "metadata" go. Without stream the body
// asks for the response whole ("stream" is left out).
func (c *Client) encodeRequest(req *model.Request, stream bool) ([]byte, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	var body wire.Body
	body.Set("model", jsonstr.Append(nil, req.Model))
	body.Set("max_tokens", strconv.AppendInt(nil, int64(maxTokens), 10))
	err := body.SetValue("messages", convertMessages(req.Messages))
	if stream {
		body.Set("stream", []byte("true"))
	}
	if req.System != "" {
		body.Set("system", jsonstr.Append(nil, req.System))
	}
	if len(req.Tools) > 0 {
		tools, err := wire.AppendList(make([]byte, 0, wire.ToolsSize(req.Tools, format)), req.Tools, format,
			func(t *model.ToolSpec) *model.Encoded { return t.Wire }, c.appendTool)
		if err != nil {
			return nil, err
		}
		body.Set("tools", tools)
	}
	if req.Temperature != nil {
		err = errors.Join(err, body.SetFloat("temperature", *req.Temperature))
	}
	if req.TopP != nil {
		err = errors.Join(err, body.SetFloat("top_p", *req.TopP))
	}
	if len(req.Stop) > 0 {
		err = errors.Join(err, body.SetValue("stop_sequences", req.Stop))
	}
	for k, v := range req.Extra {
		if !reserved(k) {
			err = errors.Join(err, body.SetValue(k, v))
		}
	}
	if err != nil {
		return nil, c.ep.Fail(model.ErrBadRequest, 0, "encode request: "+err.Error())
	}
	return body.Bytes(), nil
}

// format names this client's encodings in a model.Encoded.
const format = "anthropic"

// appendTool appends one tool as the API has it: each is encoded once and
// kept in its model.Encoded, if it has one (see wire.AppendList).
func (c *Client) appendTool(dst []byte, t *model.ToolSpec) ([]byte, error) {
	dst = append(dst, `{"name":`...)
	dst = jsonstr.Append(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonstr.Append(dst, t.Description)
	}
	dst = append(dst, `,"input_schema":`...)
	dst, err := c.ep.AppendSchema(dst, t)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// convertMessages turns the conversation into Messages API turns. Tool
// results become tool_result blocks of a user turn; consecutive turns of
// the same role are merged into one, since the API wants user and assistant
// to alternate, and within a user turn tool_result blocks come first, as the
// API requires. Messages with nothing to send (empty text, no calls, no
// images) are left out, since the API rejects empty content. Roles other
// than assistant and tool are sent as user. A user message's images go
// before its text; a tool's go inside its tool_result, after the text.
func convertMessages(msgs []model.Message) []wireMessage {
	out := make([]wireMessage, 0, len(msgs))
	for _, m := range msgs {
		role := "user"
		var blocks []wireBlock
		switch m.Role {
		case model.RoleAssistant:
			role = "assistant"
			if m.Content != "" {
				blocks = append(blocks, wireBlock{Type: "text", Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, wireBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: inputObject(tc.Args)})
			}
		case model.RoleTool:
			b := wireBlock{Type: "tool_result", ToolUseID: m.ToolCallID, IsError: m.IsError}
			switch {
			case len(m.Images) > 0:
				var content []wireBlock
				if m.Content != "" {
					content = append(content, wireBlock{Type: "text", Text: m.Content})
				}
				b.Content = appendImages(content, m.Images)
			case m.Content != "":
				b.Content = m.Content
			}
			blocks = append(blocks, b)
		default:
			blocks = appendImages(blocks, m.Images)
			if m.Content != "" {
				blocks = append(blocks, wireBlock{Type: "text", Text: m.Content})
			}
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			if role == "user" {
				resultsFirst(out[n-1].Content)
			}
			continue
		}
		out = append(out, wireMessage{Role: role, Content: blocks})
	}
	return out
}

// appendImages appends a base64 image block for each image.
func appendImages(blocks []wireBlock, imgs []model.Image) []wireBlock {
	for _, img := range imgs {
		blocks = append(blocks, wireBlock{Type: "image", Source: &wireSource{Type: "base64", MediaType: img.MIMEType, Data: img.Data}})
	}
	return blocks
}

// resultsFirst moves tool_result blocks ahead of the others, keeping the
// order within each group.
func resultsFirst(blocks []wireBlock) {
	var results, others []wireBlock
	for _, b := range blocks {
		if b.Type == "tool_result" {
			results = append(results, b)
		} else {
			others = append(others, b)
		}
	}
	if len(results) == 0 || len(others) == 0 {
		return
	}
	copy(blocks, results)
	copy(blocks[len(results):], others)
}

// inputObject returns args when they are a JSON object and {} otherwise,
// since tool_use input must be an object.
func inputObject(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) > 0 && a[0] == '{' && json.Valid(a) {
		return a
	}
	return json.RawMessage("{}")
}
