package gateway

import (
	"context"
	"net/http"
	"os"
	"slices"
	"sync"
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

// listening is the set of addresses a Server serves, kept by ServeUnix and
// ServeTCP while they run.
type listening struct {
	mu    sync.Mutex
	addrs []string
}

func (l *listening) add(a string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addrs = append(l.addrs, a)
}

func (l *listening) remove(a string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index(l.addrs, a); i >= 0 {
		l.addrs = slices.Delete(l.addrs, i, i+1)
	}
}

func (l *listening) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.addrs...)
}

func (s *Server) routeStatus() {
	s.mux.HandleFunc("GET /v1/status", s.status)
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
