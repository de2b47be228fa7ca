package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"agentd/internal/store"
)

// ParseAddress splits "<agent>/<key>". The key may not be empty; neither
// part may contain "/" or control characters.
func ParseAddress(addr string) (agentID, key string, err error) {
	a, k, ok := strings.Cut(addr, "/")
	if !ok || a == "" || k == "" || strings.Contains(k, "/") || hasControl(addr) || len(addr) > 512 || !utf8.ValidString(addr) {
		return "", "", fmt.Errorf("%w %q: want <agent>/<key>, e.g. assistant/chat:alice", ErrBadAddress, addr)
	}
	return a, k, nil
}

func hasControl(s string) bool {
	for _, c := range s {
		if c < 0x20 || (c >= 0x7f && c <= 0x9f) {
			return true
		}
	}
	return false
}

// address parses a session address and checks that its agent exists.
func (r *Runtime) address(addr string) (agentID, key string, err error) {
	if agentID, key, err = ParseAddress(addr); err != nil {
		return "", "", err
	}
	if _, ok := r.o.Agents.Get(agentID); !ok {
		return "", "", r.noAgent(agentID)
	}
	return agentID, key, nil
}

// noAgent says why there is no definition of agent id: its file is
// invalid, or there is no such agent.
func (r *Runtime) noAgent(id string) error {
	if f, ok := r.o.Agents.(AgentFiles); ok {
		if err := f.FileError(id); err != nil {
			return fmt.Errorf("agent %q: %w: %w", id, ErrInvalidAgent, err)
		}
	}
	return fmt.Errorf("%w %q", ErrUnknownAgent, id)
}

// lookup returns the in-memory session for an address, loading or creating
// it in the store.
func (r *Runtime) lookup(ctx context.Context, agentID, key string) (*session, error) {
	addr := agentID + "/" + key
	if sess := r.inMemory(addr); sess != nil {
		return sess, nil
	}
	s, _, err := r.st.Session(ctx, agentID, key)
	if err != nil {
		return nil, fmt.Errorf("runtime: session %s: %w", addr, err)
	}
	return r.session(s), nil
}

// existing returns the in-memory session at addr, whose agent must exist,
// for a session that exists in the store, or ErrNoSession: unlike lookup,
// it creates none.
func (r *Runtime) existing(ctx context.Context, addr string) (*session, error) {
	agentID, key, err := r.address(addr)
	if err != nil {
		return nil, err
	}
	if sess := r.inMemory(addr); sess != nil {
		return sess, nil
	}
	s, err := r.st.SessionByAddress(ctx, agentID, key)
	if err != nil {
		return nil, sessionErr(addr, err)
	}
	return r.session(s), nil
}

// inMemory returns the session at addr if it is in memory, marking it
// recently used; nil if it is not.
func (r *Runtime) inMemory(addr string) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	sess := r.byAddr[addr]
	if sess != nil {
		r.touch(sess)
	}
	return sess
}

// sessionErr is err of reading the session addr: ErrNoSession if it does
// not exist.
func sessionErr(addr string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNoSession, addr)
	}
	return fmt.Errorf("runtime: session %s: %w", addr, err)
}
