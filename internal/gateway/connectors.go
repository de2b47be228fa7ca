package gateway

import (
	"context"
	"net/http"
	"time"

	"agentd/internal/store"
)

// Connectors is what the gateway reads and asks of the chat connectors
// (*connector.Manager): their states, a webhook-mode connector's handler,
// and a person's decision on a reply that failed.
type Connectors interface {
	List(ctx context.Context) []ConnectorState
	Get(ctx context.Context, name string) (ConnectorState, bool)
	// Webhook returns the handler of a connector in a webhook mode (it
	// verifies each request itself); false: no such connector receiving
	// over HTTP (404).
	Webhook(name string) (http.Handler, bool)
}

// OutboxDecider is the optional ability of Connectors to retry or dismiss
// a reply that failed (outbox row id), writing a delivery event.
type OutboxDecider interface {
	Retry(ctx context.Context, connector string, outbox int64, dismiss bool) (store.OutboxItem, error)
}

// Pairings is what the gateway asks of pairing: the codes, and a person's
// decision on one (store.ErrNotFound for no pending code).
type Pairings interface {
	ListPairings(ctx context.Context, connector, state string) ([]store.Pairing, error)
	DecidePairing(ctx context.Context, code string, approve bool, by string) (store.Pairing, error)
	RevokePairing(ctx context.Context, connector, user string) error
}

// ConnectorState is one connector as /v1/connectors, /readyz, the console,
// agentd connectors and the metrics show it. Counters are this node's
// since it started; LastError is redacted.
type ConnectorState struct {
	Name             string            `json:"name"`
	Platform         string            `json:"platform"`
	Agent            string            `json:"agent"`
	Mode             string            `json:"mode"`
	DMPolicy         string            `json:"dm_policy"`
	State            string            `json:"state"` // connector.State*: connecting, connected, degraded, down, disabled, standby
	Since            time.Time         `json:"since"`
	Bot              string            `json:"bot,omitempty"` // @username or the bot's user id
	LastError        string            `json:"last_error,omitempty"`
	LastErrorAt      time.Time         `json:"last_error_at,omitzero"`
	Queue            int               `json:"queue"` // outbox rows not yet delivered (streaming, pending, sending)
	Oldest           time.Time         `json:"oldest,omitzero"`
	Failed           int               `json:"failed"` // failed rows no person has seen
	PairingsPending  int               `json:"pairings_pending"`
	RateLimitedUntil time.Time         `json:"rate_limited_until,omitzero"`
	Received         uint64            `json:"received"`
	Delivered        uint64            `json:"delivered"`
	Retried          uint64            `json:"retried"`
	FailedTotal      uint64            `json:"failed_total"`
	Edits            uint64            `json:"edits"`
	Refused          map[string]uint64 `json:"refused,omitempty"`       // by reason: pairing, allowlist, group, mention, bot, limit
	RefusedChats     []string          `json:"refused_chats,omitempty"` // the last group chats refused, to allow them
}
