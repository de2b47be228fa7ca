// Package permit holds the tool calls that wait for a person's permission:
// an agent's policy marks a tool "ask", the turn that calls it waits here
// until someone grants or denies the call (agentd approve / deny, the
// local API) or its time runs out, which counts as a denial.
package permit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is returned by Resolve for an id that is not waiting.
var ErrNotFound = errors.New("no pending approval with that id")

// Request is a tool call waiting for permission.
type Request struct {
	ID        string          `json:"id"`
	Agent     string          `json:"agent"`
	Session   string          `json:"session"` // <agent>/<key>
	Turn      int64           `json:"turn"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Reason    string          `json:"reason"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	// Card is what the call will do (a tool.Card), when its tool says.
	Card json.RawMessage `json:"card,omitempty"`
}

// Decision is the answer to a Request.
type Decision struct {
	Granted bool   `json:"granted"`
	Expired bool   `json:"expired,omitempty"` // nobody answered before ExpiresAt
	Reason  string `json:"reason,omitempty"`
	By      string `json:"by,omitempty"`
	// Scope widens a grant: "" this call only, ScopeSession every call
	// of the tool in the session, ScopeAlways this exact call (the
	// card's Exact) in every session of the agent. Both are recorded as
	// grants that can be revoked.
	Scope string `json:"scope,omitempty"`
}

// Scopes of a grant (Decision.Scope).
const (
	ScopeSession = "session"
	ScopeAlways  = "always"
)

// Broker matches waiting calls with answers. The zero value is not
// usable; call New. It is safe for concurrent use.
type Broker struct {
	mu      sync.Mutex
	waiting map[string]*waiter
}

type waiter struct {
	req Request
	ch  chan Decision // buffered 1; receives exactly one decision
}

// New returns an empty broker.
func New() *Broker { return &Broker{waiting: map[string]*waiter{}} }

// Wait registers req and blocks until it is resolved, its ExpiresAt passes
// (a Decision with Expired set), or ctx is done (ctx's error). An id that
// is already waiting is an error.
func (b *Broker) Wait(ctx context.Context, req Request) (Decision, error) {
	w := &waiter{req: req, ch: make(chan Decision, 1)}
	b.mu.Lock()
	if _, dup := b.waiting[req.ID]; dup {
		b.mu.Unlock()
		return Decision{}, fmt.Errorf("permit: approval %s is already waiting", req.ID)
	}
	b.waiting[req.ID] = w
	b.mu.Unlock()
	defer b.remove(req.ID, w)

	t := time.NewTimer(time.Until(req.ExpiresAt))
	defer t.Stop()
	select {
	case d := <-w.ch:
		return d, nil
	case <-t.C:
		if b.remove(req.ID, w) {
			return Decision{Expired: true, Reason: "nobody answered in time"}, nil
		}
		return <-w.ch, nil // resolved just now
	case <-ctx.Done():
		if b.remove(req.ID, w) {
			return Decision{}, ctx.Err()
		}
		return <-w.ch, nil
	}
}

// remove takes w out of the waiting set if it is still there.
func (b *Broker) remove(id string, w *waiter) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting[id] != w {
		return false
	}
	delete(b.waiting, id)
	return true
}

// Resolve answers the request id. It fails with ErrNotFound if nothing
// waits under that id (never asked, already answered, or expired).
func (b *Broker) Resolve(id string, d Decision) error {
	b.mu.Lock()
	w, ok := b.waiting[id]
	if ok {
		delete(b.waiting, id)
	}
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("permit: %w: %s", ErrNotFound, id)
	}
	d.Expired = false
	w.ch <- d
	return nil
}

// Get returns the waiting request id.
func (b *Broker) Get(id string) (Request, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.waiting[id]
	if !ok {
		return Request{}, false
	}
	return w.req, true
}

// List returns the waiting requests, oldest first.
func (b *Broker) List() []Request {
	b.mu.Lock()
	out := make([]Request, 0, len(b.waiting))
	for _, w := range b.waiting {
		out = append(out, w.req)
	}
	b.mu.Unlock()
	slices.SortFunc(out, func(a, b Request) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}
