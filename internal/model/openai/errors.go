package openai

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"agentd/internal/model"
	"agentd/internal/model/internal/wire"
)

// apiError is the error a server reported, from whichever shape it used.
type apiError struct {
	Message string
	Type    string
	Code    string
}

// errorBody reads the body of a non-2xx response.
func errorBody(status int, body []byte, fallback string) (string, error) {
	ae := parseErrorBody(body)
	if ae.Message == "" {
		ae.Message = fallback
	}
	return ae.Message, classify(status, ae)
}

// chunkError returns the *model.Error for an error object in a chunk, or nil
// when the chunk is not one.
func (p *parser) chunkError(ch *chunk) error {
	var ae apiError
	switch {
	case len(ch.Error) > 0 && string(ch.Error) != "null":
		ae = decodeError(ch.Error)
	case ch.Object == "error":
		ae = apiError{Message: ch.Message, Type: ch.Type, Code: codeString(ch.Code)}
	default:
		return nil
	}
	if ae.Message == "" {
		ae.Message = "error in response"
	}
	status := 0
	if n, err := strconv.Atoi(ae.Code); err == nil && n >= 400 && n <= 599 {
		status = n
	}
	return p.ep.Fail(classify(status, ae), status, ae.Message)
}

// parseErrorBody reads an error response body: {"error":{...}},
// {"error":"..."}, {"message":...,"type":...,"code":...} or {"detail":...}.
func parseErrorBody(body []byte) apiError {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return apiError{}
	}
	if len(v.Error) > 0 && string(v.Error) != "null" {
		return decodeError(v.Error)
	}
	ae := apiError{Message: v.Message, Type: v.Type, Code: codeString(v.Code)}
	if ae.Message == "" && len(v.Detail) > 0 {
		var s string
		if json.Unmarshal(v.Detail, &s) == nil {
			ae.Message = s
		} else {
			ae.Message = string(v.Detail)
		}
	}
	return ae
}

// decodeError reads the value of an "error" field: an object or a string.
func decodeError(raw json.RawMessage) apiError {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return apiError{Message: s}
	}
	var o struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return apiError{Message: wire.Snippet(raw)}
	}
	return apiError{Message: o.Message, Type: o.Type, Code: codeString(o.Code)}
}

// codeString returns an error code that may be a JSON string or number.
func codeString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// classify returns the error kind for an HTTP status (0 for an error that
// arrived inside a 200 response) and what the server said.
func classify(status int, ae apiError) error {
	return wire.Kind(status, named(ae), overflow(ae))
}

// named returns the error kind that an error's type or code names, or nil.
func named(ae apiError) error {
	tc := strings.ToLower(ae.Type + " " + ae.Code)
	switch {
	case strings.Contains(tc, "authentication") || strings.Contains(tc, "invalid_api_key") ||
		strings.Contains(tc, "permission"):
		return model.ErrAuth
	case strings.Contains(tc, "insufficient_quota") || strings.Contains(tc, "billing"):
		// Out of credit: a retry will not help; the engine falls back as for
		// an auth failure.
		return model.ErrAuth
	case strings.Contains(tc, "rate_limit"):
		return model.ErrRateLimited
	case strings.Contains(tc, "overloaded"):
		return model.ErrOverloaded
	case strings.Contains(tc, "server_error") || strings.Contains(tc, "timeout"):
		return model.ErrServer
	case strings.Contains(tc, "invalid_request"):
		return model.ErrBadRequest
	}
	return nil
}

// overflow reports whether an error says the prompt is longer than the
// model's context.
func overflow(ae apiError) bool {
	s := strings.ToLower(ae.Message + " " + ae.Code + " " + ae.Type)
	for _, p := range []string{
		"context_length_exceeded",
		"maximum context length",
		"context length exceeded",
		"too many tokens",
		"prompt is too long",
		"exceeds the context window",
		"exceed_context_size",
		"exceeds the available context size",
		"context window exceeded",
		"context_window_exceeded",
	} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
