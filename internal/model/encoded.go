package model

import (
	"sync"
	"sync/atomic"
)

// Encoded keeps the wire encodings of a part of a request that does not
// change once made — a message of the conversation, a tool offered to the
// model — so that a client encodes it once instead of on every request
// that carries it (a turn's requests carry the whole conversation and every
// tool again). Each client keeps its own format's encoding under its own
// name.
//
// Whoever changes a message or a tool spec after it was sent gives it a new
// Encoded, or none: an Encoded is never cleared, and copies of a Message
// share it. The zero value is ready to use and safe for concurrent use; a
// nil *Encoded keeps nothing.
type Encoded struct {
	mu  sync.Mutex                 // serialises Put
	enc atomic.Pointer[[]encoding] // never changed once stored: Put stores a new slice
}

type encoding struct {
	format string
	b      []byte
}

// Get returns the encoding kept for format, nil if none is.
func (e *Encoded) Get(format string) []byte {
	if e == nil {
		return nil
	}
	if p := e.enc.Load(); p != nil {
		for _, x := range *p {
			if x.format == format {
				return x.b
			}
		}
	}
	return nil
}

// Put keeps b as the encoding for format. b must not be changed after.
func (e *Encoded) Put(format string, b []byte) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var enc []encoding
	if p := e.enc.Load(); p != nil {
		enc = make([]encoding, 0, len(*p)+1)
		for _, x := range *p {
			if x.format != format {
				enc = append(enc, x)
			}
		}
	}
	enc = append(enc, encoding{format, b})
	e.enc.Store(&enc)
}

// Equal reports true: kept encodings are not part of the value of a
// message or a tool, so two messages that differ only in them are equal
// (as go-cmp compares them).
func (e *Encoded) Equal(*Encoded) bool { return true }
