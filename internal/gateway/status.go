package gateway

// GET /v1/status: which agentd this is and where it listens.

import (
	"context"
	"net/http"
	"os"
	"time"
)

// StatusResponse answers GET /v1/status: which agentd this is, since when,
// where it listens, and its sessions by state.
type StatusResponse struct {
	Version       string    `json:"version"`
	PID           int       `json:"pid"`
	Started       time.Time `json:"started"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	// Listening are the addresses served: unix:PATH, http://HOST:PORT or
	// https://HOST:PORT.
	Listening []string `json:"listening"`
	// Sessions counts sessions by state, when the store can.
	Sessions map[string]int64 `json:"sessions,omitempty"`
}

// sessionStates is an optional ability of Options.Sessions: counting
// sessions by state.
type sessionStates interface {
	SessionStates(ctx context.Context) (map[string]int64, error)
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	resp := StatusResponse{Version: s.o.Version, PID: os.Getpid(), Started: s.started.UTC(),
		UptimeSeconds: time.Since(s.started).Seconds(), Listening: s.listening.list()}
	if st, ok := s.o.Sessions.(sessionStates); ok {
		if m, err := st.SessionStates(r.Context()); err == nil {
			resp.Sessions = m
		}
	}
	writeJSON(w, 200, resp)
}

// Status returns what GET /v1/status says.
func (c *Client) Status(ctx context.Context) (StatusResponse, error) {
	var out StatusResponse
	err := c.do(ctx, "GET", "/v1/status", nil, &out)
	return out, err
}
