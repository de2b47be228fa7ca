package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/command"
	"agentd/internal/contexts"
	"agentd/internal/extension"
	"agentd/internal/job"
	"agentd/internal/mcp"
	"agentd/internal/memory"
	"agentd/internal/permit"
	"agentd/internal/runtime"
	"agentd/internal/skill"
	"agentd/internal/store"
	"agentd/internal/webext"
)

// Retry-After of the failures a client should send again later.
const (
	// ShutdownRetryAfter is how long a client waits for agentd to be back
	// after it refused a request while shutting down.
	ShutdownRetryAfter = 5 * time.Second
	// FullRetryAfter is how long a client waits before sending again to an
	// agentd whose disk is full.
	FullRetryAfter = 30 * time.Second
	// UnreachableRetryAfter is how long a client waits before sending
	// again to an agentd that cannot reach its store.
	UnreachableRetryAfter = 5 * time.Second
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

// Kinds of failure the API names itself, for errors to wrap: the table
// says how each is answered. The handlers of the gateway's sub-packages
// and agentd's MCP server wrap the exported ones.
var (
	ErrBadRequest       = errors.New("bad request")
	ErrForbidden        = errors.New("forbidden")
	ErrNotFound         = errors.New("not found")
	ErrMethodNotAllowed = errors.New("method not allowed")

	errUnauthorized = errors.New("unauthorized")
	errConflict     = errors.New("conflict")
	errTooLarge     = errors.New("too large")
	errMediaType    = errors.New("unsupported media type")
	errRateLimited  = errors.New("rate limited")
	errNotAvailable = errors.New("not available here")
	errConnect      = errors.New("connect failed")
	errNotReady     = errors.New("not ready")
)

// failures is the one table of errors the API shows as they are; the first
// entry an error matches answers. Everything else is a 500 "internal error"
// whose details go to the log. Every answer of the API to a failure, and
// of the handlers mounted on it, is said through this table.
var failures = []failure{
	{errs: []error{runtime.ErrBadAddress, runtime.ErrEmptyInput, ErrBadRequest, runtime.ErrBadOptions, runtime.ErrBadImage,
		agent.ErrInvalidID, store.ErrInvalid, store.ErrBadCursor, mcp.ErrInvalid,
		skill.ErrInvalid, skill.ErrBadPath, memory.ErrInvalid, memory.ErrBadArgs, extension.ErrInvalid, extension.ErrMalformed,
		webext.ErrInvalid, command.ErrUsage, agentsys.ErrNotTemplate, contexts.ErrBadArgs},
		status: http.StatusBadRequest, code: "bad_request"},
	{errs: []error{errUnauthorized}, status: http.StatusUnauthorized, code: "unauthorized"},
	// A webhook refused for its signature or its job: one body for every
	// reason, so that it does not tell which jobs take webhooks (the log
	// says why).
	{errs: []error{job.ErrBadSignature}, status: http.StatusUnauthorized, code: "unauthorized",
		msg: "bad webhook signature: the request is not signed for this webhook within its time window; agentd's log says why"},
	{errs: []error{ErrForbidden, extension.ErrForbidden, agentsys.ErrReach}, status: http.StatusForbidden, code: "forbidden"},
	{errs: []error{runtime.ErrTooLarge, errTooLarge}, status: http.StatusRequestEntityTooLarge, code: "too_large"},
	{errs: []error{errMediaType, extension.ErrMediaType}, status: http.StatusUnsupportedMediaType, code: "unsupported_media_type"},
	{errs: []error{runtime.ErrUnknownAgent, runtime.ErrNoSession, ErrNotFound, permit.ErrNotFound, mcp.ErrNotFound,
		skill.ErrNotFound, memory.ErrNotFound, extension.ErrUnknownType, webext.ErrNotFound, job.ErrNotFound, agentsys.ErrNotFound, contexts.ErrUnknown},
		status: http.StatusNotFound, code: "not_found"},
	{errs: []error{store.ErrNotFound}, status: http.StatusNotFound, code: "not_found", msg: "not found"},
	{errs: []error{ErrMethodNotAllowed}, status: http.StatusMethodNotAllowed, code: "method_not_allowed"},
	{errs: []error{runtime.ErrInvalidAgent}, status: http.StatusConflict, code: "agent_invalid"},
	{errs: []error{runtime.ErrNoTurn}, status: http.StatusConflict, code: "no_turn"},
	{errs: []error{runtime.ErrSessionClosed}, status: http.StatusConflict, code: "session_closed"},
	{errs: []error{runtime.ErrBusy}, status: http.StatusConflict, code: "busy"},
	{errs: []error{job.ErrRunning}, status: http.StatusConflict, code: "job_running"},
	{errs: []error{agentsys.ErrEnded}, status: http.StatusConflict, code: "agent_ended"},
	{errs: []error{mcp.ErrExists, mcp.ErrConflict, mcp.ErrConfigured, store.ErrConflict, errConflict},
		status: http.StatusConflict, code: "conflict"},
	{errs: []error{errRateLimited}, status: http.StatusTooManyRequests, code: "rate_limited"},
	// A connector with as many pairing codes pending as it keeps: one must
	// be decided or expire first.
	{errs: []error{store.ErrPairingFull}, status: http.StatusTooManyRequests, code: "pairing_full"},
	// A limit of the dynamic agents (the error names it: "max_live 2000").
	{errs: []error{store.ErrLimit, agentsys.ErrHops}, status: http.StatusTooManyRequests, code: "agent_limit"},
	{errs: []error{errNotAvailable, memory.ErrUnavailable}, status: http.StatusNotImplemented, code: "not_available"},
	{errs: []error{mcp.ErrNotConnected, mcp.ErrUnsupported}, status: http.StatusServiceUnavailable, code: "unavailable"},
	// An MCP server that did not start or answer: after every refusal of
	// the request, before agentd's own troubles, whatever else the error
	// wraps (its reason is the operator's to see: it names their command
	// or URL).
	{errs: []error{errConnect}, status: http.StatusBadGateway, code: "connect_failed"},
	{errs: []error{runtime.ErrClosed}, status: http.StatusServiceUnavailable, code: "shutting_down", retry: ShutdownRetryAfter},
	{errs: []error{store.ErrFull}, status: http.StatusServiceUnavailable, code: "storage_full", retry: FullRetryAfter,
		msg: "agentd's disk is full: the request was not accepted; send it again once space is freed"},
	{errs: []error{store.ErrUnavailable}, status: http.StatusServiceUnavailable, code: "store_unavailable", retry: UnreachableRetryAfter,
		msg: "agentd cannot reach its store: the request was not accepted; send it again shortly"},
	{errs: []error{errLoad}, status: http.StatusServiceUnavailable, code: "busy", retry: loadRetryAfter},
	{errs: []error{errNotReady}, status: http.StatusServiceUnavailable, code: "not_ready"},
	// The client went away (or gave up) while agentd waited: a turn goes
	// on, and its answer is in its session.
	{errs: []error{context.Canceled}, status: http.StatusServiceUnavailable, code: "unavailable",
		msg: "agentd stopped waiting for the answer as the request was cancelled; an accepted message is answered in its session"},
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

// InvalidError is the body of a 400 for an invalid extension document:
// the error, and every problem of the document.
type InvalidError struct {
	Error
	// Errors are the problems: "pointer: message" each, the pointer into
	// the document ("/spec/url: must be a string"), or, for a text that
	// is not a document, "line 3: spec.url: must be a string".
	Errors []string `json:"errors"`
}

// errorBody is the body answering err as f: f.Body, with the problems of
// an invalid extension document when err holds any.
func errorBody(f Failure, err error) any {
	var ps []string
	var ve *extension.ValidationError
	var de *extension.DecodeError
	switch {
	case errors.As(err, &ve):
		for _, x := range ve.Errors {
			ps = append(ps, x.String())
		}
	case errors.As(err, &de):
		for _, x := range de.Problems {
			ps = append(ps, x.String())
		}
	}
	if ps == nil || f.Status != http.StatusBadRequest {
		return f.Body
	}
	return InvalidError{Error: f.Body, Errors: ps}
}

// WriteError answers a request with err as Describe says it, for the
// handlers mounted on the API; it reports whether err was known: the
// details of one that was not belong in the caller's log.
func WriteError(w http.ResponseWriter, err error) (known bool) {
	f, known := Describe(err)
	SetRetryAfter(w.Header(), f.RetryAfter)
	writeJSON(w, f.Status, errorBody(f, err))
	return known
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
	writeJSON(w, f.Status, errorBody(f, err))
}

// describe is Describe, logging the errors it does not know.
func (s *Server) describe(err error) Failure {
	f, known := Describe(err)
	if !known {
		s.log.Error("api request failed", "err", err)
	}
	return f
}

// said is an error of a kind of the table whose text is what the API
// says, as it is.
type said struct {
	kind error
	text string
}

func (e *said) Error() string { return e.text }
func (e *said) Unwrap() error { return e.kind }

// say returns an error of kind saying the formatted text.
func say(kind error, format string, args ...any) error {
	return &said{kind: kind, text: fmt.Sprintf(format, args...)}
}

// also is err, said with its own text, of kind as well: the table answers
// for whichever of the two it lists first.
type also struct{ kind, err error }

func (e *also) Error() string   { return e.err.Error() }
func (e *also) Unwrap() []error { return []error{e.kind, e.err} }

func notFound(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNotFound)
}

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}
