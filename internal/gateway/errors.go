package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Retry-After of the failures a client should send again later.
const (
	// ShutdownRetryAfter is how long a client waits for agentd to be back
	// after it refused a request while shutting down.
	ShutdownRetryAfter = 5 * time.Second
	// FullRetryAfter is how long a client waits before sending again to an
	// agentd whose disk is full.
	FullRetryAfter = 30 * time.Second
)

// failure is how the API answers the errors that wrap one of errs: the
// status, the code, and the message — the error's own text when msg is
// "", which the sentinel's package keeps free of paths and secrets — and,
// for a failure that passes, how long to wait before sending again.
type failure struct {
	errs   []error
	status int
	code   string
	msg    string
	retry  time.Duration
}

// failures is the one table of errors the API shows as they are; the first
// entry an error matches answers. Everything else is a 500 "internal error"
// whose details go to the log.
var failures = []failure{
	{errs: []error{runtime.ErrBadAddress, runtime.ErrEmptyInput, errBadRequest, runtime.ErrBadOptions, runtime.ErrBadImage},
		status: http.StatusBadRequest, code: "bad_request"},
	{errs: []error{runtime.ErrTooLarge}, status: http.StatusRequestEntityTooLarge, code: "too_large"},
	{errs: []error{runtime.ErrUnknownAgent, runtime.ErrNoSession, errNotFound}, status: http.StatusNotFound, code: "not_found"},
	{errs: []error{store.ErrNotFound}, status: http.StatusNotFound, code: "not_found", msg: "not found"},
	{errs: []error{runtime.ErrInvalidAgent}, status: http.StatusConflict, code: "agent_invalid"},
	{errs: []error{runtime.ErrNoTurn}, status: http.StatusConflict, code: "no_turn"},
	{errs: []error{runtime.ErrSessionClosed}, status: http.StatusConflict, code: "session_closed"},
	{errs: []error{runtime.ErrBusy}, status: http.StatusConflict, code: "busy"},
	{errs: []error{runtime.ErrClosed}, status: http.StatusServiceUnavailable, code: "shutting_down", retry: ShutdownRetryAfter},
	{errs: []error{store.ErrFull}, status: http.StatusServiceUnavailable, code: "storage_full", retry: FullRetryAfter,
		msg: "agentd's disk is full: the request was not accepted; send it again once space is freed"},
	{errs: []error{errLoad}, status: http.StatusServiceUnavailable, code: "busy", retry: loadRetryAfter},
	{errs: []error{context.DeadlineExceeded}, status: http.StatusGatewayTimeout, code: "timeout", msg: "timed out waiting"},
}

// Failure is how the API answers an error.
type Failure struct {
	Status int
	Body   Error
	// RetryAfter, when not 0, is how long the client should wait before it
	// sends the request again (the Retry-After header).
	RetryAfter time.Duration
}

// Describe says how the API answers err. An error it does not know is a
// 500 "internal error" (known is false): its details belong in the log.
// The OpenAI-compatible API asks it too, so that both say the same of
// the same failure.
func Describe(err error) (f Failure, known bool) {
	var se *statusError
	if errors.As(err, &se) {
		return Failure{Status: se.status, Body: Error{Error: se.err.Error(), Code: se.code}}, true
	}
	for _, fl := range failures {
		for _, target := range fl.errs {
			if !errors.Is(err, target) {
				continue
			}
			msg := fl.msg
			if msg == "" {
				msg = err.Error()
			}
			return Failure{Status: fl.status, Body: Error{Error: msg, Code: fl.code}, RetryAfter: fl.retry}, true
		}
	}
	return Failure{Status: http.StatusInternalServerError, Body: Error{Error: "internal error", Code: "internal"}}, false
}

// SetRetryAfter sets the Retry-After header, in whole seconds (at least 1).
func SetRetryAfter(h http.Header, d time.Duration) {
	if d > 0 {
		h.Set("Retry-After", strconv.Itoa(retrySeconds(d)))
	}
}

// retrySeconds is d in whole seconds, rounded up: at least 1, or 0 for 0.
func retrySeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return max(1, int((d+time.Second-1)/time.Second))
}

// fail answers a request with the error err maps to.
func (s *Server) fail(w http.ResponseWriter, err error) {
	f := s.describe(err)
	SetRetryAfter(w.Header(), f.RetryAfter)
	writeJSON(w, f.Status, f.Body)
}

// describe is Describe, logging the errors it does not know.
func (s *Server) describe(err error) Failure {
	f, known := Describe(err)
	if !known {
		s.log.Error("api request failed", "err", err)
	}
	return f
}

// statusError is an error safe to show, with its status and code.
type statusError struct {
	status int
	code   string
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

var errBadRequest = errors.New("bad request")

var errNotFound = errors.New("not found")

func notFound(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errNotFound)
}

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, args...))
}
