package model

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors for the kinds of failure the engine treats differently.
// An *Error matches its kind with errors.Is.
var (
	ErrRateLimited     = errors.New("rate limited")       // 429: retry after Retry-After
	ErrOverloaded      = errors.New("overloaded")         // 503, 529, overloaded_error: retry with backoff
	ErrServer          = errors.New("server error")       // other 5xx, api_error, server_error: retry with backoff
	ErrAuth            = errors.New("authentication")     // 401/403: try a fallback, never retry
	ErrContextOverflow = errors.New("context overflow")   // the prompt is too long for the model
	ErrBadRequest      = errors.New("bad request")        // 4xx the caller must fix
	ErrProtocol        = errors.New("malformed response") // a stream the client could not understand
	ErrTransport       = errors.New("transport")          // connection refused, reset, timeout: retryable
)

// Error is a provider failure with its kind.
type Error struct {
	Kind       error         // one of the sentinels above
	Provider   string        // openai, anthropic, ...
	Status     int           // HTTP status, 0 if none
	RetryAfter time.Duration // from Retry-After, 0 if none
	Message    string        // the provider's message, without secrets
}

func (e *Error) Error() string {
	s := e.Provider + ": " + e.Kind.Error()
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether target is this error's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the kind, so errors.Is works through wrapping.
func (e *Error) Unwrap() error { return e.Kind }

// Retryable reports whether err is worth another attempt at the same model.
// A malformed or cut-off stream counts: it is most often a connection that
// broke mid-response.
func Retryable(err error) bool {
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrOverloaded) || errors.Is(err, ErrServer) ||
		errors.Is(err, ErrTransport) || errors.Is(err, ErrProtocol)
}

// Kind returns a short name for err's kind, for events and metrics.
func Kind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrRateLimited):
		return "rate_limited"
	case errors.Is(err, ErrOverloaded):
		return "overloaded"
	case errors.Is(err, ErrServer):
		return "server_error"
	case errors.Is(err, ErrAuth):
		return "auth"
	case errors.Is(err, ErrContextOverflow):
		return "context_overflow"
	case errors.Is(err, ErrBadRequest):
		return "bad_request"
	case errors.Is(err, ErrProtocol):
		return "protocol"
	case errors.Is(err, ErrTransport):
		return "transport"
	default:
		return "other"
	}
}

// RetryAfter returns the delay a provider asked for, if any.
func RetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}
