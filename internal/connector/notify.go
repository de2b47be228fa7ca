package connector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"agentd/internal/store"
)

// ErrChatNotAllowed: the chat is not one the connector's policy lets its
// agent write to unasked.
var ErrChatNotAllowed = errors.New("connector: the connector's policy does not allow that chat")

// Agent returns the agent connector name speaks for; false: no connector
// of that name is active here.
func (m *Manager) Agent(name string) (string, bool) {
	in := m.inst(name)
	if in == nil {
		return "", false
	}
	return in.spec.Agent, true
}

// Notify puts a message of the connector's agent to chat (a chat key: its
// id, and "/" + thread) in the durable outbox, delivered like a notice
// (retried, by whichever node runs the connector; a restart finds it). A
// chat is allowed when the connector already talks in it (a conversation
// its policy admitted), or its allow lists name it (groups.allow for a
// group, allow for a direct chat) while that kind of chat is not
// disabled. An unknown connector is ErrUnknown, any other chat
// ErrChatNotAllowed.
func (m *Manager) Notify(ctx context.Context, integration, chat, text string) error {
	in := m.inst(integration)
	if in == nil {
		return fmt.Errorf("%w: %s", ErrUnknown, integration)
	}
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("connector: %s: notify: empty text", integration)
	}
	convs, err := m.st.Conversations(ctx, integration)
	if err != nil {
		return fmt.Errorf("connector: %s: notify: %w", integration, err)
	}
	if i := slices.IndexFunc(convs, func(c store.Conversation) bool { return c.Chat == chat }); i >= 0 {
		return m.notice(ctx, integration, chatOf(convs[i].Chat, convs[i].ChatJSON), convs[i].SessionID, text)
	}
	c := chatOf(chat, "")
	if !listed(in.spec, c) {
		return fmt.Errorf("%w: %s chat %s", ErrChatNotAllowed, integration, chat)
	}
	return m.notice(ctx, integration, c, 0, text)
}

// listed reports whether s's allow lists name chat c, of a kind of chat
// s does not disable.
func listed(s *Spec, c Chat) bool {
	inGroups := s.Groups.Policy != PolicyDisabled && (slices.Contains(s.Groups.Allow, c.ID) || slices.Contains(s.Groups.Allow, c.Key()))
	inDMs := s.DMPolicy != PolicyDisabled && c.Thread == "" && slices.Contains(s.Allow, c.ID)
	return inGroups || inDMs
}
