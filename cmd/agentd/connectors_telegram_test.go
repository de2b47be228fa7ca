package main

import (
	"io"
	"net/http"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram/telegramfake"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/store"
)

const tgToken = "555001:AAH-e2e-secret-token_value"

// tgRig is a Telegram connector's world: the fake Bot API with Alice (42,
// a DM) and a group (-100777), and a data directory.
func tgRig(t *testing.T) (*connRig, *telegramfake.Server) {
	t.Helper()
	w := chatfake.New(nil)
	w.AddUser(chatfake.User{ID: "42", Name: "Alice", Username: "alice"})
	w.AddUser(chatfake.User{ID: "43", Name: "Bob"})
	w.AddChat(chatfake.Chat{ID: "42", Kind: chatfake.DM})
	w.AddChat(chatfake.Chat{ID: "43", Kind: chatfake.DM})
	w.AddChat(chatfake.Chat{ID: "-100777", Kind: chatfake.Group, Title: "team"})
	fake := telegramfake.New(&telegramfake.Options{World: w, Token: tgToken})
	t.Cleanup(fake.Close)
	return newConnRig(t, w, fake, "TG_TOKEN", tgToken), fake
}

// tgRow is the connector's row, with more spec lines (indented 2).
func tgRow(api, extra string) string {
	return "type: integration\nname: tg\nspec:\n  platform: telegram\n  token_env: TG_TOKEN\n  api_url: " + api +
		"\n  agent: assistant\n  groups:\n    policy: open\n" + extra
}

// plain is what a person reads of a MarkdownV2 text (the fake refused
// any text it could not parse, so this never fails on a message made).
func plain(s string) string {
	p, _, err := telegramfake.ParseMarkdownV2(s)
	if err != nil {
		return s // sent plain
	}
	return p
}

func equals(want string) func(string) bool { return func(s string) bool { return s == want } }

// A stranger gets a pairing code and nothing else; once approved, their
// message is answered by streamed edits ending in the model's reply; a
// group message without a mention is ignored and one with it answered;
// /reset starts over; a 429 storm delivers the reply once; a dropped poll
// loses nothing; the token is nowhere.
func TestTelegramConnector(t *testing.T) {
	r, _ := tgRig(t)
	r.serve(t, false)
	r.put(t, tgRow(r.api, ""))

	// A stranger: a pairing code, nothing else.
	r.w.SendAsUser("42", "42", "hello")
	pm := r.said(t, "42", "the pairing code", plain, func(s string) bool { return strings.Contains(s, "agentd pairing approve") })
	code := pairingCode(t, plain(pm.Text()))
	if ms := r.w.Messages("42"); len(ms) != 1 {
		t.Fatalf("a stranger got %d messages: %+v", len(ms), ms)
	}
	r.approve(t, code)

	// Approved: a first message is answered; then a story streams by
	// edits and ends in the script's reply.
	r.w.SendAsUser("42", "42", "hi")
	r.said(t, "42", "the first reply", plain, equals("You said: hi"))
	r.w.SendAsUser("42", "42", "tell me a story")
	story := "Once upon a time there was a small daemon that answered every message it got, and it lived happily ever after."
	m := r.said(t, "42", "the story", plain, equals(story))
	if m.Edits() < 1 {
		t.Errorf("the story came in one piece, not streamed: %+v", m.Versions)
	}
	for _, v := range m.Versions {
		if !strings.HasPrefix(story, strings.TrimRight(plain(v.Text), "…. ")) && plain(v.Text) != story {
			t.Errorf("a streamed version %q is no prefix of the reply", plain(v.Text))
		}
	}

	// A group: without a mention nothing; with one, an answer.
	r.w.SendAsUser("-100777", "43", "lunch anyone?")
	r.w.SendAsUser("-100777", "43", "@agentd_bot ping")
	r.said(t, "-100777", "the group's answer", plain, func(s string) bool { return strings.HasSuffix(s, "ping") })
	for _, gm := range r.w.Messages("-100777") {
		if strings.Contains(plain(gm.Text()), "lunch") {
			t.Errorf("a group message without a mention was answered: %q", gm.Text())
		}
	}

	// /reset.
	r.w.SendAsUser("42", "42", "/reset")
	r.said(t, "42", "the reset's answer", plain, func(s string) bool { return strings.HasPrefix(s, "Started over") })

	// A 429 storm on sends and edits: the reply comes once.
	r.w.Fail("sendMessage", 3, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	r.w.Fail("editMessageText", 3, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	r.w.SendAsUser("42", "42", "storm one")
	r.said(t, "42", "the reply after the storm", plain, equals("You said: storm one"))

	// A dropped poll: nothing lost.
	r.w.Drop()
	r.w.SendAsUser("42", "42", "after the drop")
	r.said(t, "42", "the reply after a drop", plain, equals("You said: after the drop"))

	// Each reply once; twice only when the Drop met a create's answer on
	// its way (Telegram has no nonce): then marked in doubt in the log.
	counts := map[string]int{}
	for _, m := range r.w.Messages("42") {
		counts[plain(m.Text())]++
	}
	r.d.stop(t)
	doubts := inDoubts(t, r.dir, "tg", "42")
	for text, n := range counts {
		if n > 1 && n-1 > doubts {
			t.Errorf("%q was sent %d times, with %d replies in doubt", text, n, doubts)
		}
	}
	r.noSecret(t)
}

// inDoubts counts the delivery events in_doubt in the session of a
// connector's chat (agentd stopped).
func inDoubts(t *testing.T, dir, connector, chat string) int {
	t.Helper()
	st := openDataStore(t, dir)
	defer st.(interface{ Close() error }).Close()
	convs, err := st.(store.ConnectorStore).Conversations(t.Context(), connector)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range convs {
		if c.Chat != chat {
			continue
		}
		evs, err := st.Events(t.Context(), c.SessionID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			var d event.DeliveryData
			if e.Kind == event.Delivery && e.Decode(&d) == nil && d.Op == event.DeliveryInDoubt {
				n++
			}
		}
	}
	return n
}

// Webhook mode: agentd sets its public URL with the secret, Telegram's
// posts come through the gateway's public route, and a post without the
// secret is refused.
func TestTelegramWebhook(t *testing.T) {
	r, fake := tgRig(t)
	r.serve(t, true)
	public := "http://" + r.addr + "/connectors/tg/webhook"
	r.put(t, tgRow(r.api, "  mode: webhook\n  public_url: "+public+"\n  dm_policy: open\n"))
	r.wait(t, "the webhook set", func() bool { u, _ := fake.Webhook(); return u == public })
	if _, ok := reflect.TypeFor[gateway.Options]().FieldByName("Connectors"); !ok {
		t.Skip("this gateway has no connectors yet: no webhook route")
	}
	r.w.SendAsUser("42", "42", "via the webhook")
	r.said(t, "42", "the reply", plain, equals("You said: via the webhook"))

	resp, err := httpPost(public, `{"update_id":1,"message":{"message_id":1,"from":{"id":42,"first_name":"Eve"},"chat":{"id":42,"type":"private"},"date":1,"text":"forged"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp != 401 {
		t.Errorf("a post without the secret: %d", resp)
	}
	r.d.stop(t)
	r.noSecret(t)
}

// agentd fakechat telegram: the fake Bot API and its control API, as
// docs/connectors.md's "try it without a bot" uses them.
func TestFakechatTelegram(t *testing.T) {
	addr := "127.0.0.1:" + itoa(int64(freePort(t)))
	cmd := exec.Command(agentdBin, "fakechat", "telegram", "--addr", addr)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	waitFor(t, func() bool { return strings.Contains(out.String(), "listening on") })
	base := "http://" + addr
	if code, err := httpPost(base+"/_fake/send", `{"chat":"42","user":"42","name":"Alice","text":"hello"}`); err != nil || code != 200 {
		t.Fatalf("send: %d %v\n%s", code, err, out)
	}
	token := regexp.MustCompile(`token:\s+(\S+)`).FindStringSubmatch(out.String())
	if token == nil {
		t.Fatalf("no token in %q", out)
	}
	resp, err := http.Post(base+"/bot"+token[1]+"/getUpdates", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"text":"hello"`) || !strings.Contains(string(body), `"type":"private"`) {
		t.Fatalf("getUpdates: %s", body)
	}
	resp, err = http.Post(base+"/bot"+token[1]+"/sendMessage", "application/json", strings.NewReader(`{"chat_id":42,"text":"hi Alice"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get(base + "/_fake/messages?chat=42")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"Text":"hi Alice"`) {
		t.Fatalf("messages: %s", body)
	}
	if r := run(t, dataDir(t, nil), "fakechat", "irc"); r.code == 0 {
		t.Fatalf("an unknown platform: %+v", r)
	}
}
