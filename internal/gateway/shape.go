package gateway

// An error is said in the shape of the API its route is for: the
// OpenAI-compatible API's routes (Options.OpenAI, which may answer in its
// own shape: ErrorWriter) say even the errors the gateway meets before
// the request reaches them in its shape; every other route says them as
// this API does (Error).

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

// shapeOpenAI learns the paths of the OpenAI-compatible API, whose errors
// are said in its shape whatever the method.
func (s *Server) shapeOpenAI() {
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
