package slack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentd/internal/connector"
	"agentd/internal/connector/slack/slackfake"
)

// Header tricks beyond TestWebhookSignature's: the timestamp written in
// another form than it was signed in, the signature header twice (a right
// value after a wrong one, or the reverse), several v0= values in one, a
// Socket Mode connector's route (no signing secret) with a post signed
// with the empty secret, and a replay of a taken post (the same key: the
// handler dedups it). None reaches the handler but the one signed post.
func TestAttackWebhookHeaders(t *testing.T) {
	now := time.Unix(1700000100, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := slackfake.Sign(testSecret, ts, []byte(dmEvent))
	wrong := slackfake.Sign("nope", ts, []byte(dmEvent))
	tests := []struct {
		name string
		ts   []string
		sig  []string
	}{
		{"timestamp with a plus sign", []string{"+" + ts}, []string{sig}},
		{"timestamp with a leading zero", []string{"0" + ts}, []string{sig}},
		{"timestamp with a space", []string{ts + " "}, []string{sig}},
		{"signature header twice, wrong first", []string{ts}, []string{wrong, sig}},
		{"two v0 values in one header", []string{ts}, []string{wrong + "," + sig}},
		{"signature upper-case hex", []string{ts}, []string{"v0=" + strings.ToUpper(strings.TrimPrefix(sig, "v0="))}},
		{"timestamp header twice, stale first", []string{strconv.FormatInt(now.Add(-time.Hour).Unix(), 10), ts}, []string{sig}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, got := eventsPlatform(t, now)
			req := httptest.NewRequest(http.MethodPost, "/connectors/slack/webhook", strings.NewReader(dmEvent))
			req.Header["X-Slack-Request-Timestamp"] = tt.ts
			req.Header["X-Slack-Signature"] = tt.sig
			rec := httptest.NewRecorder()
			p.ServeWebhook(rec, req)
			if rec.Code != http.StatusUnauthorized || len(*got) != 0 {
				t.Fatalf("status %d, %d taken; want 401, none", rec.Code, len(*got))
			}
		})
	}

	t.Run("socket mode's route", func(t *testing.T) {
		p, err := newPlatform(connector.Config{Token: "xoxb-t", AppToken: "xapp-t", Mode: ModeSocket},
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
		req := httptest.NewRequest(http.MethodPost, "/connectors/slack/webhook", strings.NewReader(dmEvent))
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", slackfake.Sign("", ts, []byte(dmEvent)))
		rec := httptest.NewRecorder()
		p.ServeWebhook(rec, req)
		if rec.Code != http.StatusUnauthorized || len(got) != 0 {
			t.Fatalf("status %d, %d taken; want 401, none", rec.Code, len(got))
		}
	})

	t.Run("a replay within the window has the same key", func(t *testing.T) {
		p, got := eventsPlatform(t, now)
		for range 2 {
			req := httptest.NewRequest(http.MethodPost, "/connectors/slack/webhook", strings.NewReader(dmEvent))
			req.Header.Set("X-Slack-Request-Timestamp", ts)
			req.Header.Set("X-Slack-Signature", sig)
			rec := httptest.NewRecorder()
			p.ServeWebhook(rec, req)
		}
		if len(*got) != 2 || (*got)[0].Key != (*got)[1].Key || (*got)[0].Key == "" {
			t.Fatalf("replayed post: %+v; want the same idempotency key twice", *got)
		}
	})
}

// Events that are not a person's new message, or that claim the bot's
// attention falsely: an edit (message_changed, whose user is inside), a
// deletion, a bot's message, the bot's own, a mention of another user or
// of the bot written as text, an app_mention's twin in a channel.
func TestAttackSlackInboundSpoofing(t *testing.T) {
	p, _ := eventsPlatform(t, time.Unix(1700000100, 0))
	cb := func(ev string) eventCallback {
		return eventCallback{Type: "event_callback", TeamID: "T1", Event: []byte(ev)}
	}
	ignored := []string{
		`{"type":"message","subtype":"message_changed","channel":"D1","channel_type":"im","ts":"1.2","message":{"user":"U1","text":"<@UBOT> edited"}}`,
		`{"type":"message","subtype":"message_deleted","channel":"D1","channel_type":"im","ts":"1.3"}`,
		`{"type":"message","subtype":"bot_message","channel":"C1","channel_type":"channel","bot_id":"B9","text":"<@UBOT> hi","ts":"1.4"}`,
		`{"type":"message","channel":"C1","channel_type":"channel","user":"U9","bot_id":"B9","text":"<@UBOT> hi","ts":"1.5"}`,
		`{"type":"message","channel":"C1","channel_type":"channel","user":"UBOT","text":"<@UBOT> loop","ts":"1.6"}`,
		`{"type":"reaction_added","user":"U1","item":{"channel":"C1","ts":"1.1"}}`,
		`{"type":"message","subtype":"channel_join","channel":"C1","user":"U1","text":"<@U1> has joined","ts":"1.7"}`,
	}
	for _, ev := range ignored {
		if in, ok := p.inbound(cb(ev)); ok {
			t.Errorf("%s taken: %+v", ev, in)
		}
	}
	notForTheBot := []string{
		`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"<@UOTHER> hi","ts":"2.1"}`,
		`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"&lt;@UBOT&gt; typed as text","ts":"2.2"}`,
		`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"@UBOT hi","ts":"2.3"}`,
		`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"<@UBOTX> hi","ts":"2.4"}`,
		`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","text":"<#UBOT> hi","ts":"2.5"}`,
		`{"type":"message","channel":"C1","channel_type":"channel","user":"U1","thread_ts":"2.0","parent_user_id":"UOTHER","text":"in someone's thread","ts":"2.6"}`,
	}
	for _, ev := range notForTheBot {
		in, ok := p.inbound(cb(ev))
		if !ok {
			t.Fatalf("%s not taken", ev)
		}
		if in.Mentioned || in.ReplyToBot || in.Chat.Kind != connector.ChatGroup {
			t.Errorf("%s passes the mention gate: %+v", ev, in)
		}
	}
	// An app_mention in a channel (no channel_type) is a group's, not a DM.
	if in, ok := p.inbound(cb(`{"type":"app_mention","channel":"C1","user":"U1","text":"<@UBOT> hi","ts":"3.1"}`)); !ok || in.Chat.Kind != connector.ChatGroup {
		t.Errorf("app_mention in a channel: %+v, %v", in, ok)
	}
}
