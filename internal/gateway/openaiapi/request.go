package openaiapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"

	"agentd/internal/model"
)

// chatRequest is the part of a Chat Completions request agentd reads.
// Other fields (temperature, top_p, max_tokens, stop, seed, logprobs,
// metadata, store, ...) are accepted and ignored: the agent's definition
// decides how its model is called.
type chatRequest struct {
	Model         string          `json:"model"`
	Messages      wireMessages    `json:"messages"`
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

// MaxMessages bounds the messages of one request: a long conversation that
// a chat UI sends whole fits, and a body of many tiny messages cannot make
// agentd build a structure for each (they are refused while being read).
const MaxMessages = 2048

// wireMessages is the messages array, read one message at a time so that
// reading stops at the first message past MaxMessages. Its errors are the
// *apiError to answer with.
type wireMessages []wireMessage

func (ms *wireMessages) UnmarshalJSON(b []byte) error {
	if isNull(b) {
		*ms = nil
		return nil
	}
	// The request's decoder has checked the syntax of the whole body.
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, _ := dec.Token(); t != json.Delim('[') {
		return invalid("messages", "messages must be an array of messages")
	}
	out := (*ms)[:0]
	for i := 0; dec.More(); i++ {
		if i == MaxMessages {
			return tooLarge("messages", "more than %d messages in one request: send fewer, or continue the conversation with the %s header so that only the new messages are sent", MaxMessages, SessionHeader)
		}
		var m wireMessage
		if err := dec.Decode(&m); err != nil {
			param := fmt.Sprintf("messages[%d]", i)
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				return invalid(param, "%s must be a message object", param)
			}
			if te.Field != "" {
				param += "." + te.Field
			}
			return invalid(param, "%s: want %s, got %s", param, kind(te.Type), te.Value)
		}
		out = append(out, m)
	}
	*ms = out
	return nil
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
	Type     string          `json:"type"`
	Text     json.RawMessage `json:"text"`
	Refusal  json.RawMessage `json:"refusal"`
	ImageURL json.RawMessage `json:"image_url"`
}

// wireImageURL is the image_url of an image part. Detail is accepted and
// ignored: the agent's model client decides how an image is sent.
type wireImageURL struct {
	URL    json.RawMessage `json:"url"`
	Detail json.RawMessage `json:"detail"`
}

// Message roles after decoding: developer messages are system messages.
const (
	roleSystem    = "system"
	roleUser      = "user"
	roleAssistant = "assistant"
)

// message is one message of the request: its text parts joined, and its
// images (user messages only).
type message struct {
	role string
	text string
	// shown is the message as a transcript gives it: text with "[image]"
	// where each image was, as the images of earlier messages are not sent.
	shown  string
	images []model.Image
}

// request is a decoded, valid request.
type request struct {
	model        string
	stream       bool
	includeUsage bool
	user         string
	messages     []message     // the last is the user's
	images       []model.Image // the last message's: the only ones sent
}

// decodeRequest reads and checks a Chat Completions request of size bytes
// (-1: unknown). Unknown fields are allowed (clients send many); known ones
// must have their types.
func decodeRequest(body io.Reader, size, limit int64) (*request, *apiError) {
	tooLarge := tooLarge("", "the request body is larger than %d bytes", limit)
	if size > limit {
		return nil, tooLarge
	}
	// One buffer of the declared size (or grown as the body comes), which
	// is all the body costs: it is decoded in place.
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) || int64(buf.Len()) > limit {
		return nil, tooLarge
	}
	if err != nil {
		return nil, invalid("", "could not read the request body")
	}
	var req chatRequest
	if err := json.Unmarshal(buf.Bytes(), &req); err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, jsonError(err)
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
		msg, err := content(m.Content, param+".content", role == roleUser)
		if err != nil {
			return nil, err
		}
		if role != roleAssistant && (len(m.Content) == 0 || isNull(m.Content)) {
			return nil, invalid(param+".content", "%s: content is required", param)
		}
		msg.role = role
		out.messages = append(out.messages, msg)
	}
	last := out.messages[len(out.messages)-1]
	if last.role != roleUser || strings.TrimSpace(last.text) == "" {
		return nil, invalid("messages", "the last message must be a user message with text (images go with text)")
	}
	out.images = last.images
	return out, nil
}

// content reads a message's content: a string, or an array of parts whose
// text parts are joined and whose image parts (allowed when images is
// true) are decoded and checked.
func content(raw json.RawMessage, param string, images bool) (message, *apiError) {
	if len(raw) == 0 || isNull(raw) {
		return message{}, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return message{}, invalid(param, "%s: not a valid string", param)
		}
		return message{text: s, shown: s}, nil
	case '[':
	default:
		return message{}, invalid(param, "%s must be a string or an array of content parts", param)
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return message{}, invalid(param, "%s must be a string or an array of content parts", param)
	}
	var m message
	texts := make([]string, 0, len(parts))
	shown := make([]string, 0, len(parts))
	for j, p := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		var part wirePart
		if len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &part) != nil {
			return message{}, invalid(pp, "%s must be an object with a type", pp)
		}
		var field json.RawMessage
		switch part.Type {
		case "text":
			field = part.Text
		case "refusal":
			field = part.Refusal
		case "image_url":
			if !images {
				return message{}, invalid(pp, "%s: only user messages may hold images", pp)
			}
			if len(m.images) == model.MaxImages {
				return message{}, invalid(pp, "%s: more than %d images in one message", pp, model.MaxImages)
			}
			img, err := imagePart(part.ImageURL, pp)
			if err != nil {
				return message{}, err
			}
			m.images = append(m.images, img)
			shown = append(shown, "[image]")
			continue
		case "image", "input_image":
			return message{}, invalid(pp+".type", "%s: send an image as an image_url part: {\"type\": \"image_url\", \"image_url\": {\"url\": \"data:image/png;base64,...\"}}", pp)
		case "input_audio", "audio":
			return message{}, unsupported(pp, "audio is not supported yet")
		case "file", "input_file":
			return message{}, unsupported(pp, "files are not supported yet")
		case "":
			return message{}, invalid(pp+".type", "%s: type is required", pp)
		default:
			return message{}, invalid(pp+".type", "%s: unknown content part type %q", pp, clip(part.Type, 40))
		}
		var s string
		if len(field) == 0 || field[0] != '"' || json.Unmarshal(field, &s) != nil {
			return message{}, invalid(pp, "%s: a %s part needs a string %s", pp, part.Type, part.Type)
		}
		texts = append(texts, s)
		shown = append(shown, s)
	}
	m.text = strings.Join(texts, "\n")
	m.shown = strings.Join(shown, "\n")
	return m, nil
}

// imagePart decodes the image_url of an image part at param: a data: URL
// holding standard, padded base64 of a PNG, JPEG, GIF or WebP image that
// model.CheckImage accepts. agentd fetches no URL on a client's behalf.
func imagePart(raw json.RawMessage, param string) (model.Image, *apiError) {
	var iu wireImageURL
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &iu) != nil {
		return model.Image{}, invalid(param, "%s: image_url must be an object with a url", param)
	}
	var u string
	if len(iu.URL) == 0 || iu.URL[0] != '"' || json.Unmarshal(iu.URL, &u) != nil || u == "" {
		return model.Image{}, invalid(param, "%s: image_url.url must be a data: URL (data:image/png;base64,...)", param)
	}
	if !emptyJSON(iu.Detail) {
		var d string
		if json.Unmarshal(iu.Detail, &d) != nil || d != "auto" && d != "low" && d != "high" {
			return model.Image{}, invalid(param, "%s: image_url.detail must be auto, low or high", param)
		}
	}
	scheme, rest, ok := strings.Cut(u, ":")
	scheme = strings.ToLower(scheme)
	switch {
	case ok && (scheme == "http" || scheme == "https"):
		return model.Image{}, unsupported(param, "%s: image URLs are not fetched; send the image as a data: URL", param)
	case !ok || scheme != "data":
		return model.Image{}, invalid(param, "%s: image_url.url must be a data: URL (data:image/png;base64,...)", param)
	}
	// data:<type>[;<parameter>...];base64,<data>
	head, data, ok := strings.Cut(rest, ",")
	params := strings.Split(head, ";")
	if !ok || len(params) < 2 || !strings.EqualFold(params[len(params)-1], "base64") {
		return model.Image{}, invalid(param, "%s: the data: URL must be base64: data:<type>;base64,<data>", param)
	}
	mime := strings.ToLower(strings.TrimSpace(params[0]))
	if mime == "image/jpg" {
		mime = "image/jpeg" // a common misspelling
	}
	if !model.SupportedImageType(mime) {
		return model.Image{}, invalid(param, "%s: image type %q is not supported (want image/png, image/jpeg, image/gif or image/webp)", param, clip(mime, 40))
	}
	// An image too large is refused before it is decoded (the decoder
	// skips line breaks).
	if len(data)-strings.Count(data, "\n")-strings.Count(data, "\r") > base64.StdEncoding.EncodedLen(model.MaxImageBytes) {
		return model.Image{}, invalid(param, "%s: the image is larger than %d bytes", param, model.MaxImageBytes)
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return model.Image{}, invalid(param, "%s: the image data is not valid base64 (standard alphabet, padded with =)", param)
	}
	img := model.Image{MIMEType: mime, Data: b}
	if err := model.CheckImage(img); err != nil {
		return model.Image{}, invalid(param, "%s: %s", param, safeReason(err.Error()))
	}
	return img, nil
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
