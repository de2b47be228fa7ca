package slack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/slack/slackfake"
)

// Slack's answers map to what agentd does about them.
func TestSendErrors(t *testing.T) {
	tests := []struct {
		name  string
		fault chatfake.Fault
		want  error
	}{
		{"invalid_auth", chatfake.Fault{Body: slackfake.Error("invalid_auth")}, connector.ErrAuth},
		{"token_revoked", chatfake.Fault{Body: slackfake.Error("token_revoked")}, connector.ErrAuth},
		{"missing_scope", chatfake.Fault{Body: slackfake.Error("missing_scope")}, connector.ErrConfig},
		{"channel_not_found", chatfake.Fault{Body: slackfake.Error("channel_not_found")}, connector.ErrPermanent},
		{"not_in_channel", chatfake.Fault{Body: slackfake.Error("not_in_channel")}, connector.ErrPermanent},
		{"is_archived", chatfake.Fault{Body: slackfake.Error("is_archived")}, connector.ErrPermanent},
		{"msg_too_long", chatfake.Fault{Body: slackfake.Error("msg_too_long")}, connector.ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, ModeSocket, nil)
			f.fake.AddChannel("C1", "general")
			f.fake.World().Fail("chat.postMessage", 1, tt.fault)
			_, err := f.p.Send(t.Context(), connector.Outgoing{Chat: connector.Chat{ID: "C1"}, Text: "x"})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Send = %v, want %v", err, tt.want)
			}
		})
	}
}

// The fake's own refusals, made from the request: the same mapping.
func TestSendRefusedByTheFake(t *testing.T) {
	f := newFixture(t, ModeSocket, &slackfake.Options{MaxText: 10})
	f.fake.AddChannel("C1", "general")
	f.fake.AddChannel("C2", "old")
	f.fake.AddChannel("C3", "private")
	f.fake.Archive("C2")
	f.fake.Kick("C3")
	tests := []struct {
		channel, text string
		want          error
	}{
		{"C404", "x", connector.ErrPermanent},
		{"C2", "x", connector.ErrPermanent},
		{"C3", "x", connector.ErrPermanent},
		{"C1", "more than ten characters", connector.ErrTooLong},
	}
	for _, tt := range tests {
		_, err := f.p.Send(t.Context(), connector.Outgoing{Chat: connector.Chat{ID: tt.channel}, Text: tt.text})
		if !errors.Is(err, tt.want) {
			t.Errorf("Send(%s, %q) = %v, want %v", tt.channel, tt.text, err, tt.want)
		}
	}
	if err := f.p.Edit(t.Context(), connector.Outgoing{Chat: connector.Chat{ID: "C1"}}, "1.000999"); !errors.Is(err, connector.ErrPermanent) {
		t.Errorf("Edit of no message = %v, want ErrPermanent", err)
	}
}

// A 429 (HTTP or ok:false ratelimited) is a *RetryAfter with Slack's
// Retry-After.
func TestSendRateLimited(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	f.fake.AddChannel("C1", "general")
	f.fake.World().Fail("chat.postMessage", 1, chatfake.Fault{Status: 429, RetryAfter: 30 * time.Second})
	_, err := f.p.Send(t.Context(), connector.Outgoing{Chat: connector.Chat{ID: "C1"}, Text: "x"})
	ra, ok := errors.AsType[*connector.RetryAfter](err)
	if !ok || ra.D != 30*time.Second {
		t.Fatalf("Send = %v, want RetryAfter 30s", err)
	}
	f.fake.World().Fail("chat.update", 1, chatfake.Fault{Body: slackfake.Error("ratelimited")})
	err = f.p.Edit(t.Context(), connector.Outgoing{Chat: connector.Chat{ID: "C1"}, Text: "y"}, "1.000001")
	if _, ok := errors.AsType[*connector.RetryAfter](err); !ok {
		t.Fatalf("Edit = %v, want RetryAfter", err)
	}
}

// No error text carries a token: Slack's own messages that echo one, a
// dropped connection, a server error, a WebSocket dial that fails.
func TestTokenNeverInErrors(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	f.fake.AddChannel("C1", "general")
	o := f.fake.Options()
	echo := `{"ok":false,"error":"invalid_auth","response_metadata":{"messages":["[ERROR] token ` + o.BotToken + ` and ` + o.AppToken + ` refused"]}}`
	faults := []chatfake.Fault{
		{Body: echo},
		{Drop: true},
		{Status: 502, Body: "bad gateway for " + o.BotToken},
		{Status: 500, Body: `{"ok":false,"error":"internal_error ` + o.BotToken + `"}`},
	}
	for _, fault := range faults {
		f.fake.World().Fail("chat.postMessage", 1, fault)
		_, err := f.p.Send(t.Context(), connector.Outgoing{Chat: connector.Chat{ID: "C1"}, Text: "x"})
		if err == nil {
			t.Fatalf("fault %+v: no error", fault)
		}
		if s := err.Error(); strings.Contains(s, o.BotToken) || strings.Contains(s, o.AppToken) {
			t.Fatalf("the error shows a token: %s", s)
		}
	}
	// The Socket Mode dial: the fake's URL given to a dial that fails.
	f.fake.World().Fail("apps.connections.open", 1, chatfake.Fault{Body: `{"ok":true,"url":"ws://127.0.0.1:1/link/?ticket=` + o.AppToken + `"}`})
	_, err := f.p.dial(t.Context(), nil)
	if err == nil || strings.Contains(err.Error(), o.AppToken) || strings.Contains(err.Error(), "ticket=") {
		t.Fatalf("dial error = %v", err)
	}
}

// Find finds the message created with a nonce (in a channel and in a
// thread) and nothing for another nonce; without the history scope it
// finds nothing and says so by ok, not by an error.
func TestFind(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	f.fake.AddChannel("C1", "general")
	since := f.fake.World().Now().Add(-time.Second)
	top := connector.Chat{ID: "C1", Kind: connector.ChatGroup}
	thread := connector.Chat{ID: "C1", Kind: connector.ChatGroup, Thread: slackfake.PostTS(f.fake.World().SendAsUser("C1", "U1", "q"))}
	a, err := f.p.Send(t.Context(), connector.Outgoing{Chat: top, Text: "a", Nonce: "nonce-a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.p.Send(t.Context(), connector.Outgoing{Chat: thread, Text: "b", Nonce: "nonce-b"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		chat   connector.Chat
		nonce  string
		want   string
		wantOK bool
	}{
		{top, "nonce-a", a.ID, true},
		{thread, "nonce-b", b.ID, true},
		{top, "nonce-x", "", false},
		{thread, "nonce-a", "", false},
		{top, "", "", false},
	}
	for _, tt := range tests {
		id, ok, err := f.p.Find(t.Context(), tt.chat, tt.nonce, since)
		if err != nil || id != tt.want || ok != tt.wantOK {
			t.Errorf("Find(%+v, %q) = %q, %v, %v; want %q, %v", tt.chat, tt.nonce, id, ok, err, tt.want, tt.wantOK)
		}
	}
	f.fake.World().Fail("conversations.history", 1, chatfake.Fault{Body: slackfake.Error("missing_scope")})
	if id, ok, err := f.p.Find(t.Context(), top, "nonce-a", since); ok || !errors.Is(err, connector.ErrConfig) || id != "" {
		t.Fatalf("Find without the scope = %q, %v, %v; want %v", id, ok, err, connector.ErrConfig)
	}
	f.fake.World().Fail("conversations.replies", 1, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	if _, _, err := f.p.Find(t.Context(), thread, "nonce-b", since); err == nil {
		t.Fatal("Find rate limited: no error")
	}
}

// roundTripper serves requests with an http.Handler in process: no
// network, so a synctest bubble's clock moves only when everything waits.
type roundTripper struct{ h http.Handler }

func (rt roundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rt.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// A 429 at start makes Run wait Slack's Retry-After before it asks again.
func TestRunWaitsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := slackfake.New(nil)
		defer fake.Close()
		fake.World().Fail("auth.test", 2, chatfake.Fault{Status: 429, RetryAfter: 90 * time.Second})
		o := fake.Options()
		var (
			mu    sync.Mutex
			calls []time.Time
		)
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(calls)
		}
		client := &http.Client{Transport: roundTripper{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/auth.test") {
				mu.Lock()
				calls = append(calls, time.Now())
				mu.Unlock()
			}
			fake.ServeHTTP(w, r)
		})}}
		p, err := newPlatform(connector.Config{Token: o.BotToken, SigningSecret: o.SigningSecret, Mode: ModeEvents, APIURL: "http://slack.test/api"},
			connector.PlatformDeps{HTTP: client})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- p.Run(ctx, connector.HandlerFunc(func(context.Context, connector.Inbound) error { return nil }))
		}()
		synctest.Wait()
		for count() < 3 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(calls); i++ {
			if gap := calls[i].Sub(calls[i-1]); gap < 90*time.Second {
				t.Fatalf("auth.test %d came %s after the one before, want ≥ Retry-After 90s", i+1, gap)
			}
		}
		if id := p.identity(); id.User != "UBOT" {
			t.Fatalf("identity = %+v", id)
		}
	})
}

// New refuses what cannot work, naming it, with ErrConfig.
func TestNewConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  connector.Config
	}{
		{"no token", connector.Config{AppToken: "xapp-1"}},
		{"socket without app token", connector.Config{Token: "xoxb-1"}},
		{"events without secret", connector.Config{Token: "xoxb-1", Mode: ModeEvents}},
		{"unknown mode", connector.Config{Token: "xoxb-1", AppToken: "xapp-1", Mode: "rtm"}},
	}
	for _, tt := range tests {
		if _, _, err := New(tt.cfg, connector.PlatformDeps{}); !errors.Is(err, connector.ErrConfig) {
			t.Errorf("%s: New = %v, want ErrConfig", tt.name, err)
		}
	}
	p, caps, err := New(connector.Config{Token: "xoxb-1", AppToken: "xapp-1"}, connector.PlatformDeps{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(connector.Finder); !ok {
		t.Error("the platform is no Finder")
	}
	if _, ok := p.(connector.Webhook); !ok {
		t.Error("the platform is no Webhook")
	}
	if caps.MaxText != 4000 || caps.Nonce || caps.EditEvery != 1200*time.Millisecond {
		t.Errorf("caps = %+v", caps)
	}
}
