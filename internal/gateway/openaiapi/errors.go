package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"agentd/internal/agent"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
)

// OpenAI's error types.
const (
	typeInvalid = "invalid_request_error"
	typeServer  = "server_error"
)

// apiError is an error as OpenAI's API reports it.
type apiError struct {
	status  int
	message string
	typ     string
	param   string // "" is null
	code    string // "" is null
	// retryAfter, when not 0, says the request may be sent again after
	// that long: agentd refused it for now (shutting down, a full disk, too
	// busy), or stopped before the accepted input's turn ended.
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.message }

// ErrorBody is the body of every error response, and the data of the error
// event that ends a stream that fails after it started.
type ErrorBody struct {
	Error ErrorObject `json:"error"`
}

// ErrorObject says what went wrong; Param and Code are null when they do
// not apply.
type ErrorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() ErrorBody {
	o := ErrorObject{Message: e.message, Type: e.typ}
	if e.param != "" {
		o.Param = &e.param
	}
	if e.code != "" {
		o.Code = &e.code
	}
	return ErrorBody{Error: o}
}

func invalid(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(format, args...), typ: typeInvalid, param: param}
}

func unsupported(param, format string, args ...any) *apiError {
	e := invalid(param, format, args...)
	e.code = "unsupported_parameter"
	return e
}

func tooLarge(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, typ: typeInvalid, code: "request_too_large", param: param,
		message: fmt.Sprintf(format, args...)}
}

func modelNotFound(id string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: typeInvalid, param: "model", code: "model_not_found",
		message: fmt.Sprintf("The model %q does not exist: it must be the id of an agent (GET /v1/models lists them)", clip(id, 100))}
}

// agentInvalid is the error of a request naming an agent whose file does
// not load: it lists the file's problems (file, line, field: what is
// wrong), as the gateway's 409 agent_invalid does.
func agentInvalid(id string, err error) *apiError {
	problems := err.Error()
	var ce *agent.ConfigError
	if errors.As(err, &ce) {
		problems = ce.Error()
	}
	return &apiError{status: http.StatusConflict, typ: typeInvalid, param: "model", code: "agent_invalid",
		message: fmt.Sprintf("The model %q is an agent whose file is invalid; it takes no messages until the file is fixed: %s",
			clip(id, 100), clip(strings.ReplaceAll(problems, "\n", "; "), 2000))}
}

func internalError() *apiError {
	return &apiError{status: http.StatusInternalServerError, typ: typeServer, code: "internal_error", message: "internal error"}
}

// fromRuntime maps an error of the runtime, for a request naming model, to
// the error a client sees: in this API's words where it has its own, else
// as the gateway's table of errors says (which also says when to send
// again). An error neither knows says only "internal error" (the details
// go to the log).
func (h *handler) fromRuntime(model string, err error) *apiError {
	switch {
	case errors.Is(err, runtime.ErrInvalidAgent):
		return agentInvalid(model, err)
	case errors.Is(err, runtime.ErrUnknownAgent):
		return &apiError{status: http.StatusNotFound, typ: typeInvalid, param: "model", code: "model_not_found", message: "the agent does not exist"}
	case errors.Is(err, runtime.ErrBadImage):
		// The reason is the image checker's: types, sizes and counts.
		return invalid("messages", "an image of the last user message was refused: %s", safeReason(err.Error()))
	case errors.Is(err, runtime.ErrEmptyInput):
		return invalid("messages", "the last user message is empty")
	case errors.Is(err, runtime.ErrBadAddress):
		return invalid("user", "the session key is not valid")
	case errors.Is(err, runtime.ErrTooLarge):
		return tooLarge("messages", "the message the agent would receive is too large (%s): send fewer or shorter messages, or continue the conversation with the %s header so that only the last message is sent", safeReason(err.Error()), SessionHeader)
	case errors.Is(err, runtime.ErrSessionClosed):
		return &apiError{status: http.StatusConflict, typ: typeInvalid, code: "session_closed",
			message: "the session is closed: it keeps its log but takes no new messages; start a new conversation"}
	case errors.Is(err, context.Canceled):
		// The client went away; the turn goes on.
		return &apiError{status: http.StatusServiceUnavailable, typ: typeServer, code: "unavailable",
			message: "agentd stopped waiting for the turn as the request was cancelled; an accepted message is answered in its session"}
	}
	f, known := gateway.Describe(err)
	if !known {
		h.log.Error("openai api: request failed", "err", err)
		return internalError()
	}
	return fromFailure(f)
}

// fromFailure is how this API says what the gateway's table of errors
// says: the same status, code, message and Retry-After. A body too large
// has this API's own code.
func fromFailure(f gateway.Failure) *apiError {
	e := &apiError{status: f.Status, typ: typeInvalid, code: f.Body.Code, message: f.Body.Error, retryAfter: f.RetryAfter}
	switch {
	case f.Status >= 500:
		e.typ = typeServer
		if f.Body.Code == "internal" {
			return internalError()
		}
	case f.Status == http.StatusRequestEntityTooLarge:
		e.code = "request_too_large"
	}
	return e
}

// writeError answers with e. Sending again is what the client should do
// only after an error that names when (Retry-After): every other error
// says so to clients that retry on their own (the openai libraries read
// x-should-retry), so that a failed turn is not sent again.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter > 0 {
		gateway.SetRetryAfter(w.Header(), e.retryAfter)
	} else {
		w.Header().Set("X-Should-Retry", "false")
	}
	writeJSON(w, e.status, e.body())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only this package's own plain structs are written.
		panic("openaiapi: encode response: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// safeReason makes a turn's reason fit for a response: one line of
// printable text, at most 300 bytes.
func safeReason(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	return clip(strings.TrimSpace(s), 300)
}

// clip shortens s to at most n bytes without splitting a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
