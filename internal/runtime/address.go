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
	r.mu.Lock()
	sess := r.byAddr[addr]
	if sess != nil {
		r.touch(sess)
	}
	r.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	s, _, err := r.st.Session(ctx, agentID, key)
	if err != nil {
		return nil, fmt.Errorf("runtime: session %s: %w", addr, err)
	}
	return r.session(s), nil
}

// existing returns the in-memory session for an address that exists in
// the store, or store.ErrNotFound: unlike lookup, it creates none.
func (r *Runtime) existing(ctx context.Context, agentID, key string) (*session, error) {
	addr := agentID + "/" + key
	r.mu.Lock()
	sess := r.byAddr[addr]
	if sess != nil {
		r.touch(sess)
	}
	r.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	s, err := r.st.SessionByAddress(ctx, agentID, key)
	if err != nil {
		return nil, sessionErr(addr, err)
	}
	return r.session(s), nil
}

// sessionErr is err of reading the session addr: ErrNoSession if it does
// not exist.
func sessionErr(addr string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNoSession, addr)
	}
	return fmt.Errorf("runtime: session %s: %w", addr, err)
}
