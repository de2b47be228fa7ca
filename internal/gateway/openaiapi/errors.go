package openaiapi

import (
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

// said is the error of a failure of kind (one the gateway's table lists),
// in this API's shape: the table's status and code, with param and this
// API's own words.
func said(kind error, param, format string, args ...any) *apiError {
	f, _ := gateway.Describe(kind)
	e := fromFailure(f)
	e.param, e.message = param, fmt.Sprintf(format, args...)
	return e
}

func invalid(param, format string, args ...any) *apiError {
	return said(gateway.ErrBadRequest, param, format, args...)
}

func unsupported(param, format string, args ...any) *apiError {
	e := invalid(param, format, args...)
	e.code = "unsupported_parameter"
	return e
}

func tooLarge(param, format string, args ...any) *apiError {
	return said(runtime.ErrTooLarge, param, format, args...)
}

func modelNotFound(id string) *apiError {
	e, _ := describe(id, runtime.ErrUnknownAgent)
	return e
}

// agentInvalid is the error of a request naming an agent whose file does
// not load: it lists the file's problems (file, line, field: what is
// wrong), as the gateway's 409 agent_invalid does.
func agentInvalid(id string, err error) *apiError {
	e, _ := describe(id, fmt.Errorf("%w: %w", runtime.ErrInvalidAgent, err))
	return e
}

// fromRuntime maps an error of the runtime, for a request naming model, to
// the error a client sees (describe). An error the gateway's table does
// not know says only "internal error": the details go to the log.
func (h *handler) fromRuntime(model string, err error) *apiError {
	e, known := describe(model, err)
	if !known {
		h.log.Error("openai api: request failed", "err", err)
	}
	return e
}

// describe says err, for a request naming model, as this API does: the
// status, code, message and Retry-After of the gateway's table of errors
// (gateway.Describe), in this API's words where it has its own (words).
func describe(model string, err error) (*apiError, bool) {
	f, known := gateway.Describe(err)
	e := fromFailure(f)
	if !known {
		return e, false
	}
	for _, w := range words {
		if errors.Is(err, w.err) {
			e.param = w.param
			if w.code != "" {
				e.code = w.code
			}
			e.message = w.say(model, err)
			break
		}
	}
	return e, true
}

// words are this API's words for the runtime's refusals of a request: the
// parameter at fault, this API's code where its clients know one, and
// what they are told, in the terms of a chat completion.
var words = []struct {
	err   error
	param string
	code  string
	say   func(model string, err error) string
}{
	{err: runtime.ErrInvalidAgent, param: "model", say: func(model string, err error) string {
		problems := err.Error()
		var ce *agent.ConfigError
		if errors.As(err, &ce) {
			problems = ce.Error()
		}
		return fmt.Sprintf("The model %q is an agent whose file is invalid; it takes no messages until the file is fixed: %s",
			clip(model, 100), clip(strings.ReplaceAll(problems, "\n", "; "), 2000))
	}},
	{err: runtime.ErrUnknownAgent, param: "model", code: "model_not_found", say: func(model string, _ error) string {
		return fmt.Sprintf("The model %q does not exist: it must be the id of an agent (GET /v1/models lists them)", clip(model, 100))
	}},
	{err: runtime.ErrBadImage, param: "messages", say: func(_ string, err error) string {
		// The reason is the image checker's: types, sizes and counts.
		return "an image of the last user message was refused: " + safeReason(err.Error())
	}},
	{err: runtime.ErrEmptyInput, param: "messages", say: func(string, error) string { return "the last user message is empty" }},
	{err: runtime.ErrBadAddress, param: "user", say: func(string, error) string { return "the session key is not valid" }},
	{err: runtime.ErrTooLarge, param: "messages", say: func(_ string, err error) string {
		return fmt.Sprintf("the message the agent would receive is too large (%s): send fewer or shorter messages, "+
			"or continue the conversation with the %s header so that only the last message is sent", safeReason(err.Error()), SessionHeader)
	}},
	{err: runtime.ErrSessionClosed, say: func(string, error) string {
		return "the session is closed: it keeps its log but takes no new messages; start a new conversation"
	}},
}

// openAICodes are this API's names for the gateway's codes where its
// clients know others: its invalid requests carry no code.
var openAICodes = map[string]string{"bad_request": "", "too_large": "request_too_large", "internal": "internal_error"}

// fromFailure is how this API says what the gateway's table of errors
// says: the same status, code (in this API's names), message and
// Retry-After.
func fromFailure(f gateway.Failure) *apiError {
	e := &apiError{status: f.Status, typ: typeInvalid, code: f.Body.Code, message: f.Body.Error, retryAfter: f.RetryAfter}
	if f.Status >= 500 {
		e.typ = typeServer
	}
	if c, ok := openAICodes[e.code]; ok {
		e.code = c
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
