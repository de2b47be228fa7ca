//go:build conattack

package discord

import (
	"testing"

	"agentd/internal/connector"
	"agentd/internal/connector/discord/discordfake"
)

// Hole: the catch-up decides a chat's kind from the guild id alone, and a
// REST message carries none: a group conversation whose row lost its
// team (a bad row, or one written before team was kept) is read back as a
// DM, so every message of the channel skips the group rules (the group
// allowlist and the mention gate) and a stranger in it is sent a pairing
// code into the channel.
func TestAttackCatchupGroupReadBackAsDM(t *testing.T) {
	r := newRig(t, nil, nil)
	const guild = "900000000000000009"
	bot := r.fake.Bot().ID
	first := r.fake.SendAsUser(discordfake.UserMessage{Channel: "400", Guild: guild, Author: alice, Content: "<@" + bot + "> hi"})
	// The conversation as a row without its team gives it back: a group.
	r.h.got = []connector.Inbound{{Key: "dc:" + first, Chat: connector.Chat{ID: "400", Kind: connector.ChatGroup}, MessageID: first, Text: "hi"}}
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "400", Guild: guild, Author: alice, Content: "talking to the others, not the bot"})
	r.run(catchupRecorder{r.h})
	got := r.h.waitFor(t, 2)[1]
	if got.Chat.Kind != connector.ChatGroup {
		t.Errorf("a guild channel's message read back by the catch-up is a %q chat (%+v); want group", got.Chat.Kind, got.Chat)
	}
}
