package sqlite

import (
	"context"
	"fmt"
	"sync"

	"agentd/internal/store"
)

var _ store.OnceStore = (*Store)(nil)

// schemaClaims records the pieces of work taken (Claim), as on
// PostgreSQL, where several nodes share them.
const schemaClaims = `
CREATE TABLE agentd_claims (
	key        TEXT PRIMARY KEY,
	node_id    TEXT NOT NULL,
	claimed_at INTEGER NOT NULL
);`

const qClaim = `INSERT INTO agentd_claims (key, node_id, claimed_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING`

// Claim records that node takes the work key names, unless it was taken
// before; it reports whether this call took it. On SQLite the node is the
// whole cluster, but a claim is kept all the same: work claimed before a
// restart stays claimed.
func (s *Store) Claim(ctx context.Context, key, node string) (bool, error) {
	if key == "" || node == "" {
		return false, fmt.Errorf("sqlite: claim: %w: empty key or node (%q, %q)", ErrInvalid, key, node)
	}
	r := s.getRequest(ctx, opClaim)
	r.key, r.node = key, node
	if err := s.send(ctx, r); err != nil {
		return false, err
	}
	took, err := r.created, r.err
	s.putRequest(r)
	return took, err
}

func (w *writer) applyClaim(r *request, now int64) error {
	res, err := w.claim.Exec(r.key, r.node, now)
	if err != nil {
		return fmt.Errorf("sqlite: claim %q: %w", r.key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: claim %q: %w", r.key, err)
	}
	r.created = n == 1
	return nil
}

// TryLead makes the caller the leader of role unless another caller
// leads it: on SQLite the node is the only one, so leadership is settled
// in the process, one holder per role until it releases it or the store
// closes.
func (s *Store) TryLead(ctx context.Context, role string) (store.Lead, error) {
	if role == "" {
		return nil, fmt.Errorf("sqlite: lead: %w: empty role", ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	if s.leadsClosed {
		return nil, store.ErrClosed
	}
	if s.leads == nil {
		s.leads = map[string]*lead{}
	}
	if s.leads[role] != nil {
		return nil, nil
	}
	l := &lead{s: s, role: role, lost: make(chan struct{})}
	s.leads[role] = l
	return l, nil
}

// lead is a role's leadership in the process.
type lead struct {
	s    *Store
	role string
	lost chan struct{}
	once sync.Once
}

func (l *lead) Lost() <-chan struct{} { return l.lost }

func (l *lead) Release() {
	l.s.leadMu.Lock()
	defer l.s.leadMu.Unlock()
	l.end()
}

// end ends the leadership; leadMu is held.
func (l *lead) end() {
	l.once.Do(func() {
		if l.s.leads[l.role] == l {
			delete(l.s.leads, l.role)
		}
		close(l.lost)
	})
}

// releaseLeads ends every leadership, at Close.
func (s *Store) releaseLeads() {
	s.leadMu.Lock()
	defer s.leadMu.Unlock()
	s.leadsClosed = true
	for _, l := range s.leads {
		l.end()
	}
}
