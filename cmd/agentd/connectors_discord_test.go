package main

// The Discord connector through the binary: the fake Discord runs in the
// test process over a chatfake.World, `agentd serve` runs as a child with
// the bot token in its environment only, the connector's row is put with
// `agentd ext put`, and the test speaks as people through the World and
// waits on it (no sleeps).

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/discord/discordfake"
)

const dcToken = "MTAwMDAwMDAwMDAw.e2e-discord.secret-token_value"

// dcScript is the fakellm script of the connector's agent: a story
// streams slowly enough to be seen in edits; anything else is echoed.
const dcScript = `match (?i)story
say Once upon a time there was a small daemon that answered every message it got, and it lived happily ever after.
chunks 8
gap 400ms

match *
say You said: {{last_user}}
`

// dcWorld is a Discord connector's world: the fake with Alice (42, DM
// channel 4200), Bob (43, DM channel 4300), a guild channel (7700) and a
// thread in it (7701); a data directory with an agent "assistant" (type
// user) on fakellm; the daemon.
type dcWorld struct {
	w    *chatfake.World
	fake *discordfake.Server
	api  string // the fake's base URL
	dir  string
	d    *daemon
}

func newDCWorld(t *testing.T, o discordfake.Options) *dcWorld {
	t.Helper()
	w := chatfake.New(nil)
	w.AddUser(chatfake.User{ID: "42", Name: "Alice", Username: "alice"})
	w.AddUser(chatfake.User{ID: "43", Name: "Bob", Username: "bob"})
	o.World, o.Token = w, dcToken
	dc := discordfake.New(&o)
	t.Cleanup(dc.Close)
	dc.AddChannel("4200", "")
	dc.AddChannel("4300", "")
	dc.AddChannel("7700", "9000")
	dc.AddThread("7701", "7700")
	srv := httptest.NewUnstartedServer(dc)
	srv.Config.ConnState = w.ConnState // World.Drop drops every connection
	srv.Start()
	t.Cleanup(srv.Close)
	dc.SetBase(srv.URL)
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(fake(t, dcScript), "type: user\n"),
		"agentd.yaml":           "connectors:\n  allow_networks: [\"127.0.0.1/32\"]\n",
	})
	return &dcWorld{w: w, fake: dc, api: srv.URL, dir: dir}
}

// serve starts the daemon with the token in its environment and puts the
// connector's row, with more spec lines (indented 2).
func (r *dcWorld) serve(t *testing.T, extra string) {
	t.Helper()
	r.d = serveArgs(t, r.dir, []string{"--listen", "off"}, "DC_TOKEN="+dcToken)
	row := "type: integration\nname: dc\nspec:\n  platform: discord\n  token_env: DC_TOKEN\n  api_url: " + r.fake.APIURL() +
		"\n  agent: assistant\n  groups:\n    policy: open\n" + extra
	if got := runInput(t, r.dir, nil, row, "ext", "put", "-"); got.code != 0 {
		t.Fatalf("ext put: exit %d\n%s%s\n%s", got.code, got.stdout, got.stderr, row)
	}
}

// wait waits until pred holds of the World, at most a minute.
func (r *dcWorld) wait(t *testing.T, what string, pred func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.w.Wait(ctx, pred); err != nil {
		t.Fatalf("waited for %s: %v\nthe bot's messages: %+v\ncalls: %v\nthe daemon:\n%s", what, err, r.w.Messages(""), r.w.Counts(), r.d.out.String())
	}
}

// said waits for a bot message in channel whose current text satisfies
// ok, and returns it.
func (r *dcWorld) said(t *testing.T, channel, what string, ok func(string) bool) chatfake.Message {
	t.Helper()
	var got chatfake.Message
	r.wait(t, what, func() bool {
		for _, m := range r.w.Messages(channel) {
			if ok(m.Text()) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// noSecret fails if the token is in the daemon's output, in a file of the
// data directory or in a session's log.
func (r *dcWorld) noSecret(t *testing.T) {
	t.Helper()
	if strings.Contains(r.d.out.String(), dcToken) {
		t.Error("the token is in the daemon's output")
	}
	filepath.WalkDir(r.dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Type()&os.ModeSocket != 0 {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), dcToken) {
			t.Errorf("the token is in %s", p)
		}
		return nil
	})
	out := run(t, r.dir, "sessions", "--json")
	for _, addr := range regexp.MustCompile(`"address":\s*"([^"]+)"`).FindAllStringSubmatch(out.stdout, -1) {
		if l := run(t, r.dir, "log", "--json", addr[1]); strings.Contains(l.stdout, dcToken) {
			t.Errorf("the token is in the log of %s", addr[1])
		}
	}
}

func is(want string) func(string) bool { return func(s string) bool { return s == want } }

// A stranger gets a pairing code and nothing else; an allowed person's
// story streams by edits and ends in the model's reply, through a gateway
// drop mid-stream that resumes and loses nothing; a guild message without
// a mention is ignored and one with it answered; a thread is a chat of its
// own; a 429 storm delivers each reply once; no reply pings anyone; the
// token is nowhere.
func TestDiscordConnector(t *testing.T) {
	r := newDCWorld(t, discordfake.Options{})
	r.serve(t, "  allow: [\"42\"]\n")
	r.wait(t, "the gateway connected", r.fake.Connected)
	bot := "<@" + r.fake.Bot().ID + ">"

	// A stranger (pairing is the default): a code, nothing else.
	r.w.SendAsUser("4300", "43", "hello")
	pm := r.said(t, "4300", "the pairing code", func(s string) bool { return strings.Contains(s, "agentd pairing approve") })
	if !regexp.MustCompile(`\b[0-9A-Z]{4}-[0-9A-Z]{4}\b`).MatchString(pm.Text()) {
		t.Errorf("no pairing code in %q", pm.Text())
	}

	// Alice (allowed): her first message is answered; then a story
	// streams by edits; the gateway drops while it streams, and what she
	// sends meanwhile is replayed by the RESUME.
	r.w.SendAsUser("4200", "42", "hi")
	r.said(t, "4200", "the first answer", is("You said: hi"))
	r.w.SendAsUser("4200", "42", "tell me a story")
	story := "Once upon a time there was a small daemon that answered every message it got, and it lived happily ever after."
	r.said(t, "4200", "the story's first part", func(s string) bool { return strings.HasPrefix(s, "Once") })
	resumes := r.fake.Resumes()
	r.fake.Drop()
	r.w.SendAsUser("4200", "42", "after the drop")
	m := r.said(t, "4200", "the story", is(story))
	if m.Edits() < 1 {
		t.Errorf("the story came in one piece, not streamed: %+v", m.Versions)
	}
	for _, v := range m.Versions {
		if !strings.HasPrefix(story, strings.TrimRight(v.Text, "…. ")) {
			t.Errorf("a streamed version %q is no prefix of the reply", v.Text)
		}
	}
	r.said(t, "4200", "the reply after the drop", is("You said: after the drop"))
	if r.fake.Resumes() <= resumes || r.fake.Identifies() != 1 {
		t.Errorf("resumes %d (%d before the drop), identifies %d: the drop did not resume", r.fake.Resumes(), resumes, r.fake.Identifies())
	}

	// A guild channel: without a mention nothing; with one, an answer; a
	// thread is a chat of its own.
	r.w.SendAsUser("7700", "43", "lunch anyone?")
	r.w.SendAsUser("7700", "43", bot+" ping")
	r.said(t, "7700", "the channel's answer", func(s string) bool { return strings.HasSuffix(s, "ping") })
	r.w.SendAsUser("7701", "43", bot+" in the thread")
	r.said(t, "7701", "the thread's answer", func(s string) bool { return strings.HasSuffix(s, "in the thread") })
	for _, gm := range r.w.Messages("7700") {
		if strings.Contains(gm.Text(), "lunch") || strings.Contains(gm.Text(), "thread") {
			t.Errorf("the channel got %q", gm.Text())
		}
	}

	// A 429 storm on creates and edits: the reply comes once.
	r.w.Fail("POST /channels/{id}/messages", 3, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	r.w.Fail("PATCH /channels/{id}/messages/{id}", 3, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	r.w.SendAsUser("4200", "42", "storm one")
	r.said(t, "4200", "the reply after the storm", is("You said: storm one"))

	counts := map[string]int{}
	for _, m := range r.w.Messages("") {
		counts[m.Chat+": "+m.Text()]++
		if m.Meta != `{"parse":[]}` {
			t.Errorf("%q may ping: allowed_mentions %s", m.Text(), m.Meta)
		}
	}
	for text, n := range counts {
		if n > 1 {
			t.Errorf("%q was sent %d times", text, n)
		}
	}
	r.d.stop(t)
	r.noSecret(t)
}

// The Message Content intent off in the Developer Portal: the connector
// stops and says what to turn on, without the token.
func TestDiscordIntentMissing(t *testing.T) {
	r := newDCWorld(t, discordfake.Options{NoMessageContent: true})
	r.serve(t, "")
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(r.d.out.String(), "enable the Message Content intent in the Developer Portal") {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never named the intent:\n%s", r.d.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.d.stop(t)
	r.noSecret(t)
}

// agentd fakechat discord serves a fake Discord: its /gateway/bot names
// its gateway, and a person's message sent through the control API is in
// the channel's messages.
func TestFakechatDiscord(t *testing.T) {
	addr := "127.0.0.1:" + itoa(int64(freePort(t)))
	cmd := exec.Command(agentdBin, "fakechat", "discord", "--addr", addr)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + addr
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bot fake-discord-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "listening on") {
		if time.Now().After(deadline) {
			t.Fatalf("fakechat discord did not start:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code, body := get("/api/v10/gateway/bot"); code != 200 || !strings.Contains(body, `"url":"ws://`+addr+`/gateway"`) {
		t.Errorf("/gateway/bot: %d %s", code, body)
	}
	if code, err := httpPostJSON(base+"/_fake/send", `{"chat":"42","user":"42","text":"hi from the control API"}`); err != nil || code != 200 {
		t.Fatalf("/_fake/send: %d %v", code, err)
	}
	if code, body := get("/api/v10/channels/42/messages"); code != 200 || !strings.Contains(body, "hi from the control API") {
		t.Errorf("the channel's messages: %d %s", code, body)
	}
	if !strings.Contains(out.String(), "fake-discord-token") {
		t.Errorf("fakechat discord does not say its token:\n%s", out.String())
	}
}

func httpPostJSON(url, body string) (int, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
