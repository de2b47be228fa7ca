package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/gateway"
	"agentd/internal/permit"
	"agentd/internal/store"
)

// fakeGrants is a grant store in memory.
type fakeGrants struct {
	mu   sync.Mutex
	list []store.Grant
}

func (f *fakeGrants) Grants(ctx context.Context, agent string) ([]store.Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []store.Grant{}
	for _, g := range f.list {
		if agent == "" || g.Agent == agent {
			out = append(out, g)
		}
	}
	return out, nil
}

func (f *fakeGrants) DeleteGrant(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, g := range f.list {
		if g.ID == id {
			f.list = append(f.list[:i], f.list[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("fake: %w", store.ErrNotFound)
}

// askWithCard makes a call with card wait in b.
func askWithCard(t *testing.T, b *permit.Broker, id, card string) <-chan permit.Decision {
	t.Helper()
	now := time.Now().UTC()
	return askReq(t, b, permit.Request{ID: id, Agent: "a", Session: "a/main", Tool: "exec", Args: json.RawMessage(`{}`),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Card: json.RawMessage(card)})
}

// An answer's scope reaches the waiting call; "always" is refused (400,
// the call still waiting) when the card has no exact call to remember, or
// there is no card; a scope on a denial or an unknown one is refused.
func TestApprovalScopes(t *testing.T) {
	b := permit.New()
	e := newToolEnv(t, gateway.Options{Permits: b})
	const exact = `{"kind":"command","title":"run ls","command":["ls"],"exact":"ls\u0000in ."}`
	const inexact = `{"kind":"diff","title":"change a","paths":["a"],"diff":"-x\n+y\n"}`

	for _, tc := range []struct{ card, scope string }{{exact, "session"}, {exact, "always"}, {inexact, "session"}} {
		decided := askWithCard(t, b, "ap1", tc.card)
		status, _, body := e.do("POST", "/v1/approvals/ap1/grant", `{"by":"alice","scope":"`+tc.scope+`"}`)
		want := permit.Decision{Granted: true, By: "alice", Scope: tc.scope}
		if got := recv(t, "the decision", decided); status != 200 || got != want {
			t.Errorf("grant %s of %s: %d %s; the call got %+v, want %+v", tc.scope, tc.card, status, body, got, want)
		}
	}

	for _, tc := range []struct{ card, path, body, why string }{
		{inexact, "grant", `{"scope":"always"}`, "no exact call"},
		{"", "grant", `{"scope":"always"}`, "no exact call"},
		{exact, "grant", `{"scope":"forever"}`, "session or always"},
		{exact, "deny", `{"scope":"session"}`, "denial"},
	} {
		decided := askWithCard(t, b, "ap2", tc.card)
		if er := checkError(t, e, "POST", "/v1/approvals/ap2/"+tc.path, tc.body, 400, "bad_request"); !strings.Contains(er.Error, tc.why) {
			t.Errorf("%s %s with card %s: error %q does not say %q", tc.path, tc.body, tc.card, er.Error, tc.why)
		}
		if _, ok := b.Get("ap2"); !ok {
			t.Fatalf("a refused answer (%s %s) resolved the call", tc.path, tc.body)
		}
		b.Resolve("ap2", permit.Decision{})
		recv(t, "the decision", decided)
	}
	checkError(t, e, "POST", "/v1/approvals/nope/grant", `{"scope":"always"}`, 404, "not_found")
}

// GET /v1/grants lists every grant or one agent's; DELETE revokes one,
// and a grant that is not there is 404. Without a store the list is empty.
func TestGrantRoutes(t *testing.T) {
	at := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	g := &fakeGrants{list: []store.Grant{
		{ID: "g1", Agent: "a", Session: "a/main", Tool: "exec", Approval: "ap1", By: "alice", CreatedAt: at},
		{ID: "g2", Agent: "b", Tool: "web_fetch", Exact: "https://example.com/", By: "bob", CreatedAt: at},
	}}
	e := newToolEnv(t, gateway.Options{Grants: g})
	list := func(q string) []gateway.GrantInfo {
		t.Helper()
		status, _, body := e.do("GET", "/v1/grants"+q, "")
		if status != 200 {
			t.Fatalf("GET /v1/grants%s: %d %s", q, status, body)
		}
		var out []gateway.GrantInfo
		decodeStrict(t, body, &out)
		return out
	}
	all := []gateway.GrantInfo{
		{ID: "g1", Agent: "a", Session: "a/main", Tool: "exec", Approval: "ap1", By: "alice", CreatedAt: at},
		{ID: "g2", Agent: "b", Tool: "web_fetch", Exact: "https://example.com/", By: "bob", CreatedAt: at},
	}
	if d := cmp.Diff(all, list("")); d != "" {
		t.Errorf("grants (-want +got):\n%s", d)
	}
	if d := cmp.Diff(all[1:], list("?agent=b")); d != "" {
		t.Errorf("b's grants (-want +got):\n%s", d)
	}
	status, _, body := e.do("DELETE", "/v1/grants/g1", "")
	if status != 200 || strings.TrimSpace(string(body)) != `{"revoked":true}` {
		t.Errorf("revoke: %d %s", status, body)
	}
	if d := cmp.Diff(all[1:], list("")); d != "" {
		t.Errorf("after the revoke (-want +got):\n%s", d)
	}
	checkError(t, e, "DELETE", "/v1/grants/g1", "", 404, "not_found")

	none := newToolEnv(t, gateway.Options{})
	if status, _, body := none.do("GET", "/v1/grants", ""); status != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("grants without a store: %d %s", status, body)
	}
	checkError(t, none, "DELETE", "/v1/grants/g1", "", 404, "not_found")
}

// Over TCP, "always" (a standing change of the agent's policy) needs the
// access the admin routes need, gateway.remote_admin: with the token
// alone it is 403 and the call still waits, while "once" and "for this
// session" are answered. The local socket (no Protect) may always.
func TestAlwaysGrantNeedsAdminAccess(t *testing.T) {
	const exact = `{"kind":"command","title":"run ls","command":["ls"],"exact":"ls\u0000in ."}`
	for _, admin := range []bool{false, true} {
		b := permit.New()
		srv := gateway.New(&gateway.Options{Permits: b, Agents: testAgents()})
		tk, err := gateway.OpenTokens(t.TempDir(), &gateway.TokenOptions{Create: true})
		if err != nil {
			t.Fatal(err)
		}
		tok, _ := tk.Token()
		ts := httptest.NewServer(srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420", RemoteAdmin: admin}))
		answer := func(scope string) int {
			req, _ := http.NewRequest("POST", ts.URL+"/v1/approvals/ap1/grant", strings.NewReader(`{"by":"alice","scope":"`+scope+`"}`))
			req.Host = "127.0.0.1:7420"
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Content-Type", "application/json")
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		decided := askWithCard(t, b, "ap1", exact)
		got := answer(permit.ScopeAlways)
		switch {
		case !admin && got != http.StatusForbidden:
			t.Errorf("remote_admin off: an always grant over TCP: %d, want 403", got)
		case admin && got != http.StatusOK:
			t.Errorf("remote_admin on: an always grant over TCP: %d, want 200", got)
		}
		if !admin {
			if _, ok := b.Get("ap1"); !ok {
				t.Fatal("a refused always grant resolved the call")
			}
			if got := answer(permit.ScopeSession); got != http.StatusOK {
				t.Errorf("remote_admin off: a session grant over TCP: %d, want 200", got)
			}
		}
		recv(t, "the decision", decided)
		ts.Close()
	}
	// the socket: TestApprovalScopes answers "always" without Protect
}
