package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/slack/slackfake"
)

// The Slack app's credentials in these tests: each is in the daemon's
// environment only, and in no output, file or event.
const (
	slBotToken = "xoxb-2000-e2e-secret-bot-token"
	slAppToken = "xapp-1-A2000-e2e-secret-app-token"
	slSecret   = "e2e-secret-signing-secret-5f3a"
)

// slRig is a Slack connector's world (connectors_harness_test.go): the
// fake Slack with Ada (U1, DM DU1), Bob (U2) and a channel C1, the app's
// three secrets in the daemon's environment.
func slRig(t *testing.T) (*connRig, *slackfake.Server) {
	t.Helper()
	w := chatfake.New(nil)
	sl := slackfake.New(&slackfake.Options{World: w, BotToken: slBotToken, AppToken: slAppToken, SigningSecret: slSecret, RetryEvery: 200 * time.Millisecond})
	t.Cleanup(sl.Close)
	sl.AddDM("U1", "Ada")
	w.AddUser(chatfake.User{ID: "U2", Name: "Bob"})
	sl.AddChannel("C1", "team")
	r := newConnRig(t, w, sl, "SL_TOKEN", slBotToken)
	sl.SetBaseURL(r.api)
	r.env = append(r.env, "SL_APP_TOKEN="+slAppToken, "SL_SIGNING="+slSecret)
	return r, sl
}

// slRow is the connector's row, with more spec lines (indented 2).
func slRow(api, extra string) string {
	return "type: integration\nname: sl\nspec:\n  platform: slack\n  token_env: SL_TOKEN\n  app_token_env: SL_APP_TOKEN\n  api_url: " + api +
		"/api\n  agent: assistant\n  groups:\n    policy: open\n" + extra
}

// mrkdwn is what a person reads of a mrkdwn text whose only markup is
// Slack's three escapes.
func mrkdwn(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// noSecrets is noSecret for each of secrets.
func noSecrets(t *testing.T, r *connRig, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		r.token = s
		r.noSecret(t)
	}
}

// A stranger gets a pairing code and nothing else; once approved, their
// DM is answered by one message edited in place with chat.update; in a
// channel a message without a mention is ignored, a mention is answered in
// its thread, and a reply in that thread needs no mention; a 429 storm
// delivers the reply once; a dropped Socket Mode link and a refresh lose
// nothing; no secret is anywhere.
func TestSlackConnector(t *testing.T) {
	r, sl := slRig(t)
	r.serve(t, false)
	r.put(t, slRow(r.api, ""))

	// A stranger: a pairing code, nothing else.
	r.w.SendAsUser("DU1", "U1", "hello")
	pm := r.said(t, "DU1", "the pairing code", mrkdwn, func(s string) bool { return strings.Contains(s, "agentd pairing approve") })
	if ms := r.w.Messages("DU1"); len(ms) != 1 {
		t.Fatalf("a stranger got %d messages: %+v", len(ms), ms)
	}
	r.approve(t, pairingCode(t, mrkdwn(pm.Text())))

	// Approved: a first message makes the session (its turn is not
	// streamed: the session did not exist before it); then a story streams
	// by chat.update and ends in the reply.
	r.w.SendAsUser("DU1", "U1", "hi")
	r.said(t, "DU1", "the first reply", mrkdwn, equals("You said: hi"))
	r.w.SendAsUser("DU1", "U1", "tell me a story")
	story := "Once upon a time there was a small daemon that answered every message it got, and it lived happily ever after."
	m := r.said(t, "DU1", "the story", mrkdwn, equals(story))
	if m.Edits() < 1 || r.w.Count("chat.update") < 1 {
		t.Errorf("the story came in one piece, not streamed: %+v", m.Versions)
	}
	for _, v := range m.Versions {
		if s := mrkdwn(v.Text); !strings.HasPrefix(story, strings.TrimRight(s, "…. ")) && s != story {
			t.Errorf("a streamed version %q is no prefix of the reply", s)
		}
	}
	if m.Thread != "" {
		t.Errorf("a DM reply went into thread %s", m.Thread)
	}

	// A channel: without a mention nothing; with one, an answer in the
	// message's thread; a reply in that thread needs no mention.
	r.w.SendAsUser("C1", "U2", "lunch anyone?")
	ping := r.w.SendAsUser("C1", "U2", "<@UBOT> ping")
	pong := r.said(t, "C1", "the channel's answer", mrkdwn, func(s string) bool { return strings.HasSuffix(s, "ping") })
	if pong.Thread != slackfake.PostTS(ping) {
		t.Errorf("the answer is in thread %q, want the mention's %q", pong.Thread, slackfake.PostTS(ping))
	}
	r.w.Send(chatfake.Post{Chat: "C1", Thread: slackfake.PostTS(ping), User: "U2", Text: "and pong?"})
	r.said(t, "C1", "the thread's answer", mrkdwn, func(s string) bool { return strings.HasSuffix(s, "and pong?") })
	for _, gm := range r.w.Messages("C1") {
		if strings.Contains(gm.Text(), "lunch") {
			t.Errorf("a channel message without a mention was answered: %q", gm.Text())
		}
	}

	// A 429 storm on creates and edits: the reply comes once.
	r.w.Fail("chat.postMessage", 3, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	r.w.Fail("chat.update", 3, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	r.w.SendAsUser("DU1", "U1", "storm one")
	r.said(t, "DU1", "the reply after the storm", mrkdwn, equals("You said: storm one"))

	// The Socket Mode link drops: nothing lost.
	opens := r.w.Count("apps.connections.open")
	r.w.Drop()
	r.w.SendAsUser("DU1", "U1", "after the drop")
	r.said(t, "DU1", "the reply after a drop", mrkdwn, equals("You said: after the drop"))
	if r.w.Count("apps.connections.open") <= opens {
		t.Error("no new Socket Mode link after the drop")
	}

	// Slack asks for a refresh: a new link first, nothing lost.
	opens = r.w.Count("apps.connections.open")
	sl.Disconnect("refresh_requested")
	r.wait(t, "the refreshed link", func() bool { return r.w.Count("apps.connections.open") > opens })
	r.w.SendAsUser("DU1", "U1", "after the refresh")
	r.said(t, "DU1", "the reply after a refresh", mrkdwn, equals("You said: after the refresh"))

	// Each reply once; every envelope acknowledged.
	counts := map[string]int{}
	for _, m := range r.w.Messages("") {
		counts[m.Chat+": "+mrkdwn(m.Text())]++
	}
	for text, n := range counts {
		if n > 1 {
			t.Errorf("%q was sent %d times", text, n)
		}
	}
	r.wait(t, "every envelope acknowledged", func() bool { return sl.Unacked() == 0 })
	r.d.stop(t)
	noSecrets(t, r, slBotToken, slAppToken)
}

// Events mode: Slack's posts come through the gateway's public route,
// signed; the fake checks the request URL with a challenge first, as Slack
// does; a post unsigned, signed with another secret or replayed is refused
// and answered nowhere.
func TestSlackEvents(t *testing.T) {
	r, sl := slRig(t)
	r.serve(t, true)
	public := "http://" + r.addr + "/connectors/sl/webhook"
	r.put(t, slRow(r.api, "  mode: events\n  signing_secret_env: SL_SIGNING\n  public_url: "+public+"\n  dm_policy: open\n"))
	r.wait(t, "the connector up", func() bool { return r.w.Count("auth.test") > 0 })
	// The connector answers an unsigned post itself; the gateway's own
	// refusal means it routes no connector webhooks yet.
	if code, body, err := slackPost(public, `{}`, "", ""); err != nil || code != http.StatusUnauthorized || !strings.Contains(body, "unsigned request") {
		t.Skipf("the gateway routes no connector webhook: %d %s %v", code, body, err)
	}
	if err := sl.SetEventsURL(t.Context(), public); err != nil {
		t.Fatal(err)
	}
	r.w.SendAsUser("DU1", "U1", "via events")
	r.said(t, "DU1", "the reply", mrkdwn, equals("You said: via events"))

	forged := `{"type":"event_callback","team_id":"T0001","event":{"type":"message","channel":"DU1","channel_type":"im","user":"U1","text":"forged","ts":"1700000000.000001"}}`
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	for name, h := range map[string][2]string{
		"unsigned":     {"", ""},
		"other secret": {now, slackfake.Sign("not-the-secret", now, []byte(forged))},
		"replayed":     {old, slackfake.Sign(slSecret, old, []byte(forged))},
	} {
		code, _, err := slackPost(public, forged, h[0], h[1])
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusUnauthorized {
			t.Errorf("a post %s: %d, want 401", name, code)
		}
	}
	for _, m := range r.w.Messages("") {
		if strings.Contains(m.Text(), "forged") {
			t.Errorf("a forged post was answered: %q", m.Text())
		}
	}
	r.d.stop(t)
	noSecrets(t, r, slBotToken, slSecret)
}

// slackPost posts body to url with Slack's signature headers (none when
// "") and returns the answer's status and body.
func slackPost(url, body, ts, sig string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if ts != "" {
		req.Header.Set("X-Slack-Request-Timestamp", ts)
	}
	if sig != "" {
		req.Header.Set("X-Slack-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	ans, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(ans), err
}

// agentd fakechat slack: the fake Slack and its control API: a person's
// DM arrives over Socket Mode, and the bot's answer is in the messages.
func TestFakechatSlack(t *testing.T) {
	addr := "127.0.0.1:" + itoa(int64(freePort(t)))
	cmd := exec.Command(agentdBin, "fakechat", "slack", "--addr", addr)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	waitFor(t, func() bool { return strings.Contains(out.String(), "signing secret:") })
	base := "http://" + addr
	field := func(name string) string {
		m := regexp.MustCompile(name + `:\s+(\S+)`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no %s in %q", name, out)
		}
		return m[1]
	}
	api, bot, app := field("api_url"), field("token"), field("app token")
	call := func(method, token, body string) map[string]any {
		req, _ := http.NewRequest("POST", api+"/"+method, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a["ok"] != true {
			t.Fatalf("%s: %v %v", method, a, err)
		}
		return a
	}
	link := call("apps.connections.open", app, "")["url"].(string)
	c, _, err := websocket.Dial(t.Context(), link, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if code, err := httpPost(base+"/_fake/send", `{"chat":"DU1","user":"U1","kind":"dm","name":"Ada","text":"hello"}`); err != nil || code != 200 {
		t.Fatalf("send: %d %v\n%s", code, err, out)
	}
	var got []string
	for len(got) < 2 {
		_, data, err := c.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Type    string `json:"type"`
			Payload struct {
				Event struct{ Text, ChannelType string } `json:"event"`
			} `json:"payload"`
		}
		json.Unmarshal(data, &f)
		got = append(got, f.Type+" "+f.Payload.Event.Text)
	}
	if got[0] != "hello " || got[1] != "events_api hello" {
		t.Fatalf("frames = %q", got)
	}
	call("chat.postMessage", bot, `{"channel":"DU1","text":"hi Ada"}`)
	resp, err := http.Get(base + "/_fake/messages?chat=DU1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"Text":"hi Ada"`) {
		t.Fatalf("messages: %s", body)
	}
}
