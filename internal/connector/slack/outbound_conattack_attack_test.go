//go:build conattack

package slack

import (
	"strings"
	"testing"

	"agentd/internal/connector"
)

// Hole: a plain message (Outgoing.Plain: a row with markup "plain", or a
// reply Slack refused as markup) is posted as written, with mrkdwn off.
// Slack reads &, < and > as control characters in every message's text,
// mrkdwn or not (https://api.slack.com/reference/surfaces/formatting#escaping):
// a reply the model wrote with <!channel>, <!here> or <!subteam^…> pings the
// whole channel, and <https://evil|bank> shows a link under a false name.
func TestAttackPlainReplyPingsTheChannel(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	f.fake.AddChannel("C1", "general")
	for _, text := range []string{"<!channel> the build is red", "<!here>", "<!subteam^S1>", "see <https://evil.example|your bank>"} {
		if _, err := f.p.Send(t.Context(), connector.Outgoing{Chat: connector.Chat{ID: "C1", Kind: connector.ChatGroup}, Text: text, Plain: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range f.fake.World().Messages("C1") {
		if strings.Contains(m.Text(), "<!") || strings.Contains(m.Text(), "<https://") {
			t.Errorf("posted %q: Slack reads it as a mention or a link; want &lt; and &gt;", m.Text())
		}
	}
}
