package slack

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/slack/slackfake"
)

// A DM over Socket Mode: the message reaches the handler with its key, is
// acknowledged only after, and the reply is created with its nonce in the
// metadata and edited in place.
func TestSocketDMRoundTrip(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	dm := f.fake.AddDM("U1", "Ada")
	f.run(t)
	f.connected(t)
	post := f.fake.World().SendAsUser(dm, "U1", "hello there")
	got := f.next(t)
	ts := slackfake.PostTS(post)
	want := connector.Inbound{
		Key: "sl:" + dm + ":" + ts, Chat: connector.Chat{ID: dm, Kind: connector.ChatDM, Team: "T0001"},
		User: "U1", Name: "U1", MessageID: ts, Text: "hello there",
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(connector.Inbound{}, "At")); diff != "" {
		t.Fatalf("inbound (-want +got):\n%s", diff)
	}
	f.wait(t, "the ack", func() bool { return len(f.fake.Acks()) == 1 })
	if a := f.fake.Acks()[0]; a.EventTS != ts || a.Attempt != 0 {
		t.Fatalf("ack = %+v, want the message's at attempt 0", a)
	}

	sent, err := f.p.Send(t.Context(), connector.Outgoing{Chat: got.Chat, Text: "*hi*", Nonce: "n-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.p.Edit(t.Context(), connector.Outgoing{Chat: got.Chat, Text: "*hi* Ada"}, sent.ID); err != nil {
		t.Fatal(err)
	}
	// Editing to the same text is success.
	if err := f.p.Edit(t.Context(), connector.Outgoing{Chat: got.Chat, Text: "*hi* Ada"}, sent.ID); err != nil {
		t.Fatal(err)
	}
	msgs := f.fake.World().Messages(dm)
	if len(msgs) != 1 || slackfake.TS(msgs[0]) != sent.ID {
		t.Fatalf("messages = %+v, want one with ts %s", msgs, sent.ID)
	}
	m := msgs[0]
	if m.Text() != "*hi* Ada" || m.Edits() != 1 || m.Nonce != "n-1" || m.Versions[0].Markup != "mrkdwn" {
		t.Fatalf("message = %+v", m)
	}
	var md struct {
		EventType    string            `json:"event_type"`
		EventPayload map[string]string `json:"event_payload"`
	}
	if err := json.Unmarshal([]byte(m.Meta), &md); err != nil || md.EventType != "agentd_reply" || md.EventPayload["nonce"] != "n-1" {
		t.Fatalf("metadata = %s (%v)", m.Meta, err)
	}
}

// A mention in a channel comes as a message event and an app_mention
// event: both carry one key, so the second submit is a no-op; the reply
// goes in the message's thread.
func TestSocketChannelMentionOneKeyAndThread(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	f.fake.AddChannel("C1", "general")
	f.fake.World().AddUser(chatfake.User{ID: "U1", Name: "Ada"})
	f.run(t)
	f.connected(t)
	post := f.fake.World().SendAsUser("C1", "U1", "<@UBOT> what time is it?")
	a, b := f.next(t), f.next(t)
	ts := slackfake.PostTS(post)
	for _, m := range []connector.Inbound{a, b} {
		if m.Key != "sl:C1:"+ts || !m.Mentioned || m.Text != "what time is it?" || m.Chat.Thread != ts || m.Chat.Kind != connector.ChatGroup {
			t.Fatalf("inbound = %+v", m)
		}
	}
	sent, err := f.p.Send(t.Context(), connector.Outgoing{Chat: a.Chat, Text: "noon"})
	if err != nil {
		t.Fatal(err)
	}
	m := f.fake.World().Messages("C1")[0]
	if m.Thread != ts || slackfake.TS(m) != sent.ID {
		t.Fatalf("reply = %+v, want in thread %s", m, ts)
	}
	// A reply in that thread without a mention is addressed to the bot.
	f.fake.World().Send(chatfake.Post{Chat: "C1", Thread: ts, User: "U1", Text: "and tomorrow?"})
	r := f.next(t)
	if r.Mentioned || !r.ReplyToBot || r.Chat.Thread != ts {
		t.Fatalf("thread reply = %+v, want ReplyToBot in thread %s", r, ts)
	}
	// A top-level message without a mention is not (the core ignores it).
	f.fake.World().SendAsUser("C1", "U1", "lunch?")
	if r := f.next(t); r.Mentioned || r.ReplyToBot {
		t.Fatalf("plain channel message = %+v", r)
	}
}

// An envelope the handler did not take is not acknowledged: the fake sends
// it again with retry_attempt 1, and it is acknowledged then.
func TestSocketEnvelopeRedelivered(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	dm := f.fake.AddDM("U1", "Ada")
	refused := make(chan struct{}, 1)
	f.setFail(func(connector.Inbound) error {
		f.setFail(nil)
		refused <- struct{}{}
		return errors.New("store busy")
	})
	f.run(t)
	f.connected(t)
	post := f.fake.World().SendAsUser(dm, "U1", "hello")
	<-refused
	got := f.next(t)
	if got.Key != "sl:"+dm+":"+slackfake.PostTS(post) {
		t.Fatalf("key = %s", got.Key)
	}
	f.wait(t, "the ack", func() bool { return len(f.fake.Acks()) == 1 })
	if a := f.fake.Acks()[0]; a.Attempt != 1 {
		t.Fatalf("acknowledged at attempt %d, want 1 (after a redelivery)", a.Attempt)
	}
}

// refresh_requested: the platform opens the next link before it closes the
// old one, and nothing sent meanwhile is lost.
func TestSocketRefresh(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	dm := f.fake.AddDM("U1", "Ada")
	f.run(t)
	f.connected(t)
	f.fake.Disconnect("refresh_requested")
	f.wait(t, "the second link", func() bool { return f.fake.World().Count("apps.connections.open") == 2 })
	f.wait(t, "the old link closed", func() bool { return f.fake.Links() == 1 })
	f.fake.World().SendAsUser(dm, "U1", "still there?")
	if m := f.next(t); m.Text != "still there?" {
		t.Fatalf("inbound = %+v", m)
	}
}

// A dropped link is dialled again, and a message sent while it was down
// arrives.
func TestSocketDropReconnects(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	dm := f.fake.AddDM("U1", "Ada")
	f.run(t)
	f.connected(t)
	f.fake.World().Drop()
	f.fake.World().SendAsUser(dm, "U1", "are you back?")
	if m := f.next(t); m.Text != "are you back?" {
		t.Fatalf("inbound = %+v", m)
	}
	if n := f.fake.World().Count("apps.connections.open"); n < 2 {
		t.Fatalf("apps.connections.open called %d times, want a second link", n)
	}
}

// link_disabled ends Run with ErrConfig: no reconnect mends it.
func TestSocketLinkDisabled(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	done := f.run(t)
	f.connected(t)
	f.fake.Disconnect("link_disabled")
	if err := done(); !errors.Is(err, connector.ErrConfig) {
		t.Fatalf("Run = %v, want ErrConfig", err)
	}
}

// A refused token ends Run with ErrAuth, the token nowhere in the error.
func TestRunBadToken(t *testing.T) {
	for _, mode := range []string{ModeSocket, ModeEvents} {
		t.Run(mode, func(t *testing.T) {
			f := newFixture(t, mode, nil)
			f.p.cfg.Token = "xoxb-wrong-secret-token"
			f.p.deps.Redact = func(s string) string { return s } // the wrong token is no known secret
			err := f.p.Run(t.Context(), f)
			if !errors.Is(err, connector.ErrAuth) {
				t.Fatalf("Run = %v, want ErrAuth", err)
			}
		})
	}
}

// A refused app-level token ends Run with ErrAuth too.
func TestRunBadAppToken(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	f.p.cfg.AppToken = "xapp-wrong"
	if err := f.p.Run(t.Context(), f); !errors.Is(err, connector.ErrAuth) {
		t.Fatalf("Run = %v, want ErrAuth", err)
	}
}
