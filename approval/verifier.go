package approval

import (
	"container/heap"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// Defaults of [VerifierOptions].
const (
	DefaultMaxAge     = 5 * time.Minute
	DefaultMaxSkew    = 30 * time.Second
	DefaultMaxEntries = 100000
)

// VerifierOptions configures a [Verifier]. A nil *VerifierOptions, or a
// zero field, means the default.
type VerifierOptions struct {
	// MaxAge is how long ago an approval may have been signed (its
	// signedAt; default 5m). It also bounds how long the verifier
	// remembers an accepted approval. How long ago the message came in
	// (createdAt) does not matter: a call may come hours after its
	// message, when a person approved it late.
	MaxAge time.Duration
	// MaxSkew is how far in the future an approval's signedAt may be, to
	// tolerate clocks that differ (default 30s).
	MaxSkew time.Duration
	// Audience lists the names this server answers to: its URL as agents
	// are configured with it (without a query), and for a stdio server the
	// name agents give it. An approval for any other audience is refused
	// with ErrMismatch; with no Audience, every approval is.
	Audience []string
	// Trusted lists the base58 public keys whose approvals are accepted.
	// Empty means any key. An entry that is not a valid public key matches
	// nothing; it never widens the list.
	Trusted []string
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// MaxEntries is the most approvals the replay cache holds (default
	// 100000). When it is full of unexpired approvals, Verify refuses new
	// ones with ErrCacheFull.
	MaxEntries int
}

// A Verifier checks the approvals a tool server receives and accepts each
// call once. It is safe for concurrent use.
//
// A call is identified by the public key, the channel id, the message id,
// the audience, the tool and the arguments hash together, so a replayed
// approval is always recognised while two agents, two channels or two
// different calls for one message are told apart. The verifier remembers
// an accepted call until its approval expires (signedAt + MaxAge), so its
// memory is bounded by MaxEntries fixed-size entries.
type Verifier struct {
	maxAge     time.Duration
	maxSkew    time.Duration
	now        func() time.Time
	maxEntries int
	audience   []string
	restricted bool                                     // Trusted was given
	trusted    map[[ed25519.PublicKeySize]byte]struct{} // nil when !restricted

	mu   sync.Mutex
	seen map[replayKey]struct{}
	byAt replayHeap // the entries of seen, oldest signedAt first
	// floor is the latest pruning cutoff: approvals signed before it may
	// have been forgotten, so they are refused as expired even if the clock
	// has since gone back.
	floor time.Time
}

// replayKey is a hash of (public key, channel id, message id, audience,
// tool, arguments hash): fixed size, whatever the length of the fields.
type replayKey [sha256.Size]byte

type replayEntry struct {
	at  time.Time
	key replayKey
}

// NewVerifier returns a Verifier with options o, which may be nil.
func NewVerifier(o *VerifierOptions) *Verifier {
	if o == nil {
		o = &VerifierOptions{}
	}
	v := &Verifier{
		maxAge:     o.MaxAge,
		maxSkew:    o.MaxSkew,
		now:        o.Now,
		maxEntries: o.MaxEntries,
		audience:   append([]string(nil), o.Audience...),
		seen:       make(map[replayKey]struct{}),
	}
	if v.maxAge <= 0 {
		v.maxAge = DefaultMaxAge
	}
	if v.maxSkew <= 0 {
		v.maxSkew = DefaultMaxSkew
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.maxEntries <= 0 {
		v.maxEntries = DefaultMaxEntries
	}
	if len(o.Trusted) > 0 {
		v.restricted = true
		v.trusted = make(map[[ed25519.PublicKeySize]byte]struct{}, len(o.Trusted))
		for _, s := range o.Trusted {
			if pub, err := ParsePublicKey(s); err == nil {
				v.trusted[[ed25519.PublicKeySize]byte(pub)] = struct{}{}
			}
		}
	}
	return v
}

// Verify checks the approval a server received with a call of tool with
// arguments (as [HashArguments] takes them: the request's raw arguments,
// or their decoded values), and records the call as seen. It returns nil
// if the approval is well formed, signed by a trusted key, for one of the
// verifier's audiences, for this tool and these arguments, signed no more
// than MaxAge ago and no more than MaxSkew in the future, and its call has
// not been accepted before. Otherwise the error wraps one of
// [ErrMalformed], [ErrUntrusted], [ErrMismatch], [ErrExpired],
// [ErrSignature], [ErrReplayed] or [ErrCacheFull], checked in that order.
func (v *Verifier) Verify(a *Approval, tool string, arguments any) error {
	pub, err := a.parse()
	if err != nil {
		return err
	}
	if v.restricted {
		if _, ok := v.trusted[[ed25519.PublicKeySize]byte(pub)]; !ok {
			return fmt.Errorf("%w: %s", ErrUntrusted, a.Pubkey)
		}
	}
	if err := a.matches(v.audience, tool, arguments); err != nil {
		return err
	}
	now := v.now()
	if err := v.checkTime(a.SignedAt, now); err != nil {
		return err
	}
	if err := a.checkSignature(pub); err != nil {
		return err
	}
	key := newReplayKey(pub, a.ChannelID, a.MessageID, a.Audience, a.Tool, a.ArgumentsHash)

	v.mu.Lock()
	defer v.mu.Unlock()
	v.prune(now)
	if a.SignedAt.Before(v.floor) {
		return fmt.Errorf("%w: signed %s, before %s", ErrExpired, a.SignedAt.UTC().Format(timeLayout), v.floor.UTC().Format(timeLayout))
	}
	if _, ok := v.seen[key]; ok {
		return fmt.Errorf("%w: the call of %s for message %q in channel %q", ErrReplayed, a.Tool, a.MessageID, a.ChannelID)
	}
	if len(v.seen) >= v.maxEntries {
		return fmt.Errorf("%w: %d unexpired approvals", ErrCacheFull, len(v.seen))
	}
	v.seen[key] = struct{}{}
	heap.Push(&v.byAt, replayEntry{at: a.SignedAt, key: key})
	return nil
}

func (v *Verifier) checkTime(signed, now time.Time) error {
	if age := now.Sub(signed); age > v.maxAge {
		return fmt.Errorf("%w: signed %s ago, more than %s", ErrExpired, age.Round(time.Millisecond), v.maxAge)
	} else if -age > v.maxSkew {
		return fmt.Errorf("%w: signed %s in the future, more than %s", ErrExpired, (-age).Round(time.Millisecond), v.maxSkew)
	}
	return nil
}

// prune forgets the approvals signed before now - MaxAge, which Verify
// refuses as expired anyway. v.mu must be held.
func (v *Verifier) prune(now time.Time) {
	cutoff := now.Add(-v.maxAge)
	if cutoff.After(v.floor) {
		v.floor = cutoff
	}
	for len(v.byAt) > 0 && v.byAt[0].at.Before(v.floor) {
		e := heap.Pop(&v.byAt).(replayEntry)
		delete(v.seen, e.key)
	}
}

// Len returns how many accepted approvals the verifier remembers.
func (v *Verifier) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.seen)
}

func newReplayKey(pub ed25519.PublicKey, fields ...string) replayKey {
	n := len(pub)
	for _, f := range fields {
		n += 8 + len(f)
	}
	b := make([]byte, 0, n)
	b = append(b, pub...)
	for _, f := range fields {
		b = binary.BigEndian.AppendUint64(b, uint64(len(f)))
		b = append(b, f...)
	}
	return sha256.Sum256(b)
}

// replayHeap is a min-heap of entries by signedAt.
type replayHeap []replayEntry

func (h replayHeap) Len() int           { return len(h) }
func (h replayHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h replayHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *replayHeap) Push(x any)        { *h = append(*h, x.(replayEntry)) }
func (h *replayHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
