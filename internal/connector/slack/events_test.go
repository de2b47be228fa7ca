package slack

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentd/internal/connector"
	"agentd/internal/connector/slack/slackfake"
)

const testSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// eventsPlatform is an events-mode Platform whose handler records what it
// was given, running (so ServeWebhook has a handler) at clock now.
func eventsPlatform(t *testing.T, now time.Time) (*Platform, *[]connector.Inbound) {
	t.Helper()
	p, err := newPlatform(connector.Config{Token: "xoxb-t", SigningSecret: testSecret, Mode: ModeEvents},
		connector.PlatformDeps{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var got []connector.Inbound
	p.self = identity{User: "UBOT", Bot: "BBOT"}
	p.handler = connector.HandlerFunc(func(_ context.Context, m connector.Inbound) error {
		got = append(got, m)
		return nil
	})
	return p, &got
}

const dmEvent = `{"type":"event_callback","team_id":"T1","event":{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hi","ts":"1700000000.000100"}}`

// Every way around the signature check fails with 401 and reaches no
// handler; only a request signed with the secret, within 5 minutes, is
// taken.
func TestWebhookSignature(t *testing.T) {
	now := time.Unix(1700000100, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	old := strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10)
	future := strconv.FormatInt(now.Add(6*time.Minute).Unix(), 10)
	sign := func(secret, ts, body string) string { return slackfake.Sign(secret, ts, []byte(body)) }
	huge := `{"type":"event_callback","pad":"` + strings.Repeat("x", maxBody) + `"}`
	tests := []struct {
		name   string
		method string
		ts     string
		sig    string
		body   string
		status int
		taken  int
	}{
		{"signed", "POST", ts, sign(testSecret, ts, dmEvent), dmEvent, 200, 1},
		{"no headers", "POST", "", "", dmEvent, 401, 0},
		{"no signature", "POST", ts, "", dmEvent, 401, 0},
		{"no timestamp", "POST", "", sign(testSecret, ts, dmEvent), dmEvent, 401, 0},
		{"replayed after 6 minutes", "POST", old, sign(testSecret, old, dmEvent), dmEvent, 401, 0},
		{"from 6 minutes ahead", "POST", future, sign(testSecret, future, dmEvent), dmEvent, 401, 0},
		{"timestamp not a number", "POST", "soon", sign(testSecret, "soon", dmEvent), dmEvent, 401, 0},
		{"body changed after signing", "POST", ts, sign(testSecret, ts, dmEvent), strings.Replace(dmEvent, `"hi"`, `"rm -rf"`, 1), 401, 0},
		{"timestamp changed after signing", "POST", ts, sign(testSecret, old, dmEvent), dmEvent, 401, 0},
		{"v1 signature", "POST", ts, "v1=" + strings.TrimPrefix(sign(testSecret, ts, dmEvent), "v0="), dmEvent, 401, 0},
		{"bare hex", "POST", ts, strings.TrimPrefix(sign(testSecret, ts, dmEvent), "v0="), dmEvent, 401, 0},
		{"wrong secret", "POST", ts, sign("not-the-secret", ts, dmEvent), dmEvent, 401, 0},
		{"empty secret", "POST", ts, sign("", ts, dmEvent), dmEvent, 401, 0},
		{"truncated signature", "POST", ts, sign(testSecret, ts, dmEvent)[:40], dmEvent, 401, 0},
		{"huge body", "POST", ts, sign(testSecret, ts, huge), huge, 413, 0},
		{"GET", "GET", ts, sign(testSecret, ts, ""), "", 405, 0},
		{"url_verification unsigned", "POST", "", "", `{"type":"url_verification","challenge":"c"}`, 401, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, got := eventsPlatform(t, now)
			req := httptest.NewRequest(tt.method, "/connectors/slack/webhook", strings.NewReader(tt.body))
			if tt.ts != "" {
				req.Header.Set("X-Slack-Request-Timestamp", tt.ts)
			}
			if tt.sig != "" {
				req.Header.Set("X-Slack-Signature", tt.sig)
			}
			rec := httptest.NewRecorder()
			p.ServeWebhook(rec, req)
			if rec.Code != tt.status || len(*got) != tt.taken {
				t.Fatalf("status %d, %d taken; want %d, %d (%s)", rec.Code, len(*got), tt.status, tt.taken, rec.Body)
			}
		})
	}
}

// url_verification is answered with its challenge, after the check.
func TestWebhookURLVerification(t *testing.T) {
	now := time.Unix(1700000100, 0)
	p, _ := eventsPlatform(t, now)
	body := `{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	ts := strconv.FormatInt(now.Unix(), 10)
	req := httptest.NewRequest("POST", "/", strings.NewReader(body))
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", slackfake.Sign(testSecret, ts, []byte(body)))
	rec := httptest.NewRecorder()
	p.ServeWebhook(rec, req)
	if rec.Code != 200 || rec.Body.String() != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("answer %d %q", rec.Code, rec.Body)
	}
}

// A handler that did not take the message answers 503, and a platform
// that is not running answers 503: Slack sends the event again.
func TestWebhookNotTaken(t *testing.T) {
	now := time.Unix(1700000100, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	post := func(p *Platform) int {
		req := httptest.NewRequest("POST", "/", strings.NewReader(dmEvent))
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", slackfake.Sign(testSecret, ts, []byte(dmEvent)))
		rec := httptest.NewRecorder()
		p.ServeWebhook(rec, req)
		return rec.Code
	}
	p, _ := eventsPlatform(t, now)
	p.handler = connector.HandlerFunc(func(context.Context, connector.Inbound) error { return errors.New("store busy") })
	if c := post(p); c != http.StatusServiceUnavailable {
		t.Fatalf("refused by the handler: %d, want 503", c)
	}
	p.handler = nil
	if c := post(p); c != http.StatusServiceUnavailable {
		t.Fatalf("not running: %d, want 503", c)
	}
}

// Events mode against the fake: the fake verifies the request URL, posts
// signed events, and posts again with X-Slack-Retry-Num while agentd
// answers 5xx; the message is taken once it is durable.
func TestEventsModeThroughFake(t *testing.T) {
	f := newFixture(t, ModeEvents, nil)
	dm := f.fake.AddDM("U1", "Ada")
	hook := httptest.NewServer(http.HandlerFunc(f.p.ServeWebhook))
	t.Cleanup(hook.Close)
	f.run(t)
	f.connected(t)
	if err := f.fake.SetEventsURL(t.Context(), hook.URL); err != nil {
		t.Fatal(err)
	}
	refused := 0
	f.setFail(func(connector.Inbound) error {
		if refused++; refused == 1 {
			return errors.New("store busy")
		}
		return nil
	})
	post := f.fake.World().SendAsUser(dm, "U1", "over http")
	m := f.next(t)
	if m.Key != "sl:"+dm+":"+slackfake.PostTS(post) || m.Text != "over http" {
		t.Fatalf("inbound = %+v", m)
	}
	f.wait(t, "the retry answered", func() bool { return len(f.fake.Deliveries()) == 2 })
	d := f.fake.Deliveries()
	if d[0].Status != 503 || d[1].Status != 200 || d[1].Retry != 1 {
		t.Fatalf("deliveries = %+v, want 503 then 200 on retry 1", d)
	}
}
