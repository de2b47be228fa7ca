package gateway

// mount serves the handlers built by the gateway's sub-packages.
func (s *Server) mount() {
	m := s.mux
	if s.o.Stream != nil {
		m.Handle("GET /v1/stream", s.o.Stream)
	}
	if s.o.OpenAI != nil {
		m.Handle("GET /v1/models", s.o.OpenAI)
		m.Handle("GET /v1/models/{id}", s.o.OpenAI)
		m.Handle("POST /v1/chat/completions", s.o.OpenAI)
	}
	if s.o.Console != nil {
		m.Handle("GET /{$}", s.o.Console)
		m.Handle("GET /console/", s.o.Console)
	}
}
