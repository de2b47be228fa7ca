package stream_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"agentd/internal/gateway"
)

// An upgrade refused while agentd shuts down is said as every request
// refused for a shutdown is: 503 shutting_down, with when to come back.
func TestRefusedWhileClosing(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.h.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(e.srv.URL + "/v1/stream?all=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ge gateway.Error
	if json.Unmarshal(b, &ge) != nil || resp.StatusCode != http.StatusServiceUnavailable || ge.Code != "shutting_down" ||
		resp.Header.Get("Retry-After") == "" {
		t.Errorf("after Close: %d %s (Retry-After %q), want 503 shutting_down with Retry-After", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
}
