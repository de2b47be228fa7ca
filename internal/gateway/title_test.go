package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"agentd/internal/gateway"
	"agentd/internal/store"
)

// A session is titled from its first message; PATCH renames it, and a bad
// title or an unknown session is refused with the reason.
func TestSessionTitle(t *testing.T) {
	e := newEnv(t, setup{})
	e.do("POST", "/v1/sessions/a/k/messages?wait=true", `{"text":"  Plan my trip\nto Lisbon"}`)
	e.do("POST", "/v1/sessions/a/k/messages?wait=true", `{"text":"and a hotel"}`)
	get := func() gateway.SessionInfo {
		t.Helper()
		status, _, body := e.do("GET", "/v1/sessions/a/k", "")
		var s gateway.SessionInfo
		decodeStrict(t, body, &s)
		if status != 200 {
			t.Fatalf("GET: %d %s", status, body)
		}
		return s
	}
	if s := get(); s.Title != "Plan my trip" || s.TitleBy != store.TitleByInput {
		t.Errorf("after two messages: title %q by %q, want the first message's first line", s.Title, s.TitleBy)
	}

	status, _, body := e.do("PATCH", "/v1/sessions/a/k", `{"title":" Lisbon,\n May "}`)
	var s gateway.SessionInfo
	decodeStrict(t, body, &s)
	if status != 200 || s.Title != "Lisbon, May" || s.TitleBy != store.TitleByUser || s.Address != "a/k" {
		t.Errorf("PATCH: %d %s", status, body)
	}
	if s := get(); s.Title != "Lisbon, May" {
		t.Errorf("GET after PATCH: title %q", s.Title)
	}
	status, _, body = e.do("GET", "/v1/sessions?agent=a", "")
	var list []gateway.SessionInfo
	decodeStrict(t, body, &list)
	if status != 200 || len(list) != 1 || list[0].Title != "Lisbon, May" {
		t.Errorf("list: %d %s", status, body)
	}

	for _, tc := range []struct {
		path, body string
		status     int
		msg        string
	}{
		{"/v1/sessions/a/k", `{"title":" \n "}`, http.StatusBadRequest, "title: empty"},
		{"/v1/sessions/a/k", `{"title":"` + strings.Repeat("x", store.MaxTitle+1) + `"}`, http.StatusBadRequest, "longer than 200"},
		{"/v1/sessions/a/k", `{}`, http.StatusBadRequest, "title is missing"},
		{"/v1/sessions/a/k", `{"title":"x","state":"closed"}`, http.StatusBadRequest, "unknown field"},
		{"/v1/sessions/a/nobody", `{"title":"x"}`, http.StatusNotFound, "session a/nobody"},
	} {
		status, _, body := e.do("PATCH", tc.path, tc.body)
		if status != tc.status || !strings.Contains(string(body), tc.msg) {
			t.Errorf("PATCH %s %s: %d %s; want %d and %q", tc.path, tc.body, status, body, tc.status, tc.msg)
		}
	}
	if s := get(); s.Title != "Lisbon, May" {
		t.Errorf("a refused PATCH changed the title to %q", s.Title)
	}
}
