package main

// The Slack connector through the binary: the fake Slack
// (connector/slack/slackfake) runs in the test process over a
// chatfake.World, `agentd serve` runs as a child with the app's secrets in
// its environment only, the connector's row is put with `agentd ext put`,
// and the test speaks as people through the World and waits on it (no
// sleeps).

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/slack/slackfake"
	"agentd/internal/gateway"
	"agentd/internal/store"
)

// The Slack app's credentials in these tests: each is in the daemon's
// environment only, and in no output, file or event.
const (
	slBotToken = "xoxb-2000-e2e-secret-bot-token"
	slAppToken = "xapp-1-A2000-e2e-secret-app-token"
	slSecret   = "e2e-secret-signing-secret-5f3a"
)

// slackScript is the agent's fakellm script: a story streams slowly
// enough to be seen in edits; anything else is echoed.
const slackScript = `match (?i)story
say Once upon a time there was a small daemon that answered every message it got, and it lived happily ever after.
chunks 8
gap 400ms

match *
say You said: {{last_user}}
`

const slackStory = "Once upon a time there was a small daemon that answered every message it got, and it lived happily ever after."

// slackRig is a Slack connector's world: the fake Slack with Ada (U1, DM
// DU1), Bob (U2) and a channel C1, a data directory with an agent
// "assistant" (type user) on fakellm, and the daemon.
type slackRig struct {
	fake *slackfake.Server
	w    *chatfake.World
	api  string // the fake's URL
	dir  string
	d    *daemon
	addr string // the daemon's TCP address ("" the socket only)
}

func newSlackRig(t *testing.T) *slackRig {
	t.Helper()
	model := fake(t, slackScript)
	w := chatfake.New(nil)
	sl := slackfake.New(&slackfake.Options{World: w, BotToken: slBotToken, AppToken: slAppToken, SigningSecret: slSecret, RetryEvery: 200 * time.Millisecond})
	t.Cleanup(sl.Close)
	sl.AddDM("U1", "Ada")
	w.AddUser(chatfake.User{ID: "U2", Name: "Bob"})
	sl.AddChannel("C1", "team")
	srv := httptest.NewUnstartedServer(sl)
	srv.Config.ConnState = w.ConnState
	srv.Start()
	t.Cleanup(srv.Close)
	sl.SetBaseURL(srv.URL)
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(model, "type: user\n"),
		"agentd.yaml":           "connectors:\n  allow_networks: [\"127.0.0.1/32\"]\n",
	})
	return &slackRig{fake: sl, w: w, api: srv.URL, dir: dir}
}

// serve starts the daemon (on TCP too when listen), the secrets in its
// environment.
func (r *slackRig) serve(t *testing.T, listen bool) {
	t.Helper()
	flags := []string{"--listen", "off"}
	if listen {
		r.addr = "127.0.0.1:" + itoa(int64(freePort(t)))
		flags = []string{"--listen", r.addr}
	}
	r.d = serveArgs(t, r.dir, flags, "SL_TOKEN="+slBotToken, "SL_APP_TOKEN="+slAppToken, "SL_SIGNING="+slSecret)
}

// put puts the connector's row, with more spec lines (indented 2).
func (r *slackRig) put(t *testing.T, extra string) {
	t.Helper()
	row := "type: integration\nname: sl\nspec:\n  platform: slack\n  token_env: SL_TOKEN\n  app_token_env: SL_APP_TOKEN\n  api_url: " + r.api +
		"/api\n  agent: assistant\n  groups:\n    policy: open\n" + extra
	if got := runInput(t, r.dir, nil, row, "ext", "put", "-"); got.code != 0 {
		t.Fatalf("ext put: exit %d\n%s%s\n%s", got.code, got.stdout, got.stderr, row)
	}
}

// wait waits until pred holds of the World, at most a minute.
func (r *slackRig) wait(t *testing.T, what string, pred func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.w.Wait(ctx, pred); err != nil {
		var out string
		if r.d != nil {
			out = r.d.out.String()
		}
		t.Fatalf("waited for %s: %v\nthe bot's messages: %+v\nthe daemon:\n%s", what, err, r.w.Messages(""), out)
	}
}

// said waits for a bot message in channel whose text, as a person reads
// it, satisfies ok, and returns it.
func (r *slackRig) said(t *testing.T, channel, what string, ok func(string) bool) chatfake.Message {
	t.Helper()
	var got chatfake.Message
	r.wait(t, what, func() bool {
		for _, m := range r.w.Messages(channel) {
			if ok(mrkdwn(m.Text())) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// mrkdwn is what a person reads of a mrkdwn text whose only markup is
// Slack's three escapes.
func mrkdwn(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

func is(want string) func(string) bool { return func(s string) bool { return s == want } }

var slackCodeRE = regexp.MustCompile(`\b[0-9A-Z]{4}-[0-9A-Z]{4}\b`)

// approve approves a pairing code. It goes through the daemon's store
// (so the person is not told "You can talk to me now."): the `agentd
// pairing` command comes with the connectors' interfaces.
func (r *slackRig) approve(t *testing.T, text string) {
	t.Helper()
	code := slackCodeRE.FindString(text)
	if code == "" {
		t.Fatalf("no pairing code in %q", text)
	}
	cs, ok := openDataStore(t, r.dir).(store.ConnectorStore)
	if !ok {
		t.Fatal("the store keeps no pairings")
	}
	if _, err := cs.DecidePairing(t.Context(), connector.NormalCode(code), store.PairApproved, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// noSecret fails if a secret is in the daemon's output, in any file of the
// data directory, or in any session's log.
func (r *slackRig) noSecret(t *testing.T, secrets ...string) {
	t.Helper()
	var logs strings.Builder
	var list []gateway.SessionInfo
	decodeOut(t, okRun(t, r.dir, "sessions", "--json"), &list)
	for _, s := range list {
		l := run(t, r.dir, "log", "--json", s.Address)
		logs.WriteString(l.stdout + l.stderr)
	}
	for _, s := range secrets {
		if strings.Contains(r.d.out.String(), s) {
			t.Errorf("a secret is in the daemon's output")
		}
		if strings.Contains(logs.String(), s) {
			t.Errorf("a secret is in a session's log")
		}
		filepath.WalkDir(r.dir, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Type()&os.ModeSocket != 0 {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), s) {
				t.Errorf("a secret is in %s", p)
			}
			return nil
		})
	}
}

// A stranger gets a pairing code and nothing else; once approved, their
// DM is answered by one message edited in place with chat.update; in a
// channel a message without a mention is ignored, a mention is answered in
// its thread, and a reply in that thread needs no mention; a 429 storm
// delivers the reply once; a dropped Socket Mode link and a refresh lose
// nothing; no secret is anywhere.
func TestSlackConnector(t *testing.T) {
	r := newSlackRig(t)
	r.serve(t, false)
	r.put(t, "")

	// A stranger: a pairing code, nothing else.
	r.w.SendAsUser("DU1", "U1", "hello")
	pm := r.said(t, "DU1", "the pairing code", func(s string) bool { return strings.Contains(s, "agentd pairing approve") })
	if ms := r.w.Messages("DU1"); len(ms) != 1 {
		t.Fatalf("a stranger got %d messages: %+v", len(ms), ms)
	}
	r.approve(t, mrkdwn(pm.Text()))

	// Approved: a first message makes the session (its turn is not
	// streamed: the session did not exist before it); then a story streams
	// by chat.update and ends in the reply.
	r.w.SendAsUser("DU1", "U1", "hi")
	r.said(t, "DU1", "the first reply", is("You said: hi"))
	r.w.SendAsUser("DU1", "U1", "tell me a story")
	m := r.said(t, "DU1", "the story", is(slackStory))
	if m.Edits() < 1 || r.w.Count("chat.update") < 1 {
		t.Errorf("the story came in one piece, not streamed: %+v", m.Versions)
	}
	for _, v := range m.Versions {
		if s := mrkdwn(v.Text); !strings.HasPrefix(slackStory, strings.TrimRight(s, "…. ")) && s != slackStory {
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
	pong := r.said(t, "C1", "the channel's answer", func(s string) bool { return strings.HasSuffix(s, "ping") })
	if pong.Thread != slackfake.PostTS(ping) {
		t.Errorf("the answer is in thread %q, want the mention's %q", pong.Thread, slackfake.PostTS(ping))
	}
	r.w.Send(chatfake.Post{Chat: "C1", Thread: slackfake.PostTS(ping), User: "U2", Text: "and pong?"})
	r.said(t, "C1", "the thread's answer", func(s string) bool { return strings.HasSuffix(s, "and pong?") })
	for _, gm := range r.w.Messages("C1") {
		if strings.Contains(gm.Text(), "lunch") {
			t.Errorf("a channel message without a mention was answered: %q", gm.Text())
		}
	}

	// A 429 storm on creates and edits: the reply comes once.
	r.w.Fail("chat.postMessage", 3, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	r.w.Fail("chat.update", 3, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	r.w.SendAsUser("DU1", "U1", "storm one")
	r.said(t, "DU1", "the reply after the storm", is("You said: storm one"))

	// The Socket Mode link drops: nothing lost.
	opens := r.w.Count("apps.connections.open")
	r.w.Drop()
	r.w.SendAsUser("DU1", "U1", "after the drop")
	r.said(t, "DU1", "the reply after a drop", is("You said: after the drop"))
	if r.w.Count("apps.connections.open") <= opens {
		t.Error("no new Socket Mode link after the drop")
	}

	// Slack asks for a refresh: a new link first, nothing lost.
	opens = r.w.Count("apps.connections.open")
	r.fake.Disconnect("refresh_requested")
	r.wait(t, "the refreshed link", func() bool { return r.w.Count("apps.connections.open") > opens })
	r.w.SendAsUser("DU1", "U1", "after the refresh")
	r.said(t, "DU1", "the reply after a refresh", is("You said: after the refresh"))

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
	r.wait(t, "every envelope acknowledged", func() bool { return r.fake.Unacked() == 0 })
	r.d.stop(t)
	r.noSecret(t, slBotToken, slAppToken)
}

// Events mode: Slack's posts come through the gateway's public route,
// signed; the fake checks the request URL with a challenge first, as Slack
// does; a post unsigned, signed with another secret or replayed is refused
// and answered nowhere.
func TestSlackEvents(t *testing.T) {
	r := newSlackRig(t)
	r.serve(t, true)
	public := "http://" + r.addr + "/connectors/sl/webhook"
	r.put(t, "  mode: events\n  signing_secret_env: SL_SIGNING\n  public_url: "+public+"\n  dm_policy: open\n")
	r.wait(t, "the connector up", func() bool { return r.w.Count("auth.test") > 0 })
	// The connector answers an unsigned post itself; the gateway's own
	// refusal means it routes no connector webhooks yet.
	if code, body, err := slackPost(public, `{}`, "", ""); err != nil || code != http.StatusUnauthorized || !strings.Contains(body, "unsigned request") {
		t.Skipf("the gateway routes no connector webhook: %d %s %v", code, body, err)
	}
	if err := r.fake.SetEventsURL(t.Context(), public); err != nil {
		t.Fatal(err)
	}
	r.w.SendAsUser("DU1", "U1", "via events")
	r.said(t, "DU1", "the reply", is("You said: via events"))

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
	r.noSecret(t, slBotToken, slSecret)
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
