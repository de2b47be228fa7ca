package connector

import (
	"context"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/command"
	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// What the connectors use of the rest of agentd, each declared here where
// it is consumed.

// Contacts hands a person's message to their agent (*agentsys.System).
type Contacts interface {
	Contact(ctx context.Context, c agentsys.Contact) (store.Instance, runtime.Receipt, error)
}

// ContactSessions find or make a person's instance and its session
// without submitting (*agentsys.System): a new chat's conversation is
// then durable before its first message is. Optional, found on Contacts.
type ContactSessions interface {
	ContactSession(ctx context.Context, c agentsys.Contact) (store.Instance, int64, error)
}

// Sessions are the controls of a session a chat command asks for
// (*runtime.Runtime), each done once per key (the command's message: a
// redelivery does not repeat it), and the write of an event from outside
// a turn.
type Sessions interface {
	ResetOnce(ctx context.Context, addr, reason, key string) (runtime.Receipt, error)
	CompactOnce(ctx context.Context, addr, focus, key string) (runtime.Receipt, event.TurnEndData, error)
	Record(ctx context.Context, addr string, evs ...event.Event) error
}

// Commands route a chat line to a command extension (*command.Router).
type Commands interface {
	Route(ctx context.Context, line, addr string) (command.Route, bool, error)
	List() []command.Info
}

// Events are the live events of a session (*event.Bus): its streamed text.
type Events interface {
	Subscribe(session int64, size int) *event.Subscription
}

// Leader makes one node run a connector (store.OnceStore): a nil Lead
// means another node leads.
type Leader interface {
	TryLead(ctx context.Context, role string) (store.Lead, error)
}

// Agents are the agent definitions a row's agent is checked against.
type Agents interface {
	Get(id string) (*agent.Definition, bool)
}

// Store is what the connectors keep and read: their own rows, the
// sessions' logs the sweep reads turn ends from, and a turn's inbox item
// (the message a reply answers is its Origin).
type Store interface {
	store.ConnectorStore
	SessionByID(ctx context.Context, id int64) (store.Session, error)
	InboxItem(ctx context.Context, id int64) (store.InboxItem, error)
	Events(ctx context.Context, session, after int64, limit int) ([]event.Event, error)
	TurnEvents(ctx context.Context, session, turn int64) ([]event.Event, error)
}
