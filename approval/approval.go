// Package approval lets a tool server check that a call really comes from
// an agentd agent, about a message the agent received, and is the call the
// agent meant to make.
//
// Every agentd agent has an ed25519 key. When an agent calls a tool server
// (an MCP server, say) on behalf of a message, it sends an [Approval] bound
// to that one call: its signature over the message, the time it came in,
// the message id and the channel id, together with the server it is for
// (the audience), the tool's name, a hash of the arguments and the time the
// approval was signed, as the call was made. The approval travels in the
// request's _meta object under [MetaKey]. A server takes it out with
// [FromMeta] and checks it with a [Verifier], against the tool name and
// arguments it received; the verifier also rejects other audiences, unknown
// keys, approvals not signed recently and replays.
//
// The signed bytes ([Approval.Payload]) are a simple length-prefixed
// encoding, and the arguments hash is the SHA-256 of their RFC 8785
// canonical JSON ([HashArguments]), so the check is easy to reproduce in
// any language; see docs/approval.md in the agentd repository.
package approval

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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

// Version is the approval format this package writes and accepts. Version 1
// approvals, which were not bound to a call, and version 2 approvals, which
// did not say when they were signed, are refused.
const Version = 3

// DomainTag starts every signed approval payload, so that an approval
// signature cannot be mistaken for a signature over anything else, nor one
// of another version for this one.
const DomainTag = "agentd-approval-v3"

// MessageDomainTag starts the bytes of an agent's signature over a message
// alone ([SignMessage]), which agentd makes as every message lifecycle
// starts and shows only as a [Fingerprint]. It differs from DomainTag, so
// such a signature is never an approval.
const MessageDomainTag = "agentd-message-v1"

// Errors reported by [Approval.Check], [FromMeta] and [Verifier.Verify].
// The returned errors wrap one of these with details.
var (
	// ErrMissing means a _meta object holds no approval.
	ErrMissing = errors.New("approval: missing")
	// ErrMalformed means the approval cannot be read: a bad version, a
	// public key or signature that is not base58 or has the wrong length,
	// a missing message id, audience, tool or signedAt, JSON that is not an
	// approval object, or arguments that are not JSON.
	ErrMalformed = errors.New("approval: malformed")
	// ErrUntrusted means the approval is signed by a key the verifier
	// does not trust.
	ErrUntrusted = errors.New("approval: untrusted key")
	// ErrMismatch means the approval is for another call: another server
	// (audience), another tool or other arguments than the ones received.
	ErrMismatch = errors.New("approval: not for this call")
	// ErrSignature means the signature does not match the public key and
	// the approval's fields: it was tampered with or signed by another key.
	ErrSignature = errors.New("approval: bad signature")
	// ErrExpired means the approval was signed too long ago, or too far in
	// the future.
	ErrExpired = errors.New("approval: expired")
	// ErrReplayed means the verifier has already accepted this approval's
	// call.
	ErrReplayed = errors.New("approval: replayed")
	// ErrCacheFull means the verifier's replay cache holds as many
	// unexpired approvals as it may, so it refuses new ones rather than
	// forget old ones.
	ErrCacheFull = errors.New("approval: replay cache full")
)

// Message is what an agent acts on: the message's text, when it came in,
// its id and its channel (may be "").
type Message struct {
	Text      string
	CreatedAt time.Time
	ID        string
	ChannelID string
}

// Approval is an agent's signature over a message it acts on and the one
// tool call it makes for it. Its JSON form is the wire object sent to the
// tool server.
type Approval struct {
	Version int    `json:"version"`      // 3
	Pubkey  string `json:"daemonPubkey"` // base58 ed25519 public key (Solana format)
	Message string `json:"message"`
	// CreatedAt is when the message came in, for the record: a call may
	// come long after (a turn that waited for a person, or in a queue).
	// Encoded RFC 3339 with millisecond precision, UTC, as SignedAt.
	CreatedAt time.Time `json:"createdAt"`
	MessageID string    `json:"messageId"`
	ChannelID string    `json:"channelId"` // may be ""
	// Audience is the tool server the approval is for: the URL of an http
	// or sse server (without its query), or the name a stdio server has in
	// the agent's configuration.
	Audience string `json:"audience"`
	// Tool is the tool's name on that server.
	Tool string `json:"tool"`
	// ArgumentsHash is HashArguments of the call's arguments.
	ArgumentsHash string `json:"argumentsHash"`
	// SignedAt is when the approval was signed, as the call was made: what
	// a Verifier checks freshness against.
	SignedAt  time.Time `json:"signedAt"`
	Signature string    `json:"signature"` // base58 of the 64-byte ed25519 signature
}

// Payload returns the canonical bytes that are signed: [DomainTag], then the
// message, createdAt as the decimal string of Unix milliseconds, the message
// id, the channel id, the audience, the tool, the arguments hash and
// signedAt in Unix milliseconds, each written as a 4-byte big-endian length
// and the bytes. It returns nil if a field is longer than 4 GiB - 1 bytes.
func (a *Approval) Payload() []byte {
	return payload(DomainTag, a.Message, ms(a.CreatedAt), a.MessageID, a.ChannelID, a.Audience, a.Tool, a.ArgumentsHash, ms(a.SignedAt))
}

// MessagePayload returns the bytes [SignMessage] signs: [MessageDomainTag],
// then the message, createdAt in Unix milliseconds, the message id and the
// channel id, encoded as in [Approval.Payload].
func MessagePayload(m Message) []byte {
	return payload(MessageDomainTag, m.Text, ms(m.CreatedAt), m.ID, m.ChannelID)
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// toMillis is t truncated to milliseconds, in UTC: what JSON carries.
func toMillis(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }

func payload(tag string, fields ...string) []byte {
	n := len(tag)
	for _, f := range fields {
		if uint64(len(f)) > math.MaxUint32 {
			return nil
		}
		n += 4 + len(f)
	}
	b := make([]byte, 0, n)
	b = append(b, tag...)
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// Sign returns the approval of message m for one call, signed with key at
// signedAt (the time the call is made; time.Now() outside tests): the tool
// tool of the server audience, with arguments (as [HashArguments] takes
// them). The times are truncated to milliseconds and kept in UTC, so the
// approval still verifies after a round trip through JSON. key must be a
// 64-byte ed25519 private key, and signedAt not zero; the error wraps
// [ErrMalformed].
func Sign(key ed25519.PrivateKey, m Message, signedAt time.Time, audience, tool string, arguments any) (*Approval, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: the key is %d bytes, want %d", ErrMalformed, len(key), ed25519.PrivateKeySize)
	}
	if signedAt.IsZero() {
		return nil, fmt.Errorf("%w: no signedAt", ErrMalformed)
	}
	h, err := HashArguments(arguments)
	if err != nil {
		return nil, err
	}
	a := &Approval{
		Version:       Version,
		Pubkey:        base58.Encode(key[ed25519.SeedSize:]),
		Message:       m.Text,
		CreatedAt:     toMillis(m.CreatedAt),
		MessageID:     m.ID,
		ChannelID:     m.ChannelID,
		Audience:      audience,
		Tool:          tool,
		ArgumentsHash: h,
		SignedAt:      toMillis(signedAt),
	}
	p := a.Payload()
	if p == nil {
		return nil, fmt.Errorf("%w: a field is too long", ErrMalformed)
	}
	a.Signature = base58.Encode(ed25519.Sign(key, p))
	return a, nil
}

// SignMessage signs the message alone ([MessagePayload]) and returns the
// signature in base58. It is not an approval: no verifier accepts it.
func SignMessage(key ed25519.PrivateKey, m Message) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("%w: the key is %d bytes, want %d", ErrMalformed, len(key), ed25519.PrivateKeySize)
	}
	p := MessagePayload(m)
	if p == nil {
		return "", fmt.Errorf("%w: a field is too long", ErrMalformed)
	}
	return base58.Encode(ed25519.Sign(key, p)), nil
}

// Fingerprint identifies a signature without revealing it: the first 8
// bytes of the SHA-256 of its base58 text, in hex. agentd shows it where it
// would otherwise show the signature (lifecycle objects, the event log), so
// that what a tool server received can be matched with agentd's record.
func Fingerprint(signature string) string {
	sum := sha256.Sum256([]byte(signature))
	return hex.EncodeToString(sum[:8])
}

// Check reports whether the approval is well formed, is for the call of
// tool with arguments on the server audience, and is signed by Pubkey. It
// returns an error wrapping [ErrMalformed], [ErrMismatch] or
// [ErrSignature], or nil. It does not look at the time or at earlier
// approvals, and it does not restrict the key; a [Verifier] does.
func (a *Approval) Check(audience, tool string, arguments any) error {
	pub, err := a.parse()
	if err != nil {
		return err
	}
	if err := a.matches([]string{audience}, tool, arguments); err != nil {
		return err
	}
	return a.checkSignature(pub)
}

// parse checks what needs no call to compare with and returns the key.
func (a *Approval) parse() (ed25519.PublicKey, error) {
	if a == nil {
		return nil, fmt.Errorf("%w: no approval", ErrMalformed)
	}
	if a.Version != Version {
		return nil, fmt.Errorf("%w: unsupported version %d (want %d)", ErrMalformed, a.Version, Version)
	}
	pub, err := ParsePublicKey(a.Pubkey)
	if err != nil {
		return nil, err
	}
	switch {
	case a.MessageID == "":
		return nil, fmt.Errorf("%w: missing messageId", ErrMalformed)
	case a.Audience == "":
		return nil, fmt.Errorf("%w: missing audience", ErrMalformed)
	case a.Tool == "":
		return nil, fmt.Errorf("%w: missing tool", ErrMalformed)
	case a.SignedAt.IsZero():
		return nil, fmt.Errorf("%w: missing signedAt", ErrMalformed)
	}
	return pub, nil
}

// matches checks that the approval is for a call of tool with arguments
// on one of audiences.
func (a *Approval) matches(audiences []string, tool string, arguments any) error {
	ok := false
	for _, au := range audiences {
		ok = ok || au != "" && au == a.Audience
	}
	if !ok {
		if len(audiences) == 0 {
			return fmt.Errorf("%w: the verifier names no audience (VerifierOptions.Audience)", ErrMismatch)
		}
		return fmt.Errorf("%w: it is for the server %q", ErrMismatch, a.Audience)
	}
	if a.Tool != tool {
		return fmt.Errorf("%w: it is for the tool %q, not %q", ErrMismatch, a.Tool, tool)
	}
	h, err := HashArguments(arguments)
	if err != nil {
		return err
	}
	if h != a.ArgumentsHash {
		return fmt.Errorf("%w: it is for other arguments", ErrMismatch)
	}
	return nil
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

// timeLayout is RFC 3339 with exactly three fractional digits.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// formatTime writes t as the wire object does; field names it in errors.
func formatTime(field string, t time.Time) (string, error) {
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return "", fmt.Errorf("approval: %s year %d is outside 0-9999", field, y)
	}
	return t.Format(timeLayout), nil
}

// MarshalJSON encodes the approval as its wire object, with createdAt and
// signedAt in UTC and millisecond precision.
func (a Approval) MarshalJSON() ([]byte, error) {
	created, err := formatTime("createdAt", a.CreatedAt)
	if err != nil {
		return nil, err
	}
	signed, err := formatTime("signedAt", a.SignedAt)
	if err != nil {
		return nil, err
	}
	type wire struct {
		Version       int    `json:"version"`
		Pubkey        string `json:"daemonPubkey"`
		Message       string `json:"message"`
		CreatedAt     string `json:"createdAt"`
		MessageID     string `json:"messageId"`
		ChannelID     string `json:"channelId"`
		Audience      string `json:"audience"`
		Tool          string `json:"tool"`
		ArgumentsHash string `json:"argumentsHash"`
		SignedAt      string `json:"signedAt"`
		Signature     string `json:"signature"`
	}
	return json.Marshal(wire{
		Version:       a.Version,
		Pubkey:        a.Pubkey,
		Message:       a.Message,
		CreatedAt:     created,
		MessageID:     a.MessageID,
		ChannelID:     a.ChannelID,
		Audience:      a.Audience,
		Tool:          a.Tool,
		ArgumentsHash: a.ArgumentsHash,
		SignedAt:      signed,
		Signature:     a.Signature,
	})
}
