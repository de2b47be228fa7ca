package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"agentd/internal/model"
)

// maxErrorBody caps how much of an error response is read.
const maxErrorBody = 64 << 10

// maxRetryAfter caps a server's Retry-After.
const maxRetryAfter = 24 * time.Hour

// apiError is the error a server reported, from whichever shape it used.
type apiError struct {
	Message string
	Type    string
	Code    string
}

// statusError maps a non-2xx response to a *model.Error.
func (c *Client) statusError(ctx context.Context, resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil && ctx.Err() != nil {
		return c.readFailure(ctx, err)
	}
	ae := parseErrorBody(body)
	if ae.Message == "" {
		ae.Message = bodySnippet(body)
	}
	if ae.Message == "" {
		ae.Message = http.StatusText(resp.StatusCode)
	}
	e := c.fail(classify(resp.StatusCode, ae), resp.StatusCode, ae.Message)
	e.RetryAfter = retryAfter(resp.Header, c.now())
	return e
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
	return p.client.fail(classify(status, ae), status, ae.Message)
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
		return apiError{Message: bodySnippet(raw)}
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

// bodySnippet returns the start of a body that is not a known error shape.
func bodySnippet(body []byte) string {
	const max = 512
	s := strings.TrimSpace(string(body))
	if len(s) > max {
		s = s[:max]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// classify returns the error kind for an HTTP status (0 for an error that
// arrived inside a 200 response) and what the server said.
func classify(status int, ae apiError) error {
	tc := strings.ToLower(ae.Type + " " + ae.Code)
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		strings.Contains(tc, "authentication") || strings.Contains(tc, "invalid_api_key") ||
		strings.Contains(tc, "permission"):
		return model.ErrAuth
	case strings.Contains(tc, "insufficient_quota") || strings.Contains(tc, "billing"):
		// Out of credit: a retry will not help; the engine falls back as for
		// an auth failure.
		return model.ErrAuth
	case status == http.StatusTooManyRequests || strings.Contains(tc, "rate_limit"):
		return model.ErrRateLimited
	case status == http.StatusRequestEntityTooLarge:
		return model.ErrContextOverflow
	case (status == 0 || status == http.StatusBadRequest) && overflow(ae):
		return model.ErrContextOverflow
	case status >= 500 || strings.Contains(tc, "overloaded") || strings.Contains(tc, "server_error") ||
		strings.Contains(tc, "timeout"):
		return model.ErrOverloaded
	case status >= 400:
		return model.ErrBadRequest
	case strings.Contains(tc, "invalid_request"):
		return model.ErrBadRequest
	default:
		// An unexplained failure inside a stream: most likely the server's
		// trouble, worth a retry.
		return model.ErrOverloaded
	}
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

// retryAfter reads the delay a server asked for from retry-after-ms or
// Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return clampDelay(ms / 1000)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clampDelay(s)
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, maxRetryAfter)
		}
	}
	return 0
}

// clampDelay converts seconds to a Duration between 0 and maxRetryAfter.
func clampDelay(sec float64) time.Duration {
	if math.IsNaN(sec) || sec <= 0 {
		return 0
	}
	if sec >= maxRetryAfter.Seconds() {
		return maxRetryAfter
	}
	return time.Duration(sec * float64(time.Second))
}
