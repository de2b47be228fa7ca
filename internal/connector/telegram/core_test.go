package telegram_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram"
	"agentd/internal/connector/telegram/telegramfake"
	"agentd/internal/event"
	"agentd/internal/netguard"
	"agentd/internal/runtime"
	"agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
	"agentd/internal/testkit"
)

// instanceDefs are the agents' definitions, and the agent system's for
// the instances it makes (a person's agent).
type instanceDefs struct {
	d   testkit.Agents
	sys *atomic.Pointer[agentsys.System]
}

func (a instanceDefs) Get(id string) (*agent.Definition, bool) {
	if d, ok := a.d[id]; ok {
		return d, true
	}
	if sys := a.sys.Load(); sys != nil {
		return sys.Definition(id)
	}
	return nil, false
}

const coreToken = "777001:AAcore-secret_token"

// The Telegram platform under the connector core, in process: the fake Bot
// API, the connector Manager over a testkit runtime and the agent system,
// a person's DM answered by the model's reply, a group without a mention
// ignored, a 429 storm and a dropped poll losing nothing.
func TestUnderTheConnectorCore(t *testing.T) {
	w, _, api := coreFake(t)
	m, st := coreManagerStore(t)
	spec, _ := json.Marshal(map[string]any{"platform": "telegram", "token_env": "TG_TOKEN", "api_url": api,
		"agent": "assistant", "dm_policy": "open", "groups": map[string]any{"policy": "open"}})
	if err := m.Activate(t.Context(), &store.Extension{Type: "integration", Name: "tg", Spec: spec, Version: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	reply := func(chat, want string) {
		t.Helper()
		waitReply(t, ctx, w, chat, want)
	}

	w.SendAsUser("42", "42", "hello")
	reply("42", "re: hello")

	w.SendAsUser("-100777", "43", "lunch?")
	w.SendAsUser("-100777", "43", "@agentd_bot ping")
	err := w.Wait(ctx, func() bool {
		for _, msg := range w.Messages("-100777") {
			if strings.HasSuffix(msg.Text(), "ping") {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("the group's mention was not answered: %v; %+v", err, w.Messages("-100777"))
	}
	for _, msg := range w.Messages("-100777") {
		if strings.Contains(msg.Text(), "lunch") {
			t.Errorf("a group message without a mention was answered: %q", msg.Text())
		}
	}

	w.Fail("sendMessage", 3, chatfake.Fault{Status: 429, RetryAfter: time.Second})
	w.SendAsUser("42", "42", "storm")
	reply("42", "re: storm")

	w.Drop()
	w.SendAsUser("42", "42", "after the drop")
	reply("42", "re: after the drop")

	seen := map[string]int{}
	for _, msg := range w.Messages("42") {
		seen[msg.Text()]++
	}
	// A reply is sent twice only when a create's answer was lost after
	// Telegram made the message (the Drop above can meet the storm's
	// reply in flight): then once more at most, marked in doubt.
	rows, err := st.Outbox(ctx, store.OutboxFilter{Connector: "tg", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for text, n := range seen {
		if n == 1 {
			continue
		}
		i := slices.IndexFunc(rows, func(it store.OutboxItem) bool { return it.Text == text })
		if n > 2 || i < 0 || !rows[i].InDoubt || !inDoubtLogged(t, st, rows[i]) {
			t.Errorf("%q was sent %d times, not as one in doubt; rows %+v", text, n, rows)
		}
	}
}

// Webhook mode under the core: Telegram's posts reach the platform
// through the Manager's webhook handler (the gateway's public route).
func TestWebhookUnderTheConnectorCore(t *testing.T) {
	w, fake, api := coreFake(t)
	m := coreManager(t)
	hook := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h, ok := m.Webhook("tgw")
		if !ok {
			http.NotFound(rw, r)
			return
		}
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(hook.Close)
	spec, _ := json.Marshal(map[string]any{"platform": "telegram", "token_env": "TG_TOKEN", "api_url": api,
		"agent": "assistant", "dm_policy": "open", "mode": "webhook", "public_url": hook.URL + "/connectors/tgw/webhook"})
	if err := m.Activate(t.Context(), &store.Extension{Type: "integration", Name: "tgw", Spec: spec, Version: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := w.Wait(ctx, func() bool { u, _ := fake.Webhook(); return u != "" }); err != nil {
		t.Fatal(err)
	}
	w.SendAsUser("42", "42", "via the webhook")
	waitReply(t, ctx, w, "42", "re: via the webhook")
	resp, err := http.Post(hook.URL+"/connectors/tgw/webhook", "application/json", strings.NewReader(`{"update_id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a post without the secret: %d", resp.StatusCode)
	}
}

// coreFake is the fake Bot API with Alice (42, a DM), Bob and a group.
func coreFake(t *testing.T) (*chatfake.World, *telegramfake.Server, string) {
	t.Helper()
	return coreFakeWith(t, nil)
}

// coreFakeWith is coreFake with the fake's handler wrapped (nil: not).
func coreFakeWith(t *testing.T, wrap func(http.Handler) http.Handler) (*chatfake.World, *telegramfake.Server, string) {
	t.Helper()
	w := chatfake.New(nil)
	w.AddUser(chatfake.User{ID: "42", Name: "Alice"})
	w.AddUser(chatfake.User{ID: "43", Name: "Bob"})
	w.AddChat(chatfake.Chat{ID: "42", Kind: chatfake.DM})
	w.AddChat(chatfake.Chat{ID: "-100777", Kind: chatfake.Group, Title: "team"})
	fake := telegramfake.New(&telegramfake.Options{World: w, Token: coreToken})
	t.Cleanup(fake.Close)
	var h http.Handler = fake
	if wrap != nil {
		h = wrap(fake)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = w.ConnState
	srv.Start()
	t.Cleanup(srv.Close)
	return w, fake, srv.URL
}

// coreManager is the connector core over a testkit runtime and the agent
// system, with Telegram as its one platform, the token in TG_TOKEN and
// loopback allowed.
func coreManager(t *testing.T) *connector.Manager {
	t.Helper()
	m, _ := coreManagerStore(t)
	return m
}

// coreManagerStore is coreManager with its store.
func coreManagerStore(t *testing.T) (*connector.Manager, *sqlite.Store) {
	t.Helper()
	var (
		hooked atomic.Pointer[connector.Manager]
		sysp   atomic.Pointer[agentsys.System]
	)
	user := testkit.Agent("assistant")
	user.Type = agent.TypeUser
	defs := instanceDefs{d: testkit.Agents{"assistant": user}, sys: &sysp}
	k := testkit.New(t, &testkit.Options{Model: testkit.NewModel(), Agents: defs, Runtime: func(ro *runtime.Options) {
		ro.Ended = func(s store.Session, it store.InboxItem, end event.TurnEndData) {
			if m := hooked.Load(); m != nil {
				m.Ended(s, it, end)
			}
		}
	}})
	sys := agentsys.New(k.Store, k.Runtime, &agentsys.Options{Agents: defs, Sweep: time.Hour})
	sysp.Store(sys)
	m := connector.New(k.Store, sys, k.Runtime, k.Bus, map[string]connector.Factory{"telegram": telegram.New}, &connector.Options{
		Secrets: secret.NewResolver("", &secret.Options{LookupEnv: func(n string) (string, bool) { return coreToken, n == "TG_TOKEN" }}),
		Guard:   netguard.New(&netguard.Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}),
	})
	hooked.Store(m)
	m.Start()
	t.Cleanup(m.Close)
	return m, k.Store
}

// waitReply waits for a bot message in chat that reads want.
func waitReply(t *testing.T, ctx context.Context, w *chatfake.World, chat, want string) {
	t.Helper()
	err := w.Wait(ctx, func() bool {
		for _, msg := range w.Messages(chat) {
			if p, _, err := telegramfake.ParseMarkdownV2(msg.Text()); (err == nil && p == want) || msg.Text() == want {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("no reply %q in chat %s: %v; messages %+v", want, chat, err, w.Messages(chat))
	}
}

// The answer to a create is lost after Telegram made the message (the
// connection drops, as w.Drop does to a call in flight): Telegram has no
// nonce, so the reply is sent again, at most once more, and the session's
// log says it is in doubt.
func TestCreateAnswerLost(t *testing.T) {
	var lose atomic.Bool
	w, _, api := coreFakeWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/sendMessage") && lose.CompareAndSwap(true, false) {
				h.ServeHTTP(httptest.NewRecorder(), r)
				panic(http.ErrAbortHandler) // the message is made; its answer never reaches agentd
			}
			h.ServeHTTP(rw, r)
		})
	})
	m, st := coreManagerStore(t)
	spec, _ := json.Marshal(map[string]any{"platform": "telegram", "token_env": "TG_TOKEN", "api_url": api,
		"agent": "assistant", "dm_policy": "open"})
	if err := m.Activate(t.Context(), &store.Extension{Type: "integration", Name: "tg", Spec: spec, Version: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	lose.Store(true)
	w.SendAsUser("42", "42", "hello")
	waitReply(t, ctx, w, "42", "re: hello")
	for { // the store's moves do not wake w.Wait
		rows, _ := st.Outbox(ctx, store.OutboxFilter{Connector: "tg", State: store.OutSent, Limit: 10})
		if len(rows) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the reply's row was never sent")
		}
		time.Sleep(10 * time.Millisecond)
	}
	rows, _ := st.Outbox(ctx, store.OutboxFilter{Connector: "tg", Limit: 10})
	if len(rows) != 1 || !rows[0].InDoubt {
		t.Fatalf("outbox rows %+v: want one, in doubt", rows)
	}
	if n := count(w, "42", "re: hello"); n > 2 {
		t.Errorf("the reply was sent %d times, want at most twice", n)
	}
	if !inDoubtLogged(t, st, rows[0]) {
		t.Error("no in_doubt delivery event in the session's log")
	}
}

// count is how many messages of chat read text.
func count(w *chatfake.World, chat, text string) int {
	n := 0
	for _, msg := range w.Messages(chat) {
		if msg.Text() == text {
			n++
		}
	}
	return n
}

// inDoubtLogged reports whether row's session has a delivery event in_doubt
// for its turn.
func inDoubtLogged(t *testing.T, st *sqlite.Store, row store.OutboxItem) bool {
	t.Helper()
	evs, err := st.Events(t.Context(), row.SessionID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		var d event.DeliveryData
		if e.Kind == event.Delivery && e.Decode(&d) == nil && d.Op == event.DeliveryInDoubt && d.Turn == row.Turn {
			return true
		}
	}
	return false
}
