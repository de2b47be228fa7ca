package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"agentd/internal/model"
)

// maxErrorBody caps how much of an error response is read.
const maxErrorBody = 64 << 10

// maxRetryAfter caps a server's Retry-After.
const maxRetryAfter = 24 * time.Hour

// Fail returns a *model.Error of the given kind, with secrets removed from
// the message.
func (e *Endpoint) Fail(kind error, status int, msg string) *model.Error {
	return &model.Error{Kind: kind, Provider: e.Name, Status: status, Message: e.redact(msg)}
}

// ReadFailure maps an error from sending the request or reading the
// response: cancellation of ctx is returned as such, a stalled response
// (see Post) and anything else are transport failures.
func (e *Endpoint) ReadFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return e.canceled(ctx)
	}
	return e.Fail(model.ErrTransport, 0, err.Error())
}

// canceled returns the failure of a cancelled ctx: a transport failure when
// the response stalled, and otherwise an error wrapping ctx.Err().
func (e *Endpoint) canceled(ctx context.Context) error {
	var st *stalled
	if errors.As(context.Cause(ctx), &st) {
		return e.Fail(model.ErrTransport, 0, st.Error())
	}
	return fmt.Errorf("%s: %w", e.Name, ctx.Err())
}

// redact removes the API key, the values of secret-looking headers and
// anything that looks like a credential (a bearer token, an sk-... key)
// from s.
func (e *Endpoint) redact(s string) string {
	if len(e.APIKey) >= 4 {
		s = strings.ReplaceAll(s, e.APIKey, "[redacted]")
	}
	for k, v := range e.Headers {
		if len(v) >= 4 && secretHeader(k) {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	s = bearerRE().ReplaceAllString(s, "${1}[redacted]")
	return keyRE().ReplaceAllString(s, "[redacted]")
}

// bearerRE finds a bearer token (its value in group 2).
var bearerRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)(bearer\s+)([A-Za-z0-9._~+/=-]{8,})`) })

// keyRE finds API keys in the shapes providers give them: sk-..., sk-ant-...,
// sk-proj-....
var keyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`) })

func secretHeader(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "key") || strings.Contains(n, "auth") ||
		strings.Contains(n, "token") || strings.Contains(n, "secret")
}

// statusError maps a non-2xx response to a *model.Error.
func (e *Endpoint) statusError(ctx context.Context, status int, header http.Header, rd io.Reader) error {
	body, err := io.ReadAll(io.LimitReader(rd, maxErrorBody))
	if err != nil && ctx.Err() != nil {
		return e.ReadFailure(ctx, err)
	}
	fallback := Snippet(body)
	if fallback == "" {
		fallback = http.StatusText(status)
	}
	msg, kind := e.ErrorBody(status, body, fallback)
	f := e.Fail(kind, status, msg)
	f.RetryAfter = retryAfter(header, e.Now())
	return f
}

// Snippet returns the start of a body that is not a known error shape.
func Snippet(body []byte) string {
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

// Kind returns the error kind for an HTTP status (0 for an error reported
// inside a 2xx reply). named is the kind the error's type or code names, nil
// when it names none; overflow tells whether its message says the prompt is
// longer than the model's context. The first rule that the status or named
// meets decides, in this order: auth, rate limited, context overflow,
// overloaded (503, 529), server error (other 5xx), bad request.
func Kind(status int, named error, overflow bool) error {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden || named == model.ErrAuth:
		return model.ErrAuth
	case status == http.StatusTooManyRequests || named == model.ErrRateLimited:
		return model.ErrRateLimited
	case status == http.StatusRequestEntityTooLarge || named == model.ErrContextOverflow:
		return model.ErrContextOverflow
	case (status == 0 || status == http.StatusBadRequest) && overflow:
		return model.ErrContextOverflow
	case status == http.StatusServiceUnavailable || status == 529 || (status == 0 || status >= 500) && named == model.ErrOverloaded:
		return model.ErrOverloaded
	case status >= 500 || named == model.ErrServer:
		return model.ErrServer
	case status >= 400 || named == model.ErrBadRequest:
		return model.ErrBadRequest
	default:
		// An unexplained failure inside a stream: most likely the server's
		// trouble, worth a retry.
		return model.ErrServer
	}
}

// CannotStream reports whether err is a server's refusal of a streamed
// request: an HTTP error whose message says that it cannot stream ("Cannot
// use tools with stream", "streaming is not supported" ...). The request
// may then be sent again without streaming.
func CannotStream(err error) bool {
	var e *model.Error
	if !errors.As(err, &e) || e.Status < 400 || errors.Is(err, model.ErrAuth) || errors.Is(err, model.ErrRateLimited) {
		return false
	}
	msg := strings.ToLower(e.Message)
	if !strings.Contains(msg, "stream") {
		return false
	}
	for _, p := range []string{"not supported", "unsupported", "not support", "n't support", "cannot", "can't", "can not",
		"not allowed", "not available", "not implemented", "disabled", "does not work", "unable"} {
		if strings.Contains(msg, p) {
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
