// Package approval lets a tool server check that a request really comes from
// an agentd agent.
//
// Every agentd agent has an ed25519 key. When an agent calls a tool server
// (an MCP server, say) on behalf of a message, it sends an [Approval]: its
// signature over the message, the time it was created, the message id and
// the channel id. The approval travels in the request's _meta object under
// [MetaKey]. A server takes it out with [FromMeta] and checks it with a
// [Verifier], which also rejects unknown keys, stale approvals and replays.
//
// The signed bytes ([Approval.Payload]) are a simple length-prefixed
// encoding, so the check is easy to reproduce in any language; see
// docs/approval.md in the agentd repository.
package approval

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/mr-tron/base58"
)

// MetaKey is the key in an MCP request's _meta object that carries the
// approval object.
const MetaKey = "agentd/approval"

// Version is the approval format this package writes and accepts.
const Version = 1

// DomainTag starts every signed payload, so that an approval signature
// cannot be mistaken for a signature over anything else.
const DomainTag = "agentd-approval-v1"

// Errors reported by [Approval.Check], [FromMeta] and [Verifier.Verify].
// The returned errors wrap one of these with details.
var (
	// ErrMissing means a _meta object holds no approval.
	ErrMissing = errors.New("approval: missing")
	// ErrMalformed means the approval cannot be read: a bad version, a
	// public key or signature that is not base58 or has the wrong length,
	// a missing message id, or JSON that is not an approval object.
	ErrMalformed = errors.New("approval: malformed")
	// ErrUntrusted means the approval is signed by a key the verifier
	// does not trust.
	ErrUntrusted = errors.New("approval: untrusted key")
	// ErrSignature means the signature does not match the public key and
	// the approval's fields: it was tampered with or signed by another key.
	ErrSignature = errors.New("approval: bad signature")
	// ErrExpired means the approval was created too long ago, or too far
	// in the future.
	ErrExpired = errors.New("approval: expired")
	// ErrReplayed means the verifier has already accepted an approval for
	// this message.
	ErrReplayed = errors.New("approval: replayed")
	// ErrCacheFull means the verifier's replay cache holds as many
	// unexpired approvals as it may, so it refuses new ones rather than
	// forget old ones.
	ErrCacheFull = errors.New("approval: replay cache full")
)

// Approval is an agent's signature over a message it acts on. Its JSON form
// is the wire object sent to tool servers.
type Approval struct {
	Version   int       `json:"version"`      // 1
	Pubkey    string    `json:"daemonPubkey"` // base58 ed25519 public key (Solana format)
	Message   string    `json:"message"`
	CreatedAt time.Time `json:"createdAt"` // encoded RFC 3339 with millisecond precision, UTC
	MessageID string    `json:"messageId"`
	ChannelID string    `json:"channelId"` // may be ""
	Signature string    `json:"signature"` // base58 of the 64-byte ed25519 signature
}

// Payload returns the canonical bytes that are signed: [DomainTag], then the
// message, createdAt as the decimal string of Unix milliseconds, the message
// id and the channel id, each written as a 4-byte big-endian length and the
// bytes. It returns nil if a field is longer than 4 GiB - 1 bytes.
func (a *Approval) Payload() []byte {
	return payload(a.Message, a.CreatedAt.UnixMilli(), a.MessageID, a.ChannelID)
}

func payload(message string, createdMillis int64, messageID, channelID string) []byte {
	var msBuf [20]byte
	ms := strconv.AppendInt(msBuf[:0], createdMillis, 10)
	fields := [...]int{len(message), len(ms), len(messageID), len(channelID)}
	n := len(DomainTag)
	for _, l := range fields {
		if uint64(l) > math.MaxUint32 {
			return nil
		}
		n += 4 + l
	}
	b := make([]byte, 0, n)
	b = append(b, DomainTag...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(message)))
	b = append(b, message...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ms)))
	b = append(b, ms...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(messageID)))
	b = append(b, messageID...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(channelID)))
	b = append(b, channelID...)
	return b
}

// Sign returns the approval of message signed with key. createdAt is
// truncated to milliseconds and kept in UTC, so the approval still verifies
// after a round trip through JSON.
//
// key must be a 64-byte ed25519 private key. With any other key, or a field
// too long to encode, Sign returns an approval without a public key or
// signature, which [Approval.Check] rejects as malformed.
func Sign(key ed25519.PrivateKey, message string, createdAt time.Time, messageID, channelID string) *Approval {
	a := &Approval{
		Version:   Version,
		Message:   message,
		CreatedAt: time.UnixMilli(createdAt.UnixMilli()).UTC(),
		MessageID: messageID,
		ChannelID: channelID,
	}
	if len(key) != ed25519.PrivateKeySize {
		return a
	}
	p := a.Payload()
	if p == nil {
		return a
	}
	a.Pubkey = base58.Encode(key[ed25519.SeedSize:])
	a.Signature = base58.Encode(ed25519.Sign(key, p))
	return a
}

// Check reports whether the signature matches Pubkey over [Approval.Payload].
// It returns an error wrapping [ErrMalformed] or [ErrSignature], or nil. It
// does not look at the time or at earlier approvals; a [Verifier] does.
func (a *Approval) Check() error {
	if a == nil {
		return fmt.Errorf("%w: no approval", ErrMalformed)
	}
	if a.Version != Version {
		return fmt.Errorf("%w: unsupported version %d (want %d)", ErrMalformed, a.Version, Version)
	}
	pub, err := ParsePublicKey(a.Pubkey)
	if err != nil {
		return err
	}
	return a.checkSignature(pub)
}

// checkSignature checks the signature against pub, which the caller has
// parsed from a.Pubkey.
func (a *Approval) checkSignature(pub ed25519.PublicKey) error {
	sig, err := decode58(a.Signature, ed25519.SignatureSize, "signature")
	if err != nil {
		return err
	}
	p := a.Payload()
	if p == nil {
		return fmt.Errorf("%w: a field is too long", ErrMalformed)
	}
	if !ed25519.Verify(pub, p, sig) {
		return ErrSignature
	}
	return nil
}

// ParsePublicKey decodes a base58 ed25519 public key (Solana format). The
// error wraps [ErrMalformed].
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := decode58(s, ed25519.PublicKeySize, "public key")
	if err != nil {
		return nil, err
	}
	return ed25519.PublicKey(b), nil
}

// EncodePublicKey returns the base58 form (Solana format) of an ed25519
// public key.
func EncodePublicKey(pub ed25519.PublicKey) string {
	return base58.Encode(pub)
}

// maxBase58 bounds the length of a base58 string decoded here: 64 bytes
// take at most 88 digits.
const maxBase58 = 128

func decode58(s string, size int, what string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: missing %s", ErrMalformed, what)
	}
	if len(s) > maxBase58 {
		return nil, fmt.Errorf("%w: %s is too long", ErrMalformed, what)
	}
	b, err := base58.Decode(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not base58", ErrMalformed, what)
	}
	if len(b) != size {
		return nil, fmt.Errorf("%w: %s is %d bytes, want %d", ErrMalformed, what, len(b), size)
	}
	return b, nil
}

// createdAtLayout is RFC 3339 with exactly three fractional digits.
const createdAtLayout = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON encodes the approval as its wire object, with createdAt in
// UTC and millisecond precision.
func (a Approval) MarshalJSON() ([]byte, error) {
	t := a.CreatedAt.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("approval: createdAt year %d is outside 0-9999", y)
	}
	type wire struct {
		Version   int    `json:"version"`
		Pubkey    string `json:"daemonPubkey"`
		Message   string `json:"message"`
		CreatedAt string `json:"createdAt"`
		MessageID string `json:"messageId"`
		ChannelID string `json:"channelId"`
		Signature string `json:"signature"`
	}
	return json.Marshal(wire{
		Version:   a.Version,
		Pubkey:    a.Pubkey,
		Message:   a.Message,
		CreatedAt: t.Format(createdAtLayout),
		MessageID: a.MessageID,
		ChannelID: a.ChannelID,
		Signature: a.Signature,
	})
}
