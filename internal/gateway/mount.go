package gateway

import (
	"net/http"
	"strings"
)

// OpenAIRoutes are the routes of the OpenAI-compatible API (Options.OpenAI).
var OpenAIRoutes = []string{
	"GET /v1/models",
	"GET /v1/models/{id}",
	"POST /v1/chat/completions",
}

// ErrorWriter is the optional ability of Options.OpenAI to answer an error
// in its API's shape: every error on its routes, those the gateway meets
// before the request reaches it too (authentication, admission, another
// method), is then said as its clients read errors.
type ErrorWriter interface {
	WriteFailure(w http.ResponseWriter, f Failure)
}

// mount serves the handlers built by the gateway's sub-packages.
func (s *Server) mount() {
	m := s.mux
	if s.o.Stream != nil {
		m.Handle("GET /v1/stream", s.o.Stream)
	}
	if s.o.OpenAI != nil {
		// The paths alone, whatever the method, are the OpenAI API's.
		s.openAIPaths = http.NewServeMux()
		for _, p := range OpenAIRoutes {
			m.Handle(p, s.o.OpenAI)
			_, path, _ := strings.Cut(p, " ")
			s.openAIPaths.Handle(path, http.NotFoundHandler())
		}
	}
	if s.o.Console != nil {
		m.Handle("GET /{$}", s.o.Console)
		m.Handle("GET /console/", s.o.Console)
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
