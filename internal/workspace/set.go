package workspace

import (
	"errors"
	"fmt"
	"sync"
)

// Set gives each agent its own workspace, opened on first use and kept
// open until Close.
type Set struct {
	dirFor func(agentID string) (string, error)

	mu     sync.Mutex // guards open and closed
	open   map[string]*Workspace
	closed bool
}

// ErrClosed is returned by Set.For after Close.
var ErrClosed = errors.New("workspace: closed")

// NewSet returns a Set that finds an agent's folder with dirFor.
func NewSet(dirFor func(agentID string) (string, error)) *Set {
	return &Set{dirFor: dirFor, open: map[string]*Workspace{}}
}

// For returns the agent's workspace, opening (and creating) it once.
func (s *Set) For(agentID string) (*Workspace, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if w, ok := s.open[agentID]; ok {
		return w, nil
	}
	dir, err := s.dirFor(agentID)
	if err != nil {
		return nil, fmt.Errorf("workspace of %s: %w", agentID, err)
	}
	w, err := Open(dir)
	if err != nil {
		return nil, err
	}
	s.open[agentID] = w
	return w, nil
}

// Close closes every workspace opened; For fails afterwards.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for id, w := range s.open {
		errs = append(errs, w.Close())
		delete(s.open, id)
	}
	return errors.Join(errs...)
}
