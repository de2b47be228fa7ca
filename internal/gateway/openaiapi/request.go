package openaiapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// chatRequest is the part of a Chat Completions request agentd reads.
// Other fields (temperature, top_p, max_tokens, stop, seed, logprobs,
// metadata, store, ...) are accepted and ignored: the agent's definition
// decides how its model is called.
type chatRequest struct {
	Model         string          `json:"model"`
	Messages      []wireMessage   `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	N             *int            `json:"n"`
	User          string          `json:"user"`
	Tools         json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Functions     json.RawMessage `json:"functions"`
	FunctionCall  json.RawMessage `json:"function_call"`
	// ResponseFormat and Modalities ask for output agentd cannot promise.
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Modalities []string `json:"modalities"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	FunctionCall json.RawMessage `json:"function_call"`
}

type wirePart struct {
	Type    string          `json:"type"`
	Text    json.RawMessage `json:"text"`
	Refusal json.RawMessage `json:"refusal"`
}

// Message roles after decoding: developer messages are system messages.
const (
	roleSystem    = "system"
	roleUser      = "user"
	roleAssistant = "assistant"
)

// message is one message of the request as text.
type message struct {
	role string
	text string
}

// request is a decoded, valid request.
type request struct {
	model        string
	stream       bool
	includeUsage bool
	user         string
	messages     []message // the last is the user's
}

// decodeRequest reads and checks a Chat Completions request. Unknown fields
// are allowed (clients send many); known ones must have their types.
func decodeRequest(body io.Reader, limit int64) (*request, *apiError) {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) || int64(len(b)) > limit {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, typ: typeInvalid, code: "request_too_large",
			message: fmt.Sprintf("the request body is larger than %d bytes", limit)}
	}
	if err != nil {
		return nil, invalid("", "could not read the request body")
	}
	var req chatRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&req); err != nil {
		return nil, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("", "the request body must be one JSON object")
	}
	return req.check()
}

func (req *chatRequest) check() (*request, *apiError) {
	if req.Model == "" {
		return nil, invalid("model", "model is required: the id of an agent (GET /v1/models lists them)")
	}
	if req.N != nil && *req.N != 1 {
		return nil, unsupported("n", "n must be 1: an agent gives one answer per message")
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"tools", req.Tools}, {"functions", req.Functions}} {
		if !emptyJSON(f.v) {
			return nil, unsupported(f.name, "%s is not supported: the agent uses its own tools, which its definition gives it", f.name)
		}
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
	}{{"tool_choice", req.ToolChoice}, {"function_call", req.FunctionCall}} {
		if !emptyJSON(f.v) && !bytes.Equal(f.v, []byte(`"none"`)) && !bytes.Equal(f.v, []byte(`"auto"`)) {
			return nil, unsupported(f.name, "%s is not supported: the agent uses its own tools, which its definition gives it", f.name)
		}
	}
	if rf := req.ResponseFormat; rf != nil && rf.Type != "" && rf.Type != "text" {
		return nil, unsupported("response_format", "response_format %q is not supported: the agent answers in text", clip(rf.Type, 40))
	}
	for _, m := range req.Modalities {
		if m != "text" {
			return nil, unsupported("modalities", "only the text modality is supported")
		}
	}
	if len(req.Messages) == 0 {
		return nil, invalid("messages", "messages must hold at least one message")
	}
	out := &request{model: req.Model, stream: req.Stream, user: req.User, messages: make([]message, 0, len(req.Messages))}
	if req.StreamOptions != nil {
		out.includeUsage = req.StreamOptions.IncludeUsage
	}
	for i, m := range req.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		var role string
		switch m.Role {
		case "system", "developer":
			role = roleSystem
		case "user":
			role = roleUser
		case "assistant":
			role = roleAssistant
			if !emptyJSON(m.ToolCalls) || !emptyJSON(m.FunctionCall) {
				return nil, unsupported(param, "%s: tool calls are not supported: the agent uses its own tools", param)
			}
		case "tool", "function":
			return nil, unsupported(param+".role", "%s: %s messages are not supported: the agent uses its own tools", param, m.Role)
		case "":
			return nil, invalid(param+".role", "%s: role is required", param)
		default:
			return nil, invalid(param+".role", "%s: unknown role %q", param, clip(m.Role, 40))
		}
		text, err := content(m.Content, param+".content")
		if err != nil {
			return nil, err
		}
		if role != roleAssistant && (len(m.Content) == 0 || isNull(m.Content)) {
			return nil, invalid(param+".content", "%s: content is required", param)
		}
		out.messages = append(out.messages, message{role: role, text: text})
	}
	last := out.messages[len(out.messages)-1]
	if last.role != roleUser || strings.TrimSpace(last.text) == "" {
		return nil, invalid("messages", "the last message must be a user message with text")
	}
	return out, nil
}

// content reads a message's content: a string, or an array of parts whose
// text parts are joined.
func content(raw json.RawMessage, param string) (string, *apiError) {
	if len(raw) == 0 || isNull(raw) {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", invalid(param, "%s: not a valid string", param)
		}
		return s, nil
	case '[':
	default:
		return "", invalid(param, "%s must be a string or an array of content parts", param)
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(param, "%s must be a string or an array of content parts", param)
	}
	texts := make([]string, 0, len(parts))
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		var part wirePart
		if len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &part) != nil {
			return "", invalid(pp, "%s must be an object with a type", pp)
		}
		var field json.RawMessage
		switch part.Type {
		case "text":
			field = part.Text
		case "refusal":
			field = part.Refusal
		case "image_url", "image", "input_image":
			return "", unsupported(pp, "images are not supported yet")
		case "input_audio", "audio":
			return "", unsupported(pp, "audio is not supported yet")
		case "file", "input_file":
			return "", unsupported(pp, "files are not supported yet")
		case "":
			return "", invalid(pp+".type", "%s: type is required", pp)
		default:
			return "", invalid(pp+".type", "%s: unknown content part type %q", pp, clip(part.Type, 40))
		}
		var s string
		if len(field) == 0 || field[0] != '"' || json.Unmarshal(field, &s) != nil {
			return "", invalid(pp, "%s: a %s part needs a string %s", pp, part.Type, part.Type)
		}
		texts = append(texts, s)
	}
	return strings.Join(texts, "\n"), nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

// emptyJSON reports whether a field is absent, null, or an empty array.
func emptyJSON(raw json.RawMessage) bool {
	if len(raw) == 0 || isNull(raw) {
		return true
	}
	t := bytes.TrimSpace(raw)
	if len(t) >= 2 && t[0] == '[' && len(bytes.TrimSpace(t[1:len(t)-1])) == 0 {
		return true
	}
	return false
}

// jsonError says what is wrong with a body without naming Go types.
func jsonError(err error) *apiError {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return invalid("", "the request body must be a JSON object")
		}
		return invalid(field, "%s: want %s, got %s", field, kind(te.Type), te.Value)
	case errors.As(err, &se):
		return invalid("", "the request body is not valid JSON (at byte %d)", se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("", "the request body is empty or cut short")
	}
	return invalid("", "the request body is not valid JSON")
}

func kind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return "another type"
}

// validKey reports whether s can be the key of a conversation: at most 256
// bytes of valid UTF-8 without "/" or control characters.
func validKey(s string) bool {
	if s == "" || len(s) > 256 || !utf8.ValidString(s) || strings.Contains(s, "/") || strings.TrimSpace(s) == "" {
		return false
	}
	for _, c := range s {
		if c < 0x20 || (c >= 0x7f && c <= 0x9f) {
			return false
		}
	}
	return true
}
