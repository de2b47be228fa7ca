package telegram

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"agentd/internal/connector"
)

// Updates a member of a group (or a forged post) could make to pass the
// mention gate, or to reach the agent by a way the connector does not read.
// Each is decoded from the Bot API's JSON as Telegram would send it
// (https://core.telegram.org/bots/api#update, #messageentity).
func TestAttackInboundSpoofing(t *testing.T) {
	r := newRig(t, rigOptions{inMemory: true})
	r.p.mu.Lock()
	r.p.me = user{ID: 7, IsBot: true, Username: "agentd_bot"}
	r.p.mu.Unlock()
	const group = `"chat":{"id":-100777,"type":"supergroup"}`
	tests := []struct {
		name   string
		update string
		take   bool // handed over at all
	}{
		{"an edited message", `{"update_id":1,"edited_message":{"message_id":1,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"@agentd_bot now","entities":[{"type":"mention","offset":0,"length":11}]}}`, false},
		{"a channel post", `{"update_id":2,"channel_post":{"message_id":1,"chat":{"id":-1001,"type":"channel"},"date":1,"text":"@agentd_bot"}}`, false},
		{"a message in a channel", `{"update_id":3,"message":{"message_id":1,"from":{"id":43,"first_name":"B"},"chat":{"id":-1001,"type":"channel"},"date":1,"text":"@agentd_bot"}}`, false},
		{"no sender", `{"update_id":4,"message":{"message_id":1,` + group + `,"date":1,"text":"@agentd_bot"}}`, false},
		{"@agentd_bot inside a longer name", `{"update_id":5,"message":{"message_id":1,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"ask @agentd_botty","entities":[{"type":"mention","offset":4,"length":13}]}}`, true},
		{"an entity over the text's end", `{"update_id":6,"message":{"message_id":1,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"@agentd","entities":[{"type":"mention","offset":0,"length":11}]}}`, true},
		{"a negative offset", `{"update_id":7,"message":{"message_id":1,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"@agentd_bot","entities":[{"type":"mention","offset":-1,"length":12}]}}`, true},
		{"a text_mention of someone else", `{"update_id":8,"message":{"message_id":1,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"Agentd","entities":[{"type":"text_mention","offset":0,"length":6,"user":{"id":8,"is_bot":true,"first_name":"Agentd"}}]}}`, true},
		{"/cmd@otherbot", `{"update_id":9,"message":{"message_id":1,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"/reset@other_bot","entities":[{"type":"bot_command","offset":0,"length":16}]}}`, true},
		{"/cmd@agentd_bot_x", `{"update_id":10,"message":{"message_id":1,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"/reset@agentd_bot_x","entities":[{"type":"bot_command","offset":0,"length":19}]}}`, true},
		{"a bare command not at the start", `{"update_id":11,"message":{"message_id":1,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"do /reset","entities":[{"type":"bot_command","offset":3,"length":6}]}}`, true},
		{"a reply to another bot", `{"update_id":12,"message":{"message_id":2,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"yes","reply_to_message":{"message_id":1,"from":{"id":9,"is_bot":true,"first_name":"Other"},` + group + `,"date":1}}}`, true},
		{"a reply to a message with no sender", `{"update_id":13,"message":{"message_id":2,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"yes","reply_to_message":{"message_id":1,` + group + `,"date":1}}}`, true},
		{"a mention in a quote of the bot's words", `{"update_id":14,"message":{"message_id":2,"from":{"id":43,"first_name":"B"},` + group + `,"date":1,"text":"he said agentd_bot","entities":[{"type":"bold","offset":8,"length":10}]}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var u update
			if err := json.Unmarshal([]byte(tt.update), &u); err != nil {
				t.Fatal(err)
			}
			in, ok := r.p.inbound(u)
			if ok != tt.take {
				t.Fatalf("taken = %v, want %v (%+v)", ok, tt.take, in)
			}
			if ok && (in.Mentioned || in.ReplyToBot) {
				t.Errorf("%+v passes the mention gate", in)
			}
		})
	}
	// The bot itself, or any bot, speaking in the group is a bot's message.
	var u update
	json.Unmarshal([]byte(`{"update_id":20,"message":{"message_id":3,"from":{"id":7,"is_bot":true,"first_name":"me"},`+group+`,"date":1,"text":"@agentd_bot loop","entities":[{"type":"mention","offset":0,"length":11}]}}`), &u)
	if in, ok := r.p.inbound(u); ok && !in.Bot {
		t.Errorf("the bot's own message is a person's: %+v", in)
	}
}

// A connector in polling mode has no webhook: a post to its route, with
// or without a guessed secret (the derived one, an empty header), is
// refused before anything is read, and nothing is handed over.
func TestAttackWebhookOfAPollingConnector(t *testing.T) {
	r := newRig(t, rigOptions{inMemory: true})
	b := newInbox()
	r.p.mu.Lock()
	r.p.h = b // as if Run were running
	r.p.mu.Unlock()
	body := `{"update_id":1,"message":{"message_id":1,"from":{"id":42,"first_name":"A"},"chat":{"id":42,"type":"private"},"date":1,"text":"forged"}}`
	for _, secret := range []string{"", DefaultSecret(testToken, "tg"), " "} {
		req := httptest.NewRequest(http.MethodPost, "/connectors/tg/webhook", strings.NewReader(body))
		req.Header["X-Telegram-Bot-Api-Secret-Token"] = []string{secret}
		rec := httptest.NewRecorder()
		r.p.ServeWebhook(rec, req)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("secret %q: status %d, want 401", secret, rec.Code)
		}
	}
	if got := b.all(); len(got) != 0 {
		t.Fatalf("a polling connector took posted updates: %+v", got)
	}
	var _ connector.Handler = b
}
