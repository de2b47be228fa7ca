package discord

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/connector"
)

func TestInbound(t *testing.T) {
	const bot = "1000000000000000001"
	p, err := newPlatform(connector.Config{Token: "t"}, connector.PlatformDeps{})
	if err != nil {
		t.Fatal(err)
	}
	p.setBot(bot, "agentd-bot")
	al := user{ID: "22", Username: "alice", GlobalName: "Alice"}
	for _, tc := range []struct {
		name string
		m    message
		want *connector.Inbound // nil: not handed on
	}{
		{"dm", message{ID: "5", ChannelID: "300", Author: al, Content: "hi"},
			&connector.Inbound{Key: "dc:5", Chat: connector.Chat{ID: "300", Kind: connector.ChatDM}, User: "22", Name: "Alice", MessageID: "5", Text: "hi"}},
		{"guild, mentioned", message{ID: "6", ChannelID: "301", GuildID: "900", Author: al,
			Content: "<@" + bot + "> what now <@!" + bot + ">", Mentions: []user{{ID: bot, Bot: true}}},
			&connector.Inbound{Key: "dc:6", Chat: connector.Chat{ID: "301", Kind: connector.ChatGroup, Team: "900"}, User: "22", Name: "Alice", MessageID: "6", Text: "what now", Mentioned: true}},
		{"guild, another user mentioned", message{ID: "7", ChannelID: "301", GuildID: "900", Author: al,
			Content: "<@33> look", Mentions: []user{{ID: "33"}}},
			&connector.Inbound{Key: "dc:7", Chat: connector.Chat{ID: "301", Kind: connector.ChatGroup, Team: "900"}, User: "22", Name: "Alice", MessageID: "7", Text: "<@33> look"}},
		{"thread: its own channel, a reply to the bot", message{ID: "8", ChannelID: "302", GuildID: "900", Author: al,
			Content: "and then?", ReferencedMessage: &message{ID: "4", Author: user{ID: bot, Bot: true}}},
			&connector.Inbound{Key: "dc:8", Chat: connector.Chat{ID: "302", Kind: connector.ChatGroup, Team: "900"}, User: "22", Name: "Alice", MessageID: "8", Text: "and then?", ReplyToBot: true}},
		{"image", message{ID: "9", ChannelID: "300", Author: al, Attachments: []attachment{{ID: "1", Filename: "a.png", ContentType: "image/png", Size: 3, URL: "https://cdn/a.png"}}},
			&connector.Inbound{Key: "dc:9", Chat: connector.Chat{ID: "300", Kind: connector.ChatDM}, User: "22", Name: "Alice", MessageID: "9",
				Attachments: []connector.Attachment{{ID: "1", Name: "a.png", Type: "image/png", Size: 3, URL: "https://cdn/a.png"}}}},
		{"another bot", message{ID: "10", ChannelID: "300", Author: user{ID: "44", Bot: true}, Content: "beep"}, nil},
		{"this bot", message{ID: "11", ChannelID: "300", Author: user{ID: bot, Bot: true}, Content: "reply"}, nil},
		{"only a mention", message{ID: "12", ChannelID: "301", GuildID: "900", Author: al, Content: "<@" + bot + ">", Mentions: []user{{ID: bot}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := p.inbound(tc.m)
			if tc.want == nil {
				if ok {
					t.Fatalf("handed on: %+v", got)
				}
				return
			}
			if !ok {
				t.Fatal("not handed on")
			}
			if d := cmp.Diff(*tc.want, got, cmpopts.IgnoreFields(connector.Inbound{}, "At")); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestSnowflakes(t *testing.T) {
	for _, tc := range []struct{ a, b string }{{"9", "10"}, {"175928847299117063", "175928847299117064"}} {
		if !idLess(tc.a, tc.b) || idLess(tc.b, tc.a) {
			t.Errorf("idLess(%s, %s)", tc.a, tc.b)
		}
	}
	// Discord's documented example: 175928847299117063 was made at
	// 2016-04-30 11:18:25.796 UTC.
	if got := snowflakeTime("175928847299117063").UTC().Format("2006-01-02 15:04:05.000"); got != "2016-04-30 11:18:25.796" {
		t.Errorf("snowflakeTime = %s", got)
	}
	at := snowflakeTime("175928847299117063")
	if got := snowflakeTime(snowflakeAt(at)); !got.Equal(at) {
		t.Errorf("snowflakeAt round trip = %s, want %s", got, at)
	}
}

// FuzzRemoveMention checks the bot's mention never survives removal, and
// that removal only removes: what is left is the text with every mention
// the regexp package finds taken out, repeatedly.
func FuzzRemoveMention(f *testing.F) {
	const id = "1000"
	for _, s := range []string{"<@1000> hi", "<@<@1000>1000>", "<@!1000>", "a <@2000> b", "<@!<@1000>1000>"} {
		f.Add(s)
	}
	re := regexp.MustCompile(`<@!?` + id + `>`)
	f.Fuzz(func(t *testing.T, s string) {
		got := removeMention(s, id)
		if re.MatchString(got) {
			t.Fatalf("removeMention(%q) = %q: a mention is left", s, got)
		}
		want := s
		for re.MatchString(want) {
			want = re.ReplaceAllString(want, "")
		}
		if got != want {
			t.Fatalf("removeMention(%q) = %q, want %q", s, got, want)
		}
	})
}
