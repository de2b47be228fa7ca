package anthropic

import (
	"encoding/json"
	"net/http"
	"strings"

	"agentd/internal/model"
	"agentd/internal/model/internal/wire"
)

// errorBody reads the body of a non-2xx response:
// {"type":"error","error":{"type":...,"message":...}}.
func errorBody(status int, body []byte, fallback string) (string, error) {
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
		ae.Message = fallback
	}
	return ae.Message, classify(status, ae)
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
	return p.ep.Fail(classify(0, ae), 0, ae.Message)
}

// classify returns the error kind for an HTTP status (0 for an error event
// inside a stream) and the error's type and message.
func classify(status int, ae apiErrorBody) error {
	if status == http.StatusPaymentRequired {
		// Out of credit: a retry will not help; the engine falls back as for
		// an auth failure.
		return model.ErrAuth
	}
	return wire.Kind(status, named(ae.Type), overflow(ae.Message))
}

// named returns the error kind that an error type names, or nil.
func named(typ string) error {
	switch typ {
	case "authentication_error", "permission_error", "billing_error":
		return model.ErrAuth
	case "rate_limit_error":
		return model.ErrRateLimited
	case "request_too_large":
		return model.ErrContextOverflow
	case "overloaded_error":
		return model.ErrOverloaded
	case "api_error", "timeout_error":
		return model.ErrServer
	case "invalid_request_error", "not_found_error":
		return model.ErrBadRequest
	}
	return nil
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
