package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/discord/discordfake"
	"agentd/internal/connector/slack/slackfake"
	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
)

// The outbox kill test of the platforms whose create can be made once
// across a crash (connectors_kill_test.go has Telegram's, where it
// cannot): Discord resends with the same nonce and enforce_nonce, and
// the platform answers with the message it made; Slack finds the message
// by the nonce in its metadata before it sends again. So here no message
// may show twice, and no reply is ever in doubt.

// TestConnectorKillRestartDiscord is the kill test over the fake Discord.
func TestConnectorKillRestartDiscord(t *testing.T) {
	t.Parallel()
	w := chatfake.New(nil)
	dc := discordfake.New(&discordfake.Options{World: w, Token: dcToken})
	t.Cleanup(dc.Close)
	p := &killPlatform{
		name: "dc", w: w, fake: dc, env: []string{"DC_TOKEN=" + dcToken},
		create: discordCreate, edit: "PATCH /channels/{id}/messages/{id}",
		row: func(api string) string {
			dc.SetBase(api)
			return "platform: discord\n  token_env: DC_TOKEN\n  api_url: " + dc.APIURL() + "\n"
		},
		person: func(k int) (chat, user string) {
			chat, user = fmt.Sprint(5000+k), fmt.Sprint(6000+k)
			w.AddUser(chatfake.User{ID: user, Name: "Person " + user, Username: "p" + user})
			dc.AddChannel(chat, "")
			return chat, user
		},
		// A restarted agentd RESUMEs the session it saved (Discord replays
		// what the killed process never handled), or IDENTIFYs afresh when
		// it had none: a person writes once the daemon is READY or RESUMED.
		ready: func(before int) bool { return dc.Identifies()+dc.Resumes() > before && dc.Connected() },
		mark:  func() int { return dc.Identifies() + dc.Resumes() },
	}
	killNonceRounds(t, p)
}

// TestConnectorKillRestartSlack is the kill test over the fake Slack
// (Socket Mode: an event not acknowledged is sent again on the next link).
func TestConnectorKillRestartSlack(t *testing.T) {
	t.Parallel()
	w := chatfake.New(nil)
	sl := slackfake.New(&slackfake.Options{World: w, BotToken: slBotToken, AppToken: slAppToken,
		RedeliverAfter: 500 * time.Millisecond})
	t.Cleanup(sl.Close)
	p := &killPlatform{
		name: "sl", w: w, fake: sl, env: []string{"SL_TOKEN=" + slBotToken, "SL_APP_TOKEN=" + slAppToken},
		create: slackCreate, edit: "chat.update",
		row: func(api string) string {
			sl.SetBaseURL(api)
			return "platform: slack\n  token_env: SL_TOKEN\n  app_token_env: SL_APP_TOKEN\n  api_url: " + api + "/api\n"
		},
		person: func(k int) (chat, user string) {
			user = fmt.Sprint("U", 6000+k)
			return sl.AddDM(user, "Person "+user), user
		},
		ready: func(int) bool { return true }, // events wait for a link
		mark:  func() int { return 0 },
	}
	killNonceRounds(t, p)
}

// downtime is how long agentd stays down after some of the kills.
const downtime = 6 * time.Second

// killPlatform is what the kill test needs of one platform's fake.
type killPlatform struct {
	name   string // the connector's
	w      *chatfake.World
	fake   http.Handler
	env    []string   // the daemon's (the tokens)
	create createCall // the create of a message on the wire
	edit   string     // the World's method of an edit
	// row is the connector's spec lines after "platform:" (indented 2),
	// given the fake's URL.
	row func(api string) string
	// person adds round k's person and their DM.
	person func(k int) (chat, user string)
	// ready says whether a daemon started after mark said before can
	// receive.
	ready func(before int) bool
	mark  func() int
}

// discordCreate is Discord's POST /channels/{id}/messages.
var discordCreate = createCall{
	is: func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/messages") && strings.Contains(r.URL.Path, "/channels/")
	},
	made: func(status int, body []byte) (string, bool) {
		var m struct {
			ChannelID string `json:"channel_id"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &m) != nil || m.ChannelID == "" {
			return "", false
		}
		return m.ChannelID, true
	},
}

// slackCreate is Slack's chat.postMessage.
var slackCreate = createCall{
	is: func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/chat.postMessage") },
	made: func(_ int, body []byte) (string, bool) {
		var res struct {
			OK      bool   `json:"ok"`
			Channel string `json:"channel"`
		}
		if json.Unmarshal(body, &res) != nil || !res.OK {
			return "", false
		}
		return res.Channel, true
	},
}

// killNonceRounds kills agentd serve, round after round, while the fake
// holds its answer to a create it has made, while it holds an edit of a
// streamed reply, and at random moments; then starts it again, after a
// few seconds of downtime in some rounds. In each
// round a new person writes twice: a first message that makes the
// conversation (its reply made whole) and a second whose reply streams by
// edits. Counted in the fake at the end: every message has exactly one
// reply message, whose final text is its turn's reply, and the chat has no
// other message; no reply is in doubt; the store is intact, no message
// started two turns, and every outbox row is sent. AGENTD_KILLS sets the
// rounds (default 20).
func killNonceRounds(t *testing.T, p *killPlatform) {
	rounds := killCount(t, 20, 1, 6)
	hc := &heldCreates{next: p.fake, create: p.create}
	api := serveFake(t, hc, p.w)

	// The second message's reply streams for about two seconds: made
	// once it has 40 characters, then edited as the rest comes in.
	script := `match ^hi \d+$
say welcome {{last_user}}

match ^hello \d+$
say reply to {{last_user}} with some words to stream one two three four five six seven eight nine ten
chunks 10
gap 200ms
`
	welcome := func(k int) string { return fmt.Sprintf("welcome hi %d", k) }
	long := func(k int) string {
		return fmt.Sprintf("reply to hello %d with some words to stream one two three four five six seven eight nine ten", k)
	}
	dir := dataDir(t, map[string]string{
		"agentd.yaml":        "connectors:\n  allow_networks: [\"127.0.0.1/32\"]\n",
		"agents/helper.yaml": openaiAgent(fake(t, script), "type: user\nmemory:\n  recall: -1\n"),
		"extensions/integration/" + p.name + ".yaml": "type: integration\nname: " + p.name + "\nspec:\n  " + p.row(api) +
			"  agent: helper\n  dm_policy: open\n  stream:\n    every: 300ms\n",
	})
	start := func() *daemon {
		before := p.mark()
		d := serve(t, dir, p.env...)
		if !waitWorld(p.w, 30*time.Second, func() bool { return p.ready(before) }) {
			t.Fatalf("the connector did not connect\n%s", d.out.String())
		}
		return d
	}

	heldIn := map[string]int{} // chat → kills inside a create the fake had made
	var chats []string
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19))
	for k := range rounds {
		d := start()
		chat, user := p.person(k)
		chats = append(chats, chat)
		p.w.SendAsUser(chat, user, fmt.Sprint("hi ", k))
		if k%3 != 2 && !waitWorld(p.w, 30*time.Second, func() bool { return finals(p.w, chat, welcome(k)) > 0 }) {
			t.Fatalf("round %d: no welcome\n%s", k, d.out.String())
		}
		p.w.SendAsUser(chat, user, fmt.Sprint("hello ", k))
		switch k % 3 {
		case 0: // a create made, its answer not yet read
			held, release := hc.arm()
			select {
			case c := <-held:
				d.kill()
				heldIn[c]++
			case <-time.After(30 * time.Second):
				t.Logf("round %d: no create came to hold", k)
				d.kill()
			}
			release()
			if k%6 == 0 {
				// agentd stays down a while, as after a crash that waits
				// for its supervisor's restart delay: the made message is
				// older than what is done after the restart.
				time.Sleep(downtime)
			}
		case 1: // an edit in flight
			before := p.w.Count(p.edit)
			release := p.w.HoldNext(p.edit)
			if !waitWorld(p.w, 15*time.Second, func() bool { return p.w.Count(p.edit) > before }) {
				t.Logf("round %d: no edit came to hold; calls %v", k, p.w.Counts())
			}
			d.kill()
			release()
		default: // anywhere, the first message's turn included
			within := 2500
			if k%6 == 5 {
				within = 150 // about when the first message is taken in
			}
			time.Sleep(time.Duration(rng.IntN(within)) * time.Millisecond)
			d.kill()
		}
	}

	// A last, clean run delivers what is left: every turn has its row,
	// and each row is settled (what the fake shows is checked after).
	d := start()
	deadline := time.Now().Add(120 * time.Second)
	for {
		open, all := outboxCount(t, dir, p.name)
		if open == 0 && all == 2*conversations(t, dir, p.name) && all > 0 {
			break
		}
		if time.Now().After(deadline) {
			out := d.out.String()
			d.stop(t)
			t.Errorf("after 120s, %d outbox rows for %d replies, %d not settled:\n%s\nthe daemon:\n%s", all, 2*len(chats), open, outboxRows(t, dir, p.name), out)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.stop(t)
	checkNonceKills(t, p, dir, chats, heldIn, welcome, long)
}

// conversations counts connector name's conversations in dir's store,
// read as outboxCount reads (the daemon may be running).
func conversations(t *testing.T, dir, name string) int {
	t.Helper()
	if u, ok := pgDirs.Load(dir); ok {
		st, err := postgres.Open(context.Background(), u.(string), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		cs, err := st.Conversations(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "agentd.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	if err := db.QueryRow(`SELECT count(*) FROM agentd_conversations WHERE connector = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkNonceKills reads what the kill rounds left: in the store, every
// outbox row sent, one conversation per chat, two inputs and the two
// replies in each session's log and no reply in doubt; in the fake,
// exactly the two reply messages of each chat.
func checkNonceKills(t *testing.T, p *killPlatform, dir string, chats []string, heldIn map[string]int, welcome, long func(int) string) {
	t.Helper()
	st := openDataStore(t, dir)
	integrity(t, st)
	cs, ok := st.(store.ConnectorStore)
	if !ok {
		t.Fatalf("%T keeps no connector rows", st)
	}
	ctx := context.Background()
	rows, err := cs.Outbox(ctx, store.OutboxFilter{Connector: p.name, Limit: store.MaxConnectorList})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.State != store.OutSent || r.InDoubt {
			t.Errorf("outbox row %d of chat %s turn %d: %s, in doubt %v (%s)", r.ID, r.Chat, r.Turn, r.State, r.InDoubt, r.Error)
		}
	}
	convs, err := cs.Conversations(ctx, p.name)
	if err != nil {
		t.Fatal(err)
	}
	for k, chat := range chats {
		if !slices.ContainsFunc(convs, func(c store.Conversation) bool { return c.Chat == chat }) {
			t.Errorf("round %d, chat %s (kills in a made create: %d): no conversation; the fake has %d posts of the person's and these messages:\n%s",
				k, chat, heldIn[chat], len(slices.DeleteFunc(p.w.Posts(1), func(q chatfake.Post) bool { return q.Chat != chat })), texts(p.w.Messages(chat)))
		}
	}
	for _, c := range convs {
		k := slices.Index(chats, c.Chat)
		evs, err := st.Events(ctx, c.SessionID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		inputs, inDoubt := 0, 0
		var replies []string
		for _, e := range evs {
			switch e.Kind {
			case event.Input:
				inputs++
			case event.TurnEnd:
				var d event.TurnEndData
				e.Decode(&d)
				replies = append(replies, d.Reply)
			case event.Delivery:
				var d event.DeliveryData
				e.Decode(&d)
				if d.Op == event.DeliveryInDoubt {
					inDoubt++
				}
			}
		}
		if want := []string{welcome(k), long(k)}; inputs != 2 || !slices.Equal(replies, want) {
			t.Errorf("round %d, chat %s: %d inputs, replies %q; want 2 inputs, %q", k, c.Chat, inputs, replies, want)
		}
		if inDoubt > 0 {
			t.Errorf("round %d, chat %s: %d replies in doubt in the log", k, c.Chat, inDoubt)
		}
		msgs := p.w.Messages(c.Chat)
		for _, r := range replies {
			if n := finals(p.w, c.Chat, r); n != 1 {
				t.Errorf("round %d, chat %s (kills in a made create: %d): %d messages whose final text is %q, want 1:\n%s",
					k, c.Chat, heldIn[c.Chat], n, r, texts(msgs))
			}
		}
		if len(msgs) != 2 {
			t.Errorf("round %d, chat %s (kills in a made create: %d): %d messages, want 2:\n%s", k, c.Chat, heldIn[c.Chat], len(msgs), texts(msgs))
		}
	}
	held := 0
	for _, n := range heldIn {
		held += n
	}
	t.Logf("%d rounds: %d kills inside a made create; on the wire %v", len(chats), held, p.w.Counts())
}

// outboxRows lists connector name's outbox rows in dir's store, oldest
// first, as a failure shows them.
func outboxRows(t *testing.T, dir, name string) string {
	t.Helper()
	st := openDataStore(t, dir)
	rows, err := st.(store.ConnectorStore).Outbox(context.Background(), store.OutboxFilter{Connector: name, Limit: store.MaxConnectorList})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, r := range slices.Backward(rows) {
		fmt.Fprintf(&b, "  row %d chat %s turn %d: %s ids %q sending part %d nonce %q tries %d in doubt %v error %q\n",
			r.ID, r.Chat, r.Turn, r.State, r.MessageIDs, r.SendingPart, r.Nonce, r.Tries, r.InDoubt, r.Error)
	}
	return b.String()
}
