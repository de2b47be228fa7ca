package discordfake

import (
	"context"
	"maps"
	"strings"

	"agentd/internal/connector/chatfake"
)

// AddChannel makes a channel: a guild's (guild set) or a DM with the bot
// (guild "").
func (s *Server) AddChannel(id, guild string) {
	kind := chatfake.DM
	if guild != "" {
		kind = chatfake.Group
	}
	s.mu.Lock()
	s.guilds[id] = guild
	s.mu.Unlock()
	s.w.AddChat(chatfake.Chat{ID: id, Kind: kind})
}

// AddThread makes a thread of channel parent: a channel of its own in
// parent's guild.
func (s *Server) AddThread(id, parent string) {
	guild := s.guild(parent)
	s.mu.Lock()
	s.guilds[id] = guild
	s.mu.Unlock()
	s.w.AddChat(chatfake.Chat{ID: id, Kind: chatfake.Group, Parent: parent})
}

// guild is channel ch's guild ("" a DM): as AddChannel or AddThread
// made it, else from the World's chat (a group is in Options.Guild).
func (s *Server) guild(ch string) string {
	s.mu.Lock()
	g, ok := s.guilds[ch]
	s.mu.Unlock()
	if ok {
		return g
	}
	c, ok := s.w.Chat(ch)
	switch {
	case !ok || c.Kind != chatfake.Group:
		return ""
	case c.Parent != "" && c.Parent != ch:
		return s.guild(c.Parent)
	}
	return s.opts.Guild
}

// UserMessage is what a person sends.
type UserMessage struct {
	Channel string // made (in Guild) if new
	Guild   string // "" for a DM
	Author  chatfake.User
	Content string // <@id> in it mentions id, as Discord parses it
	ReplyTo string // the id of the message it answers
	Files   []chatfake.File
}

// SendAsUser posts a person's message to the World and returns once it
// was dispatched as MESSAGE_CREATE to the bot's session (or kept for a
// RESUME when no connection is live). It returns the message's id.
func (s *Server) SendAsUser(in UserMessage) string {
	if _, ok := s.w.Chat(in.Channel); !ok {
		s.AddChannel(in.Channel, in.Guild)
	}
	if _, ok := s.w.User(in.Author.ID); !ok {
		s.w.AddUser(in.Author)
	}
	p := s.w.Send(chatfake.Post{Chat: in.Channel, User: in.Author.ID, Text: in.Content,
		ReplyTo: s.worldID(in.ReplyTo), Files: in.Files})
	_ = s.w.Wait(context.Background(), func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.followed >= p.Seq
	})
	return s.wireID(p.ID)
}

// dispatchMessage sends MESSAGE_CREATE as the session's intents let it:
// guild messages need GUILD_MESSAGES, DMs DIRECT_MESSAGES; without
// MESSAGE_CONTENT a guild message that does not mention the bot comes
// with its content and attachments empty.
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
			w["content"], w["attachments"] = "", []any{}
			return w, true
		}
		return wire, true
	})
}

// BotMessages is the bot's messages in channel, oldest first, each with
// every version it had, with their ids (ID, ReplyTo) as on the wire.
func (s *Server) BotMessages(channel string) []chatfake.Message {
	ms := s.w.Messages(channel)
	for i := range ms {
		ms[i].ID = s.wireID(ms[i].ID)
		if ms[i].ReplyTo != "" {
			ms[i].ReplyTo = s.wireID(ms[i].ReplyTo)
		}
	}
	return ms
}

// Wait returns once cond is true, checking it now and after every change
// of the World (a message, an edit, a call, a gateway connection), or
// ctx's error.
func (s *Server) Wait(ctx context.Context, cond func() bool) error {
	return s.w.Wait(ctx, cond)
}

// Fail answers the next n calls of route (a key such as
// "POST /channels/{id}/messages") with f: a 429 with f.RetryAfter (and
// f.Global), a status with f.Body as Discord's error message, or a
// dropped connection.
func (s *Server) Fail(route string, n int, f chatfake.Fault) { s.w.Fail(route, n, f) }

// Calls counts the calls of route (faults and 429s included).
func (s *Server) Calls(route string) int { return s.w.Count(route) }
