package telegram

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"agentd/internal/connector"
)

// chatID is an id as the Bot API takes it: an integer, or (a chat's
// @channelusername, or what is no integer) a string Telegram refuses.
func chatID(id string) any {
	if _, err := strconv.ParseInt(id, 10, 64); err == nil {
		return json.Number(id)
	}
	return id
}

// where adds a chat's id and topic to params.
func where(c connector.Chat, params map[string]any) map[string]any {
	params["chat_id"] = chatID(c.ID)
	if c.Thread != "" {
		params["message_thread_id"] = chatID(c.Thread)
	}
	return params
}

// Send creates a message (https://core.telegram.org/bots/api#sendmessage):
// MarkdownV2 unless m.Plain, link previews off, as a reply to m.ReplyTo
// when it still exists.
func (p *Platform) Send(ctx context.Context, m connector.Outgoing) (connector.Sent, error) {
	params := where(m.Chat, map[string]any{"text": m.Text, "link_preview_options": map[string]any{"is_disabled": true}})
	if !m.Plain {
		params["parse_mode"] = "MarkdownV2"
	}
	if m.ReplyTo != "" {
		params["reply_parameters"] = map[string]any{"message_id": chatID(m.ReplyTo), "allow_sending_without_reply": true}
	}
	var res message
	if err := p.c.call(ctx, "sendMessage", params, &res); err != nil {
		return connector.Sent{}, err
	}
	return p.sent(res), nil
}

func (p *Platform) sent(m message) connector.Sent {
	at := p.now()
	if m.Date != 0 {
		at = time.Unix(m.Date, 0)
	}
	return connector.Sent{ID: strconv.FormatInt(m.MessageID, 10), At: at}
}

// Edit replaces a message's text
// (https://core.telegram.org/bots/api#editmessagetext); Telegram's
// "message is not modified" is success.
func (p *Platform) Edit(ctx context.Context, m connector.Outgoing, id string) error {
	params := map[string]any{"chat_id": chatID(m.Chat.ID), "message_id": chatID(id), "text": m.Text,
		"link_preview_options": map[string]any{"is_disabled": true}}
	if !m.Plain {
		params["parse_mode"] = "MarkdownV2"
	}
	err := p.c.call(ctx, "editMessageText", params, nil)
	if isNotModified(err) {
		return nil
	}
	return err
}

// Typing shows "typing…" for about 5 s
// (https://core.telegram.org/bots/api#sendchataction).
func (p *Platform) Typing(ctx context.Context, c connector.Chat) error {
	return p.c.call(ctx, "sendChatAction", where(c, map[string]any{"action": "typing"}), nil)
}
