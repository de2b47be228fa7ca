package telegram

import (
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"agentd/internal/connector"
)

// The Bot API's objects agentd reads
// (https://core.telegram.org/bots/api#available-types).
type (
	update struct {
		UpdateID int64    `json:"update_id"`
		Message  *message `json:"message"`
	}
	message struct {
		MessageID       int64       `json:"message_id"`
		From            *user       `json:"from"`
		Chat            chat        `json:"chat"`
		Date            int64       `json:"date"`
		Text            string      `json:"text"`
		Entities        []entity    `json:"entities"`
		Caption         string      `json:"caption"`
		CaptionEntities []entity    `json:"caption_entities"`
		MessageThreadID int64       `json:"message_thread_id"`
		IsTopicMessage  bool        `json:"is_topic_message"`
		ReplyToMessage  *message    `json:"reply_to_message"`
		Photo           []photoSize `json:"photo"`
		Document        *document   `json:"document"`
	}
	user struct {
		ID        int64  `json:"id"`
		IsBot     bool   `json:"is_bot"`
		FirstName string `json:"first_name"`
		LastName  string `json:"last_name"`
		Username  string `json:"username"`
	}
	chat struct {
		ID      int64  `json:"id"`
		Type    string `json:"type"` // private, group, supergroup, channel
		Title   string `json:"title"`
		IsForum bool   `json:"is_forum"`
	}
	entity struct {
		Type   string `json:"type"`
		Offset int    `json:"offset"` // UTF-16 code units
		Length int    `json:"length"`
		User   *user  `json:"user"`
	}
	photoSize struct {
		FileID   string `json:"file_id"`
		Width    int    `json:"width"`
		Height   int    `json:"height"`
		FileSize int64  `json:"file_size"`
	}
	document struct {
		FileID   string `json:"file_id"`
		FileName string `json:"file_name"`
		MimeType string `json:"mime_type"`
		FileSize int64  `json:"file_size"`
	}
)

// inbound turns an update into a connector.Inbound: ok false for what is
// no person's message (a channel post, an update of another kind).
//
// A private chat is a DM; a group or supergroup a group, and a forum
// topic's message its thread. The bot is mentioned by an @username
// mention, a text_mention of it, a /command@username, or a bare /command
// at the start (Telegram sends those to every bot of a group, privacy mode
// on or off); the mention and the @username of a command are removed from
// the text. A photo is one attachment (its largest size; Telegram's are
// JPEG), a document another.
func (p *Platform) inbound(u update) (connector.Inbound, bool) {
	m := u.Message
	if m == nil || m.From == nil {
		return connector.Inbound{}, false
	}
	kind := connector.ChatGroup
	switch m.Chat.Type {
	case "private":
		kind = connector.ChatDM
	case "group", "supergroup":
	default:
		return connector.Inbound{}, false
	}
	in := connector.Inbound{
		Key:       "tg:" + strconv.FormatInt(u.UpdateID, 10),
		Chat:      connector.Chat{ID: strconv.FormatInt(m.Chat.ID, 10), Kind: kind},
		User:      strconv.FormatInt(m.From.ID, 10),
		Name:      displayName(m.From),
		Bot:       m.From.IsBot,
		MessageID: strconv.FormatInt(m.MessageID, 10),
		At:        time.Unix(m.Date, 0),
	}
	if m.IsTopicMessage && m.MessageThreadID != 0 {
		in.Chat.Thread = strconv.FormatInt(m.MessageThreadID, 10)
	}
	me := p.bot()
	text, ents := m.Text, m.Entities
	if text == "" {
		text, ents = m.Caption, m.CaptionEntities
	}
	in.Text, in.Mentioned = stripMentions(text, ents, me)
	in.ReplyToBot = m.ReplyToMessage != nil && m.ReplyToMessage.From != nil && m.ReplyToMessage.From.ID == me.ID
	if n := len(m.Photo); n > 0 {
		ph := m.Photo[n-1] // sizes come smallest first
		in.Attachments = append(in.Attachments, connector.Attachment{ID: ph.FileID, Name: "photo.jpg", Type: "image/jpeg", Size: ph.FileSize})
	}
	if d := m.Document; d != nil {
		in.Attachments = append(in.Attachments, connector.Attachment{ID: d.FileID, Name: d.FileName, Type: d.MimeType, Size: d.FileSize})
	}
	return in, true
}

func displayName(u *user) string {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.Username
	}
	return name
}

// stripMentions finds the entities that address the bot and removes them
// from text: "@bot" whole (with one space after it), "/cmd@bot" to
// "/cmd". Offsets are UTF-16 code units.
func stripMentions(text string, ents []entity, me user) (string, bool) {
	units := utf16.Encode([]rune(text))
	type cut struct{ from, to int } // UTF-16 range removed
	var (
		cuts      []cut
		mentioned bool
	)
	for _, e := range ents {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > len(units) {
			continue
		}
		s := string(utf16.Decode(units[e.Offset : e.Offset+e.Length]))
		switch e.Type {
		case "mention":
			if me.Username != "" && strings.EqualFold(s, "@"+me.Username) {
				mentioned = true
				cuts = append(cuts, cut{e.Offset, e.Offset + e.Length})
			}
		case "text_mention":
			if e.User != nil && e.User.ID == me.ID {
				mentioned = true
			}
		case "bot_command":
			_, at, ok := strings.Cut(s, "@")
			switch {
			case ok && me.Username != "" && strings.EqualFold(at, me.Username):
				mentioned = true
				cuts = append(cuts, cut{e.Offset + e.Length - len(utf16.Encode([]rune("@"+at))), e.Offset + e.Length})
			case !ok && e.Offset == 0:
				mentioned = true
			}
		}
	}
	if len(cuts) == 0 {
		return strings.TrimSpace(text), mentioned
	}
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].from < cuts[j].from })
	var out []uint16
	at := 0
	for _, c := range cuts {
		if c.from < at {
			continue
		}
		out = append(out, units[at:c.from]...)
		at = c.to
		// "@bot hello" and "hi @bot there": one space goes with the mention.
		if at < len(units) && units[at] == ' ' && (c.from == 0 || units[c.from-1] == ' ') {
			at++
		}
	}
	out = append(out, units[at:]...)
	return strings.TrimSpace(string(utf16.Decode(out))), mentioned
}
