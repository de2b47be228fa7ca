package fakellm

import (
	"net/http"
	"strconv"
)

// writeError answers with status and an error body in format f's shape. A
// retryAfter >= 0 is sent as the Retry-After header (seconds).
func (s *Server) writeError(w http.ResponseWriter, f format, status int, typ, param, code, msg string, retryAfter int) {
	var b []byte
	if f == anthropic {
		b = anErrorBody(b, typ, msg)
	} else {
		b = oaErrorBody(b, typ, param, code, msg)
	}
	h := w.Header()
	h["Content-Type"] = s.hJSON
	h.Set("Content-Length", strconv.Itoa(len(b)))
	if retryAfter >= 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.WriteHeader(status)
	w.Write(b)
}

// errType returns the error type format f uses for status.
func errType(f format, status int) string {
	if f == anthropic {
		typ, _ := anError(status)
		return typ
	}
	typ, _, _ := oaError(status)
	return typ
}

// scriptedFailure answers with the failure a fail directive asks for.
// inTokens is the request's estimated size, used in overflow messages.
func (s *Server) scriptedFailure(w http.ResponseWriter, f format, fs *failSpec, inTokens int) {
	var typ, param, code, msg string
	switch {
	case fs.overflow && f == anthropic:
		typ = "invalid_request_error"
		msg = "prompt is too long: " + strconv.Itoa(anContextWindow+inTokens) + " tokens > " +
			strconv.Itoa(anContextWindow) + " maximum"
	case fs.overflow:
		typ, param, code = "invalid_request_error", "messages", "context_length_exceeded"
		msg = "This model's maximum context length is " + strconv.Itoa(oaContextWindow) +
			" tokens. However, your messages resulted in " + strconv.Itoa(oaContextWindow+inTokens) +
			" tokens. Please reduce the length of the messages."
	case f == anthropic:
		typ, msg = anError(fs.status)
	default:
		typ, code, msg = oaError(fs.status)
	}
	s.writeError(w, f, fs.status, typ, param, code, msg, fs.retryAfter)
}
