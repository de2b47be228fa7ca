package webext_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"agentd/internal/store"
)

// memStore is an in-memory store.ExtensionStore for these tests (as the
// manager's own tests have); the stores' behaviour is held by storetest.
type memStore struct {
	mu   sync.Mutex
	rows map[string]store.Extension
	hist map[string][]store.ExtensionChange
}

func newMemStore() *memStore {
	return &memStore{rows: map[string]store.Extension{}, hist: map[string][]store.ExtensionChange{}}
}

func (s *memStore) Extensions(_ context.Context, typ string) ([]store.Extension, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Extension
	for _, e := range s.rows {
		if typ == "" || e.Type == typ {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b store.Extension) int {
		return strings.Compare(a.Type+"\x00"+a.Name, b.Type+"\x00"+b.Name)
	})
	return out, nil
}

func (s *memStore) Extension(_ context.Context, typ, name string) (store.Extension, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.rows[typ+"/"+name]
	if !ok {
		return e, store.ErrNotFound
	}
	return e, nil
}

func (s *memStore) PutExtension(_ context.Context, e store.Extension, op string, ifv int64) (store.Extension, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := e.Type + "/" + e.Name
	old, exists := s.rows[k]
	switch {
	case ifv == store.NoVersion && exists, ifv > 0 && (!exists || old.Version != ifv):
		return e, store.ErrConflict
	}
	now := time.Now()
	e.Version = 1
	if h := s.hist[k]; len(h) > 0 {
		e.Version = h[len(h)-1].Version + 1
	}
	e.CreatedAt, e.UpdatedAt = now, now
	if exists {
		e.CreatedAt, e.CreatedBy = old.CreatedAt, old.CreatedBy
	}
	s.rows[k] = e
	s.hist[k] = append(s.hist[k], store.ExtensionChange{Version: e.Version, Op: op, Spec: e.Spec, Enabled: e.Enabled,
		Provenance: e.Provenance, By: e.UpdatedBy, At: now})
	return e, nil
}

func (s *memStore) DeleteExtension(_ context.Context, typ, name, by string, ifv int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := typ + "/" + name
	old, exists := s.rows[k]
	switch {
	case !exists:
		return store.ErrNotFound
	case ifv > 0 && old.Version != ifv:
		return store.ErrConflict
	}
	delete(s.rows, k)
	s.hist[k] = append(s.hist[k], store.ExtensionChange{Version: old.Version + 1, Op: store.ExtDelete, Spec: old.Spec,
		Provenance: old.Provenance, By: by, At: time.Now()})
	return nil
}

func (s *memStore) ExtensionHistory(_ context.Context, typ, name string) ([]store.ExtensionChange, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.hist[typ+"/"+name]
	if !ok {
		return nil, store.ErrNotFound
	}
	return slices.Clone(h), nil
}
