package gateway

// routeOps serves the operator's routes: readiness, metrics, usage and
// agent definitions.
func (s *Server) routeOps() {}
