package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector"
	"agentd/internal/gateway"
	"agentd/internal/store"
)

// fakeConnectors is the chat connectors behind the API of the tests: two
// connectors, a webhook-mode one among them, and a failed reply.
type fakeConnectors struct {
	mu     sync.Mutex
	asked  []string
	bodies []string // what the webhook received
}

var connAt = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

func (f *fakeConnectors) List(context.Context) []gateway.ConnectorState {
	return []gateway.ConnectorState{
		{Name: "tg", Platform: "telegram", Agent: "assistant", Mode: "webhook", DMPolicy: "pairing", State: connector.StateConnected,
			Since: connAt, Bot: "@helper_bot", Queue: 2, Oldest: connAt, Failed: 1, PairingsPending: 1, Received: 7, Delivered: 5,
			Refused: map[string]uint64{"pairing": 1, "group": 2}, RefusedChats: []string{"-1001234567890"}},
		{Name: "dc", Platform: "discord", Agent: "assistant", Mode: "gateway", DMPolicy: "open", State: connector.StateDown,
			Since: connAt, LastError: "discord: gateway closed 4004: authentication failed (${env:DISCORD_TOKEN})", LastErrorAt: connAt},
	}
}

func (f *fakeConnectors) Get(ctx context.Context, name string) (gateway.ConnectorState, bool) {
	for _, c := range f.List(ctx) {
		if c.Name == name {
			return c, true
		}
	}
	return gateway.ConnectorState{}, false
}

func (f *fakeConnectors) Webhook(name string) (http.Handler, bool) {
	if name != "tg" {
		return nil, false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As Telegram's webhook mode does: the secret token header first.
		if r.Header.Get("X-Telegram-Bot-Api-Secret-Token") != "hook-secret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies = append(f.bodies, string(b))
		f.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}), true
}

func (f *fakeConnectors) Retry(_ context.Context, conn string, id int64, dismiss bool) (store.OutboxItem, error) {
	f.mu.Lock()
	f.asked = append(f.asked, fmt.Sprintf("retry %s %d %v", conn, id, dismiss))
	f.mu.Unlock()
	if conn != "tg" || id != 41 {
		return store.OutboxItem{}, fmt.Errorf("retry: %w", store.ErrNotFound)
	}
	it := failedItem()
	it.State, it.Acked = store.OutPending, true
	if dismiss {
		it.State = store.OutFailed
	}
	return it, nil
}

func failedItem() store.OutboxItem {
	return store.OutboxItem{ID: 41, Connector: "tg", Chat: "123", SessionID: 9, Turn: 3, Kind: store.OutReply, State: store.OutFailed,
		Parts: 1, MessageIDs: []string{""}, SendingPart: -1, Tries: 10, Error: "telegram: 400 Bad Request: chat not found",
		CreatedAt: connAt, UpdatedAt: connAt}
}

func (f *fakeConnectors) Outbox(_ context.Context, fl store.OutboxFilter) ([]store.OutboxItem, error) {
	f.mu.Lock()
	f.asked = append(f.asked, fmt.Sprintf("outbox %+v", fl))
	f.mu.Unlock()
	seen := failedItem()
	seen.ID, seen.Acked = 40, true
	return []store.OutboxItem{failedItem(), seen}, nil
}

func (f *fakeConnectors) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.asked
	f.asked = nil
	return out
}

// fakePairings keeps pairings as the store would, for the routes: a
// decided code is no longer pending.
type fakePairings struct {
	mu      sync.Mutex
	asked   []string
	decided bool
}

func pendingPairing() store.Pairing {
	return store.Pairing{Connector: "tg", UserID: "555", Name: "Ann", Chat: "555", Code: "K7PQM2XD", State: store.PairPending,
		CreatedAt: connAt, ExpiresAt: time.Now().Add(50 * time.Minute)}
}

func (f *fakePairings) ListPairings(_ context.Context, conn, state string) ([]store.Pairing, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, fmt.Sprintf("list %q %q", conn, state))
	if f.decided && state == store.PairPending {
		return nil, nil
	}
	return []store.Pairing{pendingPairing()}, nil
}

func (f *fakePairings) DecidePairing(_ context.Context, code string, approve bool, by string) (store.Pairing, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, fmt.Sprintf("decide %s %v %s", code, approve, by))
	switch code {
	case "K7PQM2XD":
		p := pendingPairing()
		p.State, p.DecidedAt, p.DecidedBy = store.PairDenied, connAt, by
		if approve {
			p.State = store.PairApproved
		}
		f.decided = true
		return p, nil
	case "FULL0000":
		return store.Pairing{}, fmt.Errorf("decide: %w", store.ErrPairingFull)
	}
	return store.Pairing{}, fmt.Errorf("decide: %w", store.ErrNotFound)
}

func (f *fakePairings) RevokePairing(_ context.Context, conn, user string) error {
	f.mu.Lock()
	f.asked = append(f.asked, fmt.Sprintf("revoke %s %s", conn, user))
	f.mu.Unlock()
	if user != "555" {
		return fmt.Errorf("revoke: %w", store.ErrNotFound)
	}
	return nil
}

func (f *fakePairings) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.asked
	f.asked = nil
	return out
}

// connEnv is an API with the fake connectors and pairings behind Protect
// over TCP (remote_admin on, so admin routes are reachable with the
// token), and its log.
type connEnv struct {
	tcp   *httptest.Server
	token string
	conns *fakeConnectors
	pairs *fakePairings
	log   *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newConnEnv(t *testing.T, remoteAdmin bool) *connEnv {
	t.Helper()
	e := &connEnv{conns: &fakeConnectors{}, pairs: &fakePairings{}, log: &syncBuffer{}}
	srv := gateway.New(&gateway.Options{Connectors: e.conns, Pairings: e.pairs, Ready: okReady{},
		Logger: slog.New(slog.NewTextHandler(e.log, nil))})
	tk, tok := authTokens(t)
	e.token = tok
	e.tcp = httptest.NewServer(srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420", RemoteAdmin: remoteAdmin}))
	t.Cleanup(e.tcp.Close)
	return e
}

type okReady struct{}

func (okReady) Ready(context.Context) error { return nil }

// do sends a request, with the token when auth, and returns the status
// and body.
func (e *connEnv) do(t *testing.T, method, path string, hdr http.Header, body string, auth bool) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.tcp.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := e.tcp.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The connectors' and pairings' routes, with the token: what each
// answers and what it asked of the connectors.
func TestConnectorRoutes(t *testing.T) {
	e := newConnEnv(t, true)
	for _, tt := range []struct {
		method, path string
		status       int
		says         []string
		conns, pairs []string
	}{
		{"GET", "/v1/connectors", 200, []string{`"name":"tg"`, `"bot":"@helper_bot"`, `"state":"down"`, `"last_error":"discord: gateway closed 4004`}, nil, nil},
		{"GET", "/v1/connectors/tg", 200, []string{`"name":"tg"`, `"undelivered":[{"id":41,`, `"error":"telegram: 400 Bad Request: chat not found"`},
			[]string{"outbox {Connector:tg SessionID:0 State:failed Limit:50 Before:0}"}, nil},
		{"GET", "/v1/connectors/nope", 404, []string{`"code":"not_found"`, "no connector nope"}, nil, nil},
		{"POST", "/v1/connectors/tg/outbox/41/retry", 200, []string{`"id":41`, `"state":"pending"`, `"acked":true`}, []string{"retry tg 41 false"}, nil},
		{"POST", "/v1/connectors/tg/outbox/41/dismiss", 200, []string{`"state":"failed"`}, []string{"retry tg 41 true"}, nil},
		{"POST", "/v1/connectors/tg/outbox/42/retry", 404, []string{"connector tg has no failed delivery 42"}, []string{"retry tg 42 false"}, nil},
		{"POST", "/v1/connectors/tg/outbox/x1/retry", 400, []string{`"code":"bad_request"`, "outbox id"}, nil, nil},
		{"POST", "/v1/connectors/tg/outbox/0/retry", 400, []string{"outbox id"}, nil, nil},
		{"GET", "/v1/pairings", 200, []string{`"code":"K7PQM2XD"`, `"user_id":"555"`, `"name":"Ann"`}, nil, []string{`list "" "pending"`}},
		{"GET", "/v1/pairings?connector=tg&all=1", 200, []string{`"pairings":[{`}, nil, []string{`list "tg" ""`}},
		{"GET", "/v1/pairings?all=maybe", 400, []string{"all: want true or false"}, nil, nil},
		{"POST", "/v1/pairings/K7PQM2XD/approve", 200, []string{`"state":"approved"`, `"decided_by":"user:token"`}, nil, []string{"decide K7PQM2XD true user:token"}},
		{"POST", "/v1/pairings/K7PQM2XD/deny", 200, []string{`"state":"denied"`}, nil, []string{"decide K7PQM2XD false user:token"}},
		{"POST", "/v1/pairings/ZZZZZZZZ/approve", 404, []string{`"code":"not_found"`, "no pending pairing code"}, nil, []string{"decide ZZZZZZZZ true user:token"}},
		{"POST", "/v1/pairings/FULL0000/approve", 429, []string{`"code":"pairing_full"`}, nil, []string{"decide FULL0000 true user:token"}},
		{"DELETE", "/v1/pairings/tg/555", 200, []string{`"revoked":true`}, nil, []string{"revoke tg 555"}},
		{"DELETE", "/v1/pairings/tg/556", 404, []string{"connector tg has no pairing of user 556"}, nil, []string{"revoke tg 556"}},
	} {
		status, body := e.do(t, tt.method, tt.path, nil, "", true)
		if status != tt.status {
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, status, body, tt.status)
		}
		for _, s := range tt.says {
			if !strings.Contains(body, s) {
				t.Errorf("%s %s: %s\nwant it to say %s", tt.method, tt.path, body, s)
			}
		}
		if diff := cmp.Diff(tt.conns, e.conns.took()); diff != "" {
			t.Errorf("%s %s asked of the connectors (-want +got):\n%s", tt.method, tt.path, diff)
		}
		if diff := cmp.Diff(tt.pairs, e.pairs.took()); diff != "" {
			t.Errorf("%s %s asked of pairing (-want +got):\n%s", tt.method, tt.path, diff)
		}
	}
}

// Without connectors the lists are empty, a connector is not found, its
// webhook neither, and decisions answer 501.
func TestConnectorRoutesWithoutConnectors(t *testing.T) {
	ts := httptest.NewServer(gateway.New(&gateway.Options{}))
	defer ts.Close()
	for _, tt := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/v1/connectors", 200, `{"connectors":[]}`},
		{"GET", "/v1/pairings", 200, `{"pairings":[]}`},
		{"GET", "/v1/connectors/tg", 404, `"not_found"`},
		{"POST", "/connectors/tg/webhook", 404, `"not_found"`},
		{"POST", "/v1/pairings/K7PQM2XD/approve", 501, `"not_available"`},
		{"POST", "/v1/connectors/tg/outbox/1/retry", 501, `"not_available"`},
		{"DELETE", "/v1/pairings/tg/555", 501, `"not_available"`},
	} {
		req, _ := http.NewRequest(tt.method, ts.URL+tt.path, nil)
		status, body := doPlain(t, ts.Client(), req)
		if status != tt.status || !strings.Contains(body, tt.body) {
			t.Errorf("%s %s: %d %s, want %d %s", tt.method, tt.path, status, body, tt.status, tt.body)
		}
	}
}

func doPlain(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Over TCP without the token every connector and pairing route is
// refused 401 but the webhook, and without remote_admin the decisions are
// refused 403 even with the token. Nothing reaches the connectors.
func TestAttackConnectorRoutesNeedToken(t *testing.T) {
	e := newConnEnv(t, false)
	srv := gateway.New(&gateway.Options{Connectors: e.conns, Pairings: e.pairs})
	n := 0
	for _, rt := range srv.Routes() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		if !strings.Contains(path, "connectors") && !strings.Contains(path, "pairings") || rt.Public {
			continue
		}
		n++
		p := strings.NewReplacer("{name}", "tg", "{id}", "41", "{code}", "K7PQM2XD", "{connector}", "tg", "{user}", "555").Replace(path)
		for _, hdr := range []http.Header{nil, {"Authorization": {"Bearer wrong"}}, {"Cookie": {"agentd_session=forged"}}} {
			if status, body := e.do(t, method, p, hdr, "", false); status != http.StatusUnauthorized && status != http.StatusTooManyRequests {
				t.Errorf("%s %s with %v: %d %s, want 401", method, p, hdr, status, body)
			}
		}
		if rt.Admin {
			if status, body := e.do(t, method, p, nil, "", true); status != http.StatusForbidden || !strings.Contains(body, "remote_admin") {
				t.Errorf("%s %s with the token over TCP, no remote_admin: %d %s, want 403", method, p, status, body)
			}
		}
	}
	if n < 8 {
		t.Fatalf("found %d connector and pairing routes, want 8", n)
	}
	if asked := append(e.conns.took(), e.pairs.took()...); len(asked) > 0 {
		t.Errorf("refused requests reached the connectors: %q", asked)
	}
}

// The webhook route needs no token: the connector checks the platform's
// secret. Paths that only look like it are not public, a body over 1 MiB
// is refused before the connector reads it, and refusals are logged and
// limited per client.
func TestAttackConnectorWebhook(t *testing.T) {
	e := newConnEnv(t, false)
	secret := http.Header{"X-Telegram-Bot-Api-Secret-Token": {"hook-secret"}, "Content-Type": {"application/json"}}
	if status, body := e.do(t, "POST", "/connectors/tg/webhook", secret, `{"update_id":1}`, false); status != 200 {
		t.Fatalf("the platform's request: %d %s", status, body)
	}
	if got := e.conns.bodies; len(got) != 1 || got[0] != `{"update_id":1}` {
		t.Fatalf("the connector received %q", got)
	}
	for _, p := range []string{"/connectors/tg/webhook/", "/connectors/tg/x/webhook", "//connectors/tg/webhook", "/connectors/tg%2Fx/webhook",
		"/connectors/../v1/pairings", "/connectors/tg/webhook/../../../v1/connectors"} {
		status, _ := e.do(t, "POST", p, secret, `{}`, false)
		if status == 200 {
			t.Errorf("POST %s without the token: 200", p)
		}
	}
	if status, _ := e.do(t, "GET", "/connectors/tg/webhook", nil, "", false); status != http.StatusUnauthorized {
		t.Errorf("GET of the webhook without the token: %d, want 401 (only POST is public)", status)
	}
	big := strings.Repeat("x", gateway.MaxBody+1)
	if status, body := e.do(t, "POST", "/connectors/tg/webhook", secret, big, false); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over 1 MiB: %d %s, want 413", status, body)
	}
	if len(e.conns.bodies) != 1 {
		t.Errorf("the connector read %d bodies, want the first alone", len(e.conns.bodies))
	}
	if status, body := e.do(t, "POST", "/connectors/nope/webhook", secret, `{}`, false); status != 404 {
		t.Errorf("an unknown connector's webhook: %d %s, want 404", status, body)
	}
	limited := false
	for range 100 {
		status, _ := e.do(t, "POST", "/connectors/tg/webhook", http.Header{"X-Telegram-Bot-Api-Secret-Token": {"guess"}}, `{}`, false)
		if status == http.StatusTooManyRequests {
			limited = true
			break
		}
		if status != http.StatusUnauthorized {
			t.Fatalf("a wrong secret: %d, want 401", status)
		}
	}
	if !limited {
		t.Error("100 wrong secrets from one client were never limited")
	}
	log := e.log.String()
	for _, want := range []string{`msg="connector webhook refused" connector=tg client=loopback reason="body larger than 1048576 bytes"`,
		`msg="connector webhook refused" connector=nope`, `msg="connector webhook refused" connector=tg client=loopback status=401`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not say %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "hook-secret") {
		t.Error("the log shows the webhook's secret")
	}
}

// A connector that is down is a degradation: agentd stays ready, and
// /readyz lists every connector with its state and queue.
func TestReadyzConnectors(t *testing.T) {
	e := newConnEnv(t, false)
	status, body := e.do(t, "GET", "/readyz", nil, "", true)
	if status != 200 {
		t.Fatalf("/readyz with a connector down: %d %s, want 200", status, body)
	}
	var got gateway.ReadyResponse
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := gateway.ReadyResponse{Ready: true,
		Degraded: []gateway.Degraded{{Part: "connector:dc", Reason: "discord: gateway closed 4004: authentication failed (${env:DISCORD_TOKEN})"}},
		Connectors: []gateway.ConnectorBrief{{Name: "tg", Platform: "telegram", State: "connected", Queue: 2},
			{Name: "dc", Platform: "discord", State: "down", LastError: "discord: gateway closed 4004: authentication failed (${env:DISCORD_TOKEN})"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/readyz (-want +got):\n%s", diff)
	}
}

// The client's calls of the connector and pairing routes.
func TestClientConnectors(t *testing.T) {
	e := newConnEnv(t, true)
	c, err := gateway.NewRemoteClient(e.tcp.URL, e.token)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	list, err := c.Connectors(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "tg" {
		t.Fatalf("Connectors: %v %+v", err, list)
	}
	d, err := c.Connector(ctx, "tg")
	if err != nil || d.Bot != "@helper_bot" || len(d.Undelivered) != 1 || d.Undelivered[0].ID != 41 {
		t.Fatalf("Connector: %v %+v", err, d)
	}
	if it, err := c.RetryDelivery(ctx, "tg", 41, false); err != nil || it.State != store.OutPending {
		t.Errorf("RetryDelivery: %v %+v", err, it)
	}
	if _, err := c.RetryDelivery(ctx, "tg", 7, true); err == nil || !strings.Contains(err.Error(), "no failed delivery 7") {
		t.Errorf("RetryDelivery of no such row: %v", err)
	}
	if ps, err := c.Pairings(ctx, "tg", true); err != nil || len(ps) != 1 || ps[0].Code != "K7PQM2XD" {
		t.Errorf("Pairings: %v %+v", err, ps)
	}
	if p, err := c.DecidePairing(ctx, "K7PQM2XD", true); err != nil || p.State != store.PairApproved {
		t.Errorf("DecidePairing: %v %+v", err, p)
	}
	if err := c.RevokePairing(ctx, "tg", "555"); err != nil {
		t.Errorf("RevokePairing: %v", err)
	}
	if got, want := e.pairs.took(), []string{`list "tg" ""`, "decide K7PQM2XD true user:token", "revoke tg 555"}; !cmp.Equal(got, want) {
		t.Errorf("asked of pairing %q, want %q", got, want)
	}
}

// Whatever the method and path, a request without the token is answered
// by a route only if the standard library's mux, holding the public
// routes alone, matches it too: Protect's own matching of public routes
// (a {name} segment in the middle of the connectors' webhook among them)
// opens nothing the table does not.
func FuzzPublicRoutes(f *testing.F) {
	srv := gateway.New(&gateway.Options{Connectors: &fakeConnectors{}, Pairings: &fakePairings{}, Console: http.NotFoundHandler()})
	tk, _ := authTokens(f)
	h := srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:7420"})
	public := http.NewServeMux()
	for _, rt := range srv.Routes() {
		if rt.Public {
			public.HandleFunc(rt.Pattern, func(http.ResponseWriter, *http.Request) {})
		}
	}
	for _, s := range [][2]string{{"POST", "/connectors/tg/webhook"}, {"POST", "/connectors/tg/webhook/"}, {"POST", "/connectors//webhook"},
		{"POST", "/connectors/a/b/webhook"}, {"GET", "/connectors/tg/webhook"}, {"POST", "/connectors/tg/../webhook"},
		{"POST", "/connectors/tg%2Fx/webhook"}, {"HEAD", "/healthz"}, {"POST", "/hooks/x"}, {"POST", "/v1/pairings/K7PQM2XD/approve"},
		{"DELETE", "/v1/pairings/tg/555"}, {"GET", "/v1/connectors"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		req, err := http.NewRequest(method, "http://127.0.0.1:7420"+target, nil)
		if err != nil || req.URL.Host != "127.0.0.1:7420" || req.URL.Path == "" || req.URL.Path[0] != '/' {
			return
		}
		req.RemoteAddr = "127.0.0.1:1234"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusUnauthorized || rec.Code == http.StatusTooManyRequests {
			return
		}
		if _, pattern := public.Handler(req); pattern == "" {
			t.Fatalf("%s %q answered %d without the token, but no public route matches it", method, target, rec.Code)
		}
	})
}
