package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Character is an agent's character file as an identity server keeps it:
// the file as registered (JSON, never a key or secret), under the public
// key whose holder registered it.
type Character struct {
	Pubkey    string          // base58 ed25519 public key
	Name      string          // the character's name (not unique: two agents may share one)
	File      json.RawMessage // the character file
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IdentityLog is one message lifecycle an agent logged at an identity
// server: Seq numbers an agent's logs from 1 without gaps, in the order
// they arrived; (Pubkey, MessageID) is unique.
type IdentityLog struct {
	Pubkey    string
	Seq       int64
	MessageID string
	Lifecycle json.RawMessage // the lifecycle object, without signatures
	CreatedAt time.Time
}

// IdentityStore keeps an identity server's characters and logs. Both
// stores implement it (optional, found by type assertion), so many agentd
// nodes may share one server's tables on PostgreSQL.
type IdentityStore interface {
	// PutCharacter stores c under c.Pubkey, replacing the file and name of
	// a character already there (its CreatedAt stays), and returns the row
	// as stored.
	PutCharacter(ctx context.Context, c Character) (Character, error)
	// Character returns the character of pubkey; ErrNotFound if none.
	Character(ctx context.Context, pubkey string) (Character, error)
	// CharactersNamed lists the characters called name, newest update
	// first.
	CharactersNamed(ctx context.Context, name string) ([]Character, error)
	// AppendIdentityLog appends l (Pubkey, MessageID, Lifecycle,
	// CreatedAt) to its agent's log with the next Seq, unless a log of its
	// (Pubkey, MessageID) exists: then that row is returned, created false,
	// and nothing is written.
	AppendIdentityLog(ctx context.Context, l IdentityLog) (IdentityLog, bool, error)
	// IdentityLogs lists pubkey's logs with Seq above after, in order, at
	// most limit (0: 100).
	IdentityLogs(ctx context.Context, pubkey string, after int64, limit int) ([]IdentityLog, error)
}

// IdentityOutboxItem is one message lifecycle a node queued for an
// identity server: delivered (SentAt set) in ID order per server and key.
type IdentityOutboxItem struct {
	ID     int64
	Server string // the identity server's URL
	// Pubkey is the key that signs its delivery: the agent's key on the
	// node that queued it (nodes sharing a store may hold different keys).
	Pubkey    string
	Agent     string // the agent's id
	Turn      int64  // the inbox item whose lifecycle it is; (Server, Agent, Turn) is unique
	Lifecycle json.RawMessage
	Tries     int
	Error     string // the last delivery error
	CreatedAt time.Time
	SentAt    time.Time
}

// IdentityOutbox is a node's durable queue of lifecycles for identity
// servers. Both stores implement it (optional, found by type assertion).
type IdentityOutbox interface {
	// QueueIdentityLog inserts it unless a row of its (Server, Agent,
	// Turn) exists, and returns the row as stored and whether it was
	// created.
	QueueIdentityLog(ctx context.Context, it IdentityOutboxItem) (IdentityOutboxItem, bool, error)
	// DueIdentityLogs returns up to limit undelivered rows of server and
	// pubkey, oldest first.
	DueIdentityLogs(ctx context.Context, server, pubkey string, limit int) ([]IdentityOutboxItem, error)
	// MarkIdentityLog records a delivery of row id: sent, with the time,
	// or failed, counting a try and keeping errText.
	MarkIdentityLog(ctx context.Context, id int64, sentAt time.Time, errText string) error
	// IdentityTurns lists up to limit turns of agent's sessions that ended
	// (done, neither a reset nor a silent message), with an id above after
	// and no row queued for server, oldest first: the turns whose end a
	// crash kept from the queue.
	IdentityTurns(ctx context.Context, server, agent string, after int64, limit int) ([]int64, error)
	// FirstIdentityTurn is the lowest turn ever queued of agent for
	// server, 0 if none: where the sweep for missed turns starts.
	FirstIdentityTurn(ctx context.Context, server, agent string) (int64, error)
}

// MaxIdentityDoc bounds a character file and a lifecycle object.
const MaxIdentityDoc = 1 << 20

// CheckIdentityText reports what is wrong with a short identity field
// (a pubkey, name, message id, server URL, agent id): required when
// required, valid UTF-8 without NUL, at most MaxExtensionKey bytes (a URL
// four times that).
func CheckIdentityText(what, s string, required bool) error {
	max := MaxExtensionKey
	if what == "server" {
		max *= 4
	}
	switch {
	case required && s == "":
		return fmt.Errorf("%s is empty", what)
	case len(s) > max:
		return fmt.Errorf("%s is longer than %d bytes", what, max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fmt.Errorf("%s holds NUL", what)
		}
	}
	return nil
}

// CheckIdentityDoc reports what is wrong with a character file or a
// lifecycle object: it must be a JSON object of at most MaxIdentityDoc
// bytes.
func CheckIdentityDoc(what string, doc json.RawMessage) error {
	if len(doc) > MaxIdentityDoc {
		return fmt.Errorf("%s is larger than %d bytes", what, MaxIdentityDoc)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil || m == nil {
		return fmt.Errorf("%s is not a JSON object", what)
	}
	return nil
}

// CheckCharacter checks a character to store and rounds its time as
// stored.
func CheckCharacter(c *Character) error {
	if err := CheckIdentityText("pubkey", c.Pubkey, true); err != nil {
		return err
	}
	if err := CheckIdentityText("name", c.Name, false); err != nil {
		return err
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = time.Now()
	}
	c.UpdatedAt = c.UpdatedAt.UTC()
	return CheckIdentityDoc("character file", c.File)
}

// CheckIdentityLog checks a log to append and rounds its time.
func CheckIdentityLog(l *IdentityLog) error {
	if err := CheckIdentityText("pubkey", l.Pubkey, true); err != nil {
		return err
	}
	if err := CheckIdentityText("message id", l.MessageID, true); err != nil {
		return err
	}
	if l.CreatedAt.IsZero() {
		l.CreatedAt = time.Now()
	}
	l.CreatedAt = l.CreatedAt.UTC()
	return CheckIdentityDoc("lifecycle", l.Lifecycle)
}

// CheckIdentityOutboxItem checks an outbox row to queue.
func CheckIdentityOutboxItem(it *IdentityOutboxItem) error {
	if err := CheckIdentityText("server", it.Server, true); err != nil {
		return err
	}
	if err := CheckIdentityText("agent", it.Agent, true); err != nil {
		return err
	}
	if err := CheckIdentityText("pubkey", it.Pubkey, true); err != nil {
		return err
	}
	if it.Turn <= 0 {
		return fmt.Errorf("turn %d is not an inbox item", it.Turn)
	}
	if it.CreatedAt.IsZero() {
		it.CreatedAt = time.Now()
	}
	return CheckIdentityDoc("lifecycle", it.Lifecycle)
}

// IdentityLimit is limit, 100 when not positive, at most 1000.
func IdentityLimit(limit int) int {
	if limit <= 0 {
		return 100
	}
	return min(limit, 1000)
}
