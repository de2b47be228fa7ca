package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentd/internal/gateway"
	"agentd/internal/job"
	agentdsecret "agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// hookServers are the API with the job gh, whose webhook's secret is
// s3cret, and the job plain, which has no webhook, served as on the unix
// socket (no Protect) and as on TCP (Protect, with a token the requests
// never carry).
func hookServers(t *testing.T) (e *env, socket, tcp *httptest.Server) {
	t.Helper()
	e = newEnv(t, setup{options: func(o *gateway.Options) {
		// Failures refill one in 1000 s: the tests that exhaust the
		// bucket do not race its refill on a slow machine.
		o.HookFailRate = 0.001
		r := job.New(o.Runtime, o.Sessions.(*sqlite.Store), testAgents(), &job.Options{Secrets: agentdsecret.NewResolver("",
			&agentdsecret.Options{LookupEnv: func(k string) (string, bool) { return "s3cret", k == "HOOK_SECRET" }})})
		t.Cleanup(r.Close)
		if err := r.Activate(context.Background(), &store.Extension{Type: "job", Name: "gh", Spec: json.RawMessage(
			`{"agent":"a","concurrency":"allow","prompt":"got {{payload}}","triggers":[{"webhook":{"secret_env":"HOOK_SECRET"}}]}`)}); err != nil {
			t.Fatal(err)
		}
		if err := r.Activate(context.Background(), &store.Extension{Type: "job", Name: "plain", Spec: json.RawMessage(
			`{"agent":"a","prompt":"p","triggers":[{"every":"1h"}]}`)}); err != nil {
			t.Fatal(err)
		}
		o.Jobs = r
	}})
	tk, _ := authTokens(t)
	tcp = httptest.NewServer(e.srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: "127.0.0.1:0"}))
	t.Cleanup(tcp.Close)
	return e, e.http, tcp
}

// hookPost sends a webhook request signed under key at ts, with the
// delivery id (if any), and returns its status and body.
func hookPost(t *testing.T, srv *httptest.Server, path, key, body, delivery string, ts time.Time) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	req.Header.Set("X-Agentd-Timestamp", stamp)
	req.Header.Set("X-Agentd-Signature", job.Sign([]byte(key), stamp, []byte(body)))
	if delivery != "" {
		req.Header.Set("X-GitHub-Delivery", delivery)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestHookOverSocketAndTCP: each answer of POST /hooks/{name}, on the
// socket and on TCP without the gateway's token.
func TestHookOverSocketAndTCP(t *testing.T) {
	e, socket, tcp := hookServers(t)
	for _, srv := range []struct {
		name string
		s    *httptest.Server
	}{{"socket", socket}, {"tcp", tcp}} {
		t.Run(srv.name, func(t *testing.T) {
			now, d, ref := time.Now(), "d-"+srv.name, `{"ref":"`+srv.name+`"}`
			status, body := hookPost(t, srv.s, "/hooks/gh", "s3cret", ref, d, now)
			if status != http.StatusAccepted {
				t.Fatalf("signed: %d %s", status, body)
			}
			var run job.Result
			if err := json.Unmarshal(body, &run); err != nil || run.Run == "" || run.Session == "" || run.Trigger != "webhook" {
				t.Fatalf("signed: %s (%v)", body, err)
			}
			if end := e.wait(run.Turn); end.Reply != "re: got "+ref {
				t.Fatalf("reply %q", end.Reply)
			}
			status, body = hookPost(t, srv.s, "/hooks/gh", "s3cret", ref, d, now.Add(time.Second))
			var dup gateway.HookDelivered
			if json.Unmarshal(body, &dup); status != http.StatusConflict || dup.Run != run.Run || dup.Code != "delivered" {
				t.Fatalf("replay: %d %s, want 409 with run %s", status, body, run.Run)
			}
			for _, tc := range []struct {
				name, path, key, body string
				ts                    time.Time
				status                int
			}{
				{"bad signature", "/hooks/gh", "guess", `{}`, now, http.StatusUnauthorized},
				{"old timestamp", "/hooks/gh", "s3cret", `{}`, now.Add(-time.Hour), http.StatusUnauthorized},
				{"unknown job", "/hooks/nope", "s3cret", `{}`, now, http.StatusUnauthorized},
				{"job without a webhook", "/hooks/plain", "s3cret", `{}`, now, http.StatusUnauthorized},
				{"big body", "/hooks/gh", "s3cret", strings.Repeat("x", gateway.MaxBody+1), now, http.StatusRequestEntityTooLarge},
			} {
				status, body := hookPost(t, srv.s, tc.path, tc.key, tc.body, "", tc.ts)
				if status != tc.status || strings.Contains(string(body), "s3cret") {
					t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.status)
				}
			}
		})
	}
	// Only /hooks/{name} itself is public on TCP: a longer path needs the
	// token.
	if status, body := hookPost(t, tcp, "/hooks/gh/x", "s3cret", `{}`, "", time.Now()); status != http.StatusUnauthorized {
		t.Errorf("/hooks/gh/x on TCP: %d %s, want 401", status, body)
	}
}

// TestHookFailuresAreLimited: a client that keeps failing is refused
// 429, even with a right signature, as the token's guessers are.
func TestHookFailuresAreLimited(t *testing.T) {
	_, socket, _ := hookServers(t)
	limited := false
	for range 100 {
		status, _ := hookPost(t, socket, "/hooks/gh", "guess", `{}`, "", time.Now())
		if status == http.StatusTooManyRequests {
			limited = true
			break
		}
		if status != http.StatusUnauthorized {
			t.Fatalf("status %d", status)
		}
	}
	if !limited {
		t.Fatal("100 bad signatures and never 429")
	}
	if status, body := hookPost(t, socket, "/hooks/gh", "s3cret", `{}`, "", time.Now()); status != http.StatusTooManyRequests {
		t.Fatalf("a right signature while limited: %d %s, want 429", status, body)
	}
}

// TestHookJobsAreNotTold: without the secret, a webhook job, a job
// without a webhook and no job at all answer alike — status and body —
// on the socket and on TCP.
func TestHookJobsAreNotTold(t *testing.T) {
	_, socket, tcp := hookServers(t)
	for _, srv := range []*httptest.Server{socket, tcp} {
		now := time.Now()
		status, body := hookPost(t, srv, "/hooks/gh", "guess", `{}`, "", now)
		if status != http.StatusUnauthorized {
			t.Fatalf("a wrong signature: %d %s, want 401", status, body)
		}
		for _, path := range []string{"/hooks/plain", "/hooks/payroll"} {
			if st, b := hookPost(t, srv, path, "guess", `{}`, "", now); st != status || string(b) != string(body) {
				t.Errorf("%s: %d %s; /hooks/gh with a wrong signature: %d %s", path, st, b, status, body)
			}
		}
	}
}

// TestHookTooLargeIsLimited: a client that keeps sending bodies over the
// limit is limited as one that keeps failing the signature is — then
// refused 429 even with a right signature —, whether it declares the
// body's length (refused before the handler on TCP) or streams it.
func TestHookTooLargeIsLimited(t *testing.T) {
	big := strings.Repeat("x", gateway.MaxBody+1)
	for _, tc := range []struct {
		name    string
		tcp     bool
		chunked bool
	}{{"socket", false, false}, {"tcp declared", true, false}, {"tcp streamed", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			_, socket, tcp := hookServers(t)
			srv := socket
			if tc.tcp {
				srv = tcp
			}
			for range 100 {
				var rd io.Reader = strings.NewReader(big)
				if tc.chunked {
					rd = io.MultiReader(rd) // no length known: sent chunked
				}
				req, _ := http.NewRequest("POST", srv.URL+"/hooks/gh", rd)
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests {
					break
				}
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					t.Fatalf("status %d", resp.StatusCode)
				}
			}
			if status, body := hookPost(t, srv, "/hooks/gh", "s3cret", `{}`, "", time.Now()); status != http.StatusTooManyRequests {
				t.Fatalf("a right signature after 100 bodies over the limit: %d %s, want 429", status, body)
			}
		})
	}
}
