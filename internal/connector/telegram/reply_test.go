package telegram_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"agentd/internal/store"
)

// TestGroupReplyUnderTheConnectorCore: in a group the bot's reply
// answers the person's message (reply_parameters, as the fake Bot API
// records it); in a DM it answers none.
func TestGroupReplyUnderTheConnectorCore(t *testing.T) {
	w, _, api := coreFake(t)
	m := coreManager(t)
	spec, _ := json.Marshal(map[string]any{"platform": "telegram", "token_env": "TG_TOKEN", "api_url": api,
		"agent": "assistant", "dm_policy": "open", "groups": map[string]any{"policy": "open"}})
	if err := m.Activate(t.Context(), &store.Extension{Type: "integration", Name: "tg", Spec: spec, Version: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ chat, user, text, want string }{
		{"-100777", "43", "@agentd_bot first", "re: Bob: first"},
		{"-100777", "42", "@agentd_bot second", "re: Alice: second"},
		{"42", "42", "in a DM", "re: in a DM"},
	} {
		post := w.SendAsUser(tc.chat, tc.user, tc.text)
		waitReply(t, ctx, w, tc.chat, tc.want)
		want := post.ID
		if tc.chat == "42" {
			want = ""
		}
		ms := w.Messages(tc.chat)
		if got := ms[len(ms)-1]; got.ReplyTo != want {
			t.Errorf("the reply to %q answers %q, want %q", tc.text, got.ReplyTo, want)
		}
	}
}
