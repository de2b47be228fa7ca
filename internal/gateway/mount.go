package gateway

// The handlers built by the gateway's sub-packages (Options.Stream,
// OpenAI, Console, MCPHandler) are served by the routes of the table that
// name them; the OpenAI-compatible API also answers, in its own shape, the
// errors the gateway meets on its routes.

import (
	"net/http"
	"strings"
)

// ErrorWriter is the optional ability of Options.OpenAI to answer an error
// in its API's shape: every error on its routes, those the gateway meets
// before the request reaches it too (authentication, admission, another
// method), is then said as its clients read errors.
type ErrorWriter interface {
	WriteFailure(w http.ResponseWriter, f Failure)
}

// mount learns the paths of the OpenAI-compatible API, whose errors are
// said in its shape whatever the method.
func (s *Server) mount() {
	if s.o.OpenAI == nil {
		return
	}
	s.openAIPaths = http.NewServeMux()
	for _, p := range OpenAIRoutes {
		_, path, _ := strings.Cut(p, " ")
		s.openAIPaths.Handle(path, http.NotFoundHandler())
	}
}

// answer answers r with the failure f: in the OpenAI API's shape on its
// routes, else as every error of this API is.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, f Failure) {
	if ew, ok := s.o.OpenAI.(ErrorWriter); ok && s.openAIPaths != nil {
		if _, p := s.openAIPaths.Handler(r); p != "" {
			ew.WriteFailure(w, f)
			return
		}
	}
	SetRetryAfter(w.Header(), f.RetryAfter)
	writeJSON(w, f.Status, f.Body)
}
