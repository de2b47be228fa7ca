package discord

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"agentd/internal/connector"
)

// inbound turns a MESSAGE_CREATE's message into what the connector core
// takes. ok is false for what no one answers: a bot's message (this bot's
// own among them) and a message with nothing in it.
func (p *Platform) inbound(m message) (connector.Inbound, bool) {
	if m.Author.Bot || m.Author.ID == "" {
		return connector.Inbound{}, false
	}
	bot := p.botID()
	chat := connector.Chat{ID: m.ChannelID, Kind: connector.ChatDM}
	if m.GuildID != "" {
		// A thread is a channel of its own: channel_id is the thread.
		chat.Kind, chat.Team = connector.ChatGroup, m.GuildID
	}
	in := connector.Inbound{
		Key:       "dc:" + m.ID,
		Chat:      chat,
		User:      m.Author.ID,
		Name:      displayName(m.Author),
		MessageID: m.ID,
		Text:      m.Content,
		At:        parseTime(m.Timestamp, snowflakeTime(m.ID)),
	}
	if bot != "" {
		for _, u := range m.Mentions {
			if u.ID == bot {
				in.Mentioned = true
			}
		}
		in.Text = strings.TrimSpace(removeMention(m.Content, bot))
		if r := m.ReferencedMessage; r != nil && r.Author.ID == bot {
			in.ReplyToBot = true
		}
	}
	for _, a := range m.Attachments {
		in.Attachments = append(in.Attachments, connector.Attachment{
			ID: a.ID, Name: a.Filename, Type: a.ContentType, Size: a.Size, URL: a.URL,
		})
	}
	if in.Text == "" && len(in.Attachments) == 0 {
		return connector.Inbound{}, false
	}
	return in, true
}

// removeMention removes <@id> and <@!id> (the nickname form) of the bot,
// until none is left ("<@<@id>id>" leaves one after a single pass).
func removeMention(s, id string) string {
	for {
		t := strings.ReplaceAll(s, "<@"+id+">", "")
		t = strings.ReplaceAll(t, "<@!"+id+">", "")
		if t == s {
			return s
		}
		s = t
	}
}

func displayName(u user) string {
	if u.GlobalName != "" {
		return u.GlobalName
	}
	return u.Username
}

// discordEpoch is the first millisecond of 2015, where snowflakes count
// from (https://discord.com/developers/docs/reference#snowflakes).
const discordEpoch = 1420070400000

// snowflakeTime is when the id was made.
func snowflakeTime(id string) time.Time {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(int64(n>>22) + discordEpoch)
}

// snowflakeAt is the smallest id made at t.
func snowflakeAt(t time.Time) string {
	ms := t.UnixMilli() - discordEpoch
	if ms < 0 {
		ms = 0
	}
	return strconv.FormatUint(uint64(ms)<<22, 10)
}

// idLess orders snowflakes: a shorter decimal is smaller.
func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func sortByID(ms []message) {
	slices.SortFunc(ms, func(a, b message) int {
		switch {
		case a.ID == b.ID:
			return 0
		case idLess(a.ID, b.ID):
			return -1
		}
		return 1
	})
}
