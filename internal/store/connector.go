package store

import (
	"context"
	"errors"
	"time"
)

// ErrPairingFull: a connector already has MaxPending pairing codes
// pending; Pair makes no more until one is decided or expires.
var ErrPairingFull = errors.New("pairing: too many pending codes")

// Conversation is one chat a connector talks in: the session it maps to,
// and the outbox sweep's bookmark in that session's log.
type Conversation struct {
	Connector string // the integration row's name
	Chat      string // the chat's key: its id, and "/" + thread when threaded
	ChatJSON  string // the connector's chat (kind, thread, team) to reply with, as JSON
	SessionID int64  // the session of the agent the chat talks to
	Instance  string // that agent's instance id
	SeenSeq   int64  // the last event seq of the session the sweep has looked at
	LastIn    string // the last inbound platform message id (Discord's catch-up)
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Outbox states. A row moves streaming → pending → sending → pending … →
// sent, or to failed or skipped; failed → pending when a person retries.
const (
	OutStreaming = "streaming" // a turn is running; its streamer edits the message it made
	OutPending   = "pending"   // the final text is known; the worker delivers it
	OutSending   = "sending"   // the create of part SendingPart is in flight (or was, at a crash)
	OutSent      = "sent"      // every part delivered with its final text
	OutFailed    = "failed"    // given up; a delivery event says why
	OutSkipped   = "skipped"   // nothing to deliver (an empty or cancelled turn)
)

// OutboxStates lists the outbox states.
func OutboxStates() []string {
	return []string{OutStreaming, OutPending, OutSending, OutSent, OutFailed, OutSkipped}
}

// Outbox kinds.
const (
	OutReply  = "reply"  // a turn's reply
	OutNotice = "notice" // a connector's own message (pairing approved, /reset done, /help)
)

// OutboxItem is one reply (or notice) a connector delivers to a chat.
type OutboxItem struct {
	ID          int64
	Connector   string
	Chat        string // the conversation's chat key
	SessionID   int64  // the chat's session; 0 for a notice to a chat that has none yet
	Turn        int64  // the turn (inbox item) whose reply it is; 0 for a notice
	Kind        string // OutReply or OutNotice
	State       string
	Text        string   // the final text ("" while streaming)
	Parts       int      // the parts the text is cut into (0 until pending)
	MessageIDs  []string // the platform's id of each part made ("" not yet)
	SendingPart int      // the part whose create is in flight (-1 none)
	Nonce       string   // the in-flight create's nonce
	Tries       int
	NextAt      time.Time // not before
	Error       string    // the last error, redacted
	InDoubt     bool      // a create may have been made twice
	Acked       bool      // a person saw the failure (retried or dismissed)
	CreatedAt   time.Time
	UpdatedAt   time.Time
	SentAt      time.Time
}

// OutboxFilter selects outbox rows, newest first: by connector, session
// and state ("" any), with an id below Before (0 from the newest), at most
// Limit (0: 100).
type OutboxFilter struct {
	Connector string
	SessionID int64
	State     string
	Limit     int
	Before    int64
}

// Pairing states.
const (
	PairPending  = "pending"
	PairApproved = "approved"
	PairDenied   = "denied"
	PairExpired  = "expired"
)

// Pairing is a stranger's request to talk to a connector's agent, and its
// decision. No message of theirs is kept.
type Pairing struct {
	Connector string
	UserID    string // the platform's user id
	Name      string // their display name, as the platform gave it
	Chat      string // the DM chat, to tell them when approved
	Code      string // 8 Crockford base32 symbols
	State     string
	CreatedAt time.Time
	ExpiresAt time.Time
	DecidedAt time.Time
	DecidedBy string
}

// ConnectorStore keeps what chat connectors need durable: conversations,
// the outbox and pairings. Both stores implement it (optional, found by
// type assertion like JobRunStore). Every outbox move is a conditional
// update: false means another writer (a node, a streamer) moved it first.
type ConnectorStore interface {
	// PutConversation inserts c unless its (connector, chat) exists, and
	// returns the row as stored.
	PutConversation(ctx context.Context, c Conversation) (Conversation, error)
	// Conversations lists a connector's conversations.
	Conversations(ctx context.Context, connector string) ([]Conversation, error)
	// ConversationsBehind lists up to limit conversations whose session's
	// log has events past their SeenSeq.
	ConversationsBehind(ctx context.Context, connector string, limit int) ([]Conversation, error)
	// SetSeen moves a conversation's SeenSeq forward (never back) and, when
	// lastIn is not "", its LastIn.
	SetSeen(ctx context.Context, connector, chat string, seq int64, lastIn string) error

	// OpenOutbox inserts it unless a row of its (connector, session, turn)
	// exists (a turn other than 0), and returns the row as stored and
	// whether it was created.
	OpenOutbox(ctx context.Context, it OutboxItem) (OutboxItem, bool, error)
	// MoveOutbox writes to's State, Text, Parts, MessageIDs, SendingPart,
	// Nonce, Tries, NextAt, Error, InDoubt and SentAt into row id if its
	// state is still from; false if it is not.
	MoveOutbox(ctx context.Context, id int64, from string, to OutboxItem) (bool, error)
	// DueOutbox returns up to limit pending or sending rows of connector
	// with NextAt at or before now, oldest first.
	DueOutbox(ctx context.Context, connector string, now time.Time, limit int) ([]OutboxItem, error)
	// Outbox lists rows by f.
	Outbox(ctx context.Context, f OutboxFilter) ([]OutboxItem, error)
	// OutboxDepth counts a connector's pending, sending and streaming rows
	// and the oldest one's creation time.
	OutboxDepth(ctx context.Context, connector string) (n int, oldest time.Time, err error)
	// AckOutbox marks a failed row seen: retry moves it back to pending
	// with no tries, otherwise it is dismissed (Acked). ErrNotFound if id
	// is not a failed row.
	AckOutbox(ctx context.Context, id int64, retry bool) (OutboxItem, error)

	// Pair returns p.UserID's pending, unexpired code on p.Connector, or
	// makes p (State pending, Code, CreatedAt, ExpiresAt set by the
	// caller) unless maxPending codes are pending: ErrPairingFull. Codes
	// past their ExpiresAt at now become expired in the same transaction.
	// created says whether p was made. A user already approved or denied
	// gets that row back, created false.
	Pair(ctx context.Context, p Pairing, maxPending int, now time.Time) (got Pairing, created bool, err error)
	// Pairings lists a connector's pairings ("" every connector) in state
	// ("" every state), newest first.
	Pairings(ctx context.Context, connector, state string) ([]Pairing, error)
	// DecidePairing approves or denies (state) the pending, unexpired
	// pairing of code, by whom. ErrNotFound if there is none. notice, when
	// not nil and the pairing is approved with a chat, is opened in the
	// same transaction, its Connector and Chat the pairing's and its
	// SessionID that of the chat's conversation (0 when it has none): an
	// approval is never written without the row that tells the person.
	DecidePairing(ctx context.Context, code, state, by string, now time.Time, notice *OutboxItem) (Pairing, error)
	// Approved reports whether userID's pairing on connector is approved.
	Approved(ctx context.Context, connector, userID string) (bool, error)
	// RevokePairing removes userID's pairing on connector (approved or
	// not): they pair again to talk. ErrNotFound if there is none.
	RevokePairing(ctx context.Context, connector, userID string) error
}
