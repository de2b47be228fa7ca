package openai

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
	case "model", "messages", "tools", "stream", "stream_options":
		return true
	}
	return false
}

// format names this client's encodings in a model.Encoded.
const format = "openai"

// encodeRequest builds the JSON body for req.
//
// Request.Extra is merged into the body and wins over the client's own
// parameters (max_tokens, temperature, ...), except for the keys the client
// owns (model, messages, tools, stream, stream_options). When Extra sets
// "max_completion_tokens", which newer OpenAI models require, max_tokens is
// left out. Without stream the body asks for the response whole ("stream"
// and "stream_options" are left out).
//
// The body is what encoding/json makes of a map of the fields (keys
// sorted; a fuzz test holds the two equal), written by hand: each message
// and tool is encoded once and kept in its model.Encoded, if it has one.
func (c *Client) encodeRequest(req *model.Request, stream bool) ([]byte, error) {
	var body wire.Body
	body.Set("model", jsonstr.Append(nil, req.Model))
	msgs, err := c.appendMessages(make([]byte, 0, messagesSize(req)), req)
	if err != nil {
		return nil, err
	}
	body.Set("messages", msgs)
	if stream {
		body.Set("stream", []byte("true"))
		body.Set("stream_options", []byte(`{"include_usage":true}`))
	}
	if len(req.Tools) > 0 {
		tools, err := wire.AppendList(make([]byte, 0, wire.ToolsSize(req.Tools, format)), req.Tools, format, func(t *model.ToolSpec) *model.Encoded { return t.Wire }, c.appendTool)
		if err != nil {
			return nil, err
		}
		body.Set("tools", tools)
	}
	if req.MaxTokens > 0 {
		body.Set("max_tokens", strconv.AppendInt(nil, int64(req.MaxTokens), 10))
	}
	if req.Temperature != nil {
		err = errors.Join(err, body.SetFloat("temperature", *req.Temperature))
	}
	if req.TopP != nil {
		err = errors.Join(err, body.SetFloat("top_p", *req.TopP))
	}
	if len(req.Stop) > 0 {
		err = errors.Join(err, body.SetValue("stop", req.Stop))
	}
	for k, v := range req.Extra {
		if reserved(k) {
			continue
		}
		if k == "max_completion_tokens" {
			body.Delete("max_tokens")
		}
		err = errors.Join(err, body.SetValue(k, v))
	}
	if err != nil {
		return nil, c.ep.Fail(model.ErrBadRequest, 0, "encode request: "+err.Error())
	}
	return body.Bytes(), nil
}

// appendMessages appends the messages array: the system prompt, then each
// message. Tool messages are text only: the images of a run of tool
// results go in one user message right after it.
func (c *Client) appendMessages(dst []byte, req *model.Request) ([]byte, error) {
	dst = append(dst, '[')
	n := 0
	sep := func() {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
	}
	if req.System != "" {
		sep()
		dst = append(dst, `{"role":"system","content":`...)
		dst = jsonstr.Append(dst, req.System)
		dst = append(dst, '}')
	}
	var toolImages []model.Image
	for i := range req.Messages {
		m := &req.Messages[i]
		if m.Role != model.RoleTool && len(toolImages) > 0 {
			sep()
			dst = appendImagesMessage(dst, toolImages)
			toolImages = nil
		}
		if m.Role == model.RoleTool {
			toolImages = append(toolImages, m.Images...)
		}
		sep()
		var err error
		if dst, err = wire.AppendCached(dst, m, format, m.Wire, appendMessage); err != nil {
			return nil, err
		}
	}
	if len(toolImages) > 0 {
		sep()
		dst = appendImagesMessage(dst, toolImages)
	}
	return append(dst, ']'), nil
}

// messagesSize is about the size of req's messages array, so that it is
// written without growing its buffer.
func messagesSize(req *model.Request) int {
	n := len(req.System) + 40
	for i := range req.Messages {
		n += wire.MessageSize(&req.Messages[i], format)
	}
	return n
}

// appendMessage appends one message as the API has it (without the images
// of a tool message, which go after the run of tool messages).
func appendMessage(dst []byte, m *model.Message) ([]byte, error) {
	dst = append(dst, `{"role":`...)
	dst = jsonstr.Append(dst, string(m.Role))
	dst = append(dst, `,"content":`...)
	switch {
	case m.Role == model.RoleAssistant && m.Content == "" && len(m.ToolCalls) > 0:
		dst = append(dst, "null"...)
	case m.Role == model.RoleUser && len(m.Images) > 0:
		dst = append(dst, '[')
		if m.Content != "" {
			dst = append(dst, `{"type":"text","text":`...)
			dst = jsonstr.Append(dst, m.Content)
			dst = append(dst, "},"...)
		}
		dst = appendImageParts(dst, m.Images)
		dst = append(dst, ']')
	default:
		dst = jsonstr.Append(dst, m.Content)
	}
	if m.Role == model.RoleAssistant && len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			dst = jsonstr.Append(dst, tc.ID)
			dst = append(dst, `,"type":"function","function":{"name":`...)
			dst = jsonstr.Append(dst, tc.Name)
			dst = append(dst, `,"arguments":`...)
			dst = jsonstr.Append(dst, argumentsText(tc.Args))
			dst = append(dst, "}}"...)
		}
		dst = append(dst, ']')
	}
	if m.Role == model.RoleTool && m.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = jsonstr.Append(dst, m.ToolCallID)
	}
	return append(dst, '}'), nil
}

// appendImagesMessage appends a user message made of an image_url part
// for each image.
func appendImagesMessage(dst []byte, imgs []model.Image) []byte {
	dst = append(dst, `{"role":"user","content":[`...)
	dst = appendImageParts(dst, imgs)
	return append(dst, "]}"...)
}

// appendImageParts appends an image_url part with a data: URL for each
// image, comma separated.
func appendImageParts(dst []byte, imgs []model.Image) []byte {
	for i := range imgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"image_url","image_url":{"url":`...)
		dst = jsonstr.Append(dst, imgs[i].DataURL())
		dst = append(dst, "}}"...)
	}
	return dst
}

// appendTool appends one tool as the API has it.
func (c *Client) appendTool(dst []byte, t *model.ToolSpec) ([]byte, error) {
	dst = append(dst, `{"type":"function","function":{"name":`...)
	dst = jsonstr.Append(dst, t.Name)
	if t.Description != "" {
		dst = append(dst, `,"description":`...)
		dst = jsonstr.Append(dst, t.Description)
	}
	dst = append(dst, `,"parameters":`...)
	dst, err := c.ep.AppendSchema(dst, t)
	if err != nil {
		return nil, err
	}
	return append(dst, "}}"...), nil
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
