package discordfake

import (
	"context"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// AddChannel makes a channel: a guild's (guild set; a thread is a channel
// of a guild too) or a DM with the bot (guild "").
func (s *Server) AddChannel(id, guild string) {
	s.w.mu.Lock()
	s.w.channel(id, guild)
	s.w.bump()
	s.w.mu.Unlock()
}

// UserMessage is what a person sends.
type UserMessage struct {
	Channel     string // made if new
	Guild       string // "" for a DM
	Author      User
	Content     string // <@id> in it mentions id, as Discord parses it
	ReplyTo     string // the message it answers
	Attachments []Attachment
}

// SendAsUser posts a person's message and dispatches MESSAGE_CREATE to
// the bot's session (kept for a RESUME when no connection is live). It
// returns the message as stored.
func (s *Server) SendAsUser(in UserMessage) Message {
	now := time.Now()
	s.w.mu.Lock()
	c := s.w.channel(in.Channel, in.Guild)
	m := &Message{
		ChannelID: in.Channel, GuildID: c.guild, Author: in.Author, Content: in.Content,
		Edits: []string{in.Content}, ReplyTo: in.ReplyTo, At: now,
	}
	m.ID = s.w.id(now)
	for _, sub := range mentionRE.FindAllStringSubmatch(in.Content, -1) {
		u := User{ID: sub[1]}
		if u.ID == s.opts.BotID {
			u = s.Bot()
		}
		m.Mentions = append(m.Mentions, u)
	}
	s.mu.Lock()
	base := s.base
	s.mu.Unlock()
	for i, a := range in.Attachments {
		a.ID = m.ID + "-" + strconv.Itoa(i)
		a.Size = int64(len(a.Data))
		a.URL = base + "/cdn/" + url.PathEscape(m.ChannelID) + "/" + m.ID + "/" + url.PathEscape(a.Filename)
		m.Attachments = append(m.Attachments, a)
	}
	c.messages = append(c.messages, m)
	wire := wireMessage(m)
	if ref := s.w.find(in.Channel, in.ReplyTo); ref != nil {
		wire["referenced_message"] = wireMessage(ref)
	}
	out := m.clone()
	s.w.bump()
	s.w.mu.Unlock()
	s.dispatchMessage(wire, m.GuildID)
	return out
}

// dispatchMessage sends MESSAGE_CREATE as the session's intents let it:
// guild messages need GUILD_MESSAGES, DMs DIRECT_MESSAGES; without
// MESSAGE_CONTENT a guild message that does not mention the bot comes
// with its content, attachments and embeds empty.
func (s *Server) dispatchMessage(wire map[string]any, guild string) {
	s.dispatch("MESSAGE_CREATE", func(intents int) (any, bool) {
		if guild == "" {
			return wire, intents&intentDirectMessages != 0
		}
		if intents&intentGuildMessages == 0 {
			return nil, false
		}
		if intents&intentMessageContent == 0 && !strings.Contains(wire["content"].(string), "<@"+s.opts.BotID+">") {
			w := maps.Clone(wire)
			w["content"], w["attachments"] = "", []Attachment{}
			return w, true
		}
		return wire, true
	})
}

// Messages is every message of channel, oldest first.
func (s *Server) Messages(channel string) []Message {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	c := s.w.channels[channel]
	if c == nil {
		return nil
	}
	out := make([]Message, 0, len(c.messages))
	for _, m := range c.messages {
		out = append(out, m.clone())
	}
	return out
}

// BotMessages is the bot's messages in channel, oldest first, each with
// every edit it had.
func (s *Server) BotMessages(channel string) []Message {
	var out []Message
	for _, m := range s.Messages(channel) {
		if m.Author.ID == s.opts.BotID {
			out = append(out, m)
		}
	}
	return out
}

// Wait returns once cond is true, checking it now and after every change
// the fake sees (a message, an edit, a call, a connection), or ctx's error.
func (s *Server) Wait(ctx context.Context, cond func() bool) error {
	return s.w.wait(ctx, cond)
}

// Fail answers the next n calls of route (a key such as
// "POST /channels/{id}/messages") with f.
func (s *Server) Fail(route string, n int, f Fault) {
	s.mu.Lock()
	for range n {
		s.faults[route] = append(s.faults[route], f)
	}
	s.mu.Unlock()
}

// Calls counts the calls of route answered (faults and 429s included).
func (s *Server) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}
