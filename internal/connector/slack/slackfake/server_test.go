package slackfake

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// call posts a Web API call with token in the Authorization header ("" none)
// and returns the answer's ok and error.
func call(t *testing.T, srv *httptest.Server, method, token, query string, form url.Values) (bool, string, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/api/"+method+query, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a map[string]any
	json.NewDecoder(resp.Body).Decode(&a)
	e, _ := a["error"].(string)
	return a["ok"] == true, e, a
}

// The fake refuses as Slack does: no token, a wrong one, a token of the
// wrong kind, a token in the URL; a Socket Mode ticket is good once.
func TestWireRefusals(t *testing.T) {
	s := New(nil)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	o := s.Options()
	tests := []struct {
		method, token, query, want string
	}{
		{"auth.test", "", "", "not_authed"},
		{"auth.test", "xoxb-nope", "", "invalid_auth"},
		{"auth.test", o.AppToken, "", "not_allowed_token_type"},
		{"apps.connections.open", o.BotToken, "", "not_allowed_token_type"},
		{"auth.test", o.BotToken, "?token=" + o.BotToken, "invalid_arguments"},
		{"chat.postMessage", o.BotToken, "", "channel_not_found"},
		{"no.such", o.BotToken, "", "unknown_method"},
	}
	for _, tt := range tests {
		if ok, e, _ := call(t, srv, tt.method, tt.token, tt.query, nil); ok || e != tt.want {
			t.Errorf("%s%s: ok %v error %q, want %q", tt.method, tt.query, ok, e, tt.want)
		}
	}
	ok, _, a := call(t, srv, "apps.connections.open", o.AppToken, "", nil)
	if !ok {
		t.Fatalf("apps.connections.open: %v", a)
	}
	u := strings.Replace(a["url"].(string), "ws://", "http://", 1)
	c, _, err := websocket.Dial(t.Context(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.CloseNow()
	if _, resp, err := websocket.Dial(t.Context(), u, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a ticket used twice: %v", err)
	}
}
