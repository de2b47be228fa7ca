package anthropic

import (
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

// statusError maps a non-2xx response to a *model.Error. The body is
// {"type":"error","error":{"type":...,"message":...}}.
func (c *Client) statusError(ctx context.Context, resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil && ctx.Err() != nil {
		return c.readFailure(ctx, err)
	}
	var ae apiErrorBody
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && len(v.Error) > 0 {
		if json.Unmarshal(v.Error, &ae) != nil {
			json.Unmarshal(v.Error, &ae.Message) // {"error":"..."} from a proxy
		}
	}
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

// eventError maps an error event (or a JSON error reply) to a *model.Error.
func (p *parser) eventError(e *event) error {
	ae := apiErrorBody{Message: "error event without details"}
	if e.Error != nil {
		ae = *e.Error
		if ae.Message == "" {
			ae.Message = ae.Type
		}
	}
	return p.client.fail(classify(0, ae), 0, ae.Message)
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

// classify returns the error kind for an HTTP status (0 for an error event
// inside a stream) and the error's type and message.
func classify(status int, ae apiErrorBody) error {
	switch t := ae.Type; {
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		t == "authentication_error" || t == "permission_error":
		return model.ErrAuth
	case status == http.StatusPaymentRequired || t == "billing_error":
		// Out of credit: a retry will not help; the engine falls back as for
		// an auth failure.
		return model.ErrAuth
	case status == http.StatusTooManyRequests || t == "rate_limit_error":
		return model.ErrRateLimited
	case status == http.StatusRequestEntityTooLarge || t == "request_too_large":
		return model.ErrContextOverflow
	case (status == 0 || status == http.StatusBadRequest) && overflow(ae.Message):
		return model.ErrContextOverflow
	case status >= 500 || t == "overloaded_error" || t == "api_error" || t == "timeout_error":
		return model.ErrOverloaded
	case status >= 400 || t == "invalid_request_error" || t == "not_found_error":
		return model.ErrBadRequest
	default:
		// An unexplained failure inside a stream: most likely the server's
		// trouble, worth a retry.
		return model.ErrOverloaded
	}
}

// overflow reports whether an error message says the prompt is longer than
// the model's context.
func overflow(msg string) bool {
	s := strings.ToLower(msg)
	for _, p := range []string{
		"prompt is too long",
		"exceed context limit",
		"exceeds the context window",
		"maximum context length",
		"too many tokens",
		"context_length_exceeded",
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
