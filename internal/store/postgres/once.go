package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

var _ store.OnceStore = (*Store)(nil)

// schemaClaims records the pieces of work a node took (Claim).
const schemaClaims = `
CREATE TABLE agentd_claims (
	key        text PRIMARY KEY,
	node_id    text NOT NULL,
	claimed_at timestamptz NOT NULL DEFAULT now()
);
`

const qClaim = `INSERT INTO agentd_claims (key, node_id) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`

// Claim records that node takes the work key names, unless a node took it
// before (on this database, whichever node): it reports whether this call
// took it. One INSERT … ON CONFLICT DO NOTHING decides between racing
// nodes.
func (s *Store) Claim(ctx context.Context, key, node string) (bool, error) {
	if key == "" || node == "" {
		return false, fmt.Errorf("postgres: claim: %w: empty key or node (%q, %q)", ErrInvalid, key, node)
	}
	if s.isDown.Load() {
		return false, store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, qClaim, key, node)
	if err != nil {
		return false, s.readErr(fmt.Sprintf("claim %q", key), err)
	}
	return tag.RowsAffected() == 1, nil
}

// LeadCheck is how often a leader's connection is checked: a leadership
// whose connection is lost ends within about that.
const LeadCheck = time.Second

// TryLead makes the caller the leader of role in the cluster, unless a
// caller (of any node) leads it already: then it returns nil. The
// leadership is an advisory lock held by a connection of its own (named
// "agentd leader" in pg_stat_activity); PostgreSQL releases it when that
// connection ends, so a node that dies or is cut off loses it, and
// another node's TryLead then succeeds. The leader learns of the loss
// within LeadCheck (Lost).
func (s *Store) TryLead(ctx context.Context, role string) (store.Lead, error) {
	if role == "" {
		return nil, fmt.Errorf("postgres: lead: %w: empty role", ErrInvalid)
	}
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	cfg := s.connCfg.Copy()
	cfg.RuntimeParams["application_name"] += " leader"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: lead %q: %w", role, classify(err))
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, leadKey(role)).Scan(&ok); err != nil || !ok {
		conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			return nil, fmt.Errorf("postgres: lead %q: %w", role, classify(err))
		}
		return nil, nil
	}
	l := &lead{conn: conn, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	if !s.leads.add(l) {
		conn.Close(context.WithoutCancel(ctx))
		return nil, store.ErrClosed
	}
	go l.watch(func() { s.leads.remove(l) })
	return l, nil
}

// leadKey is a role's advisory lock key.
func leadKey(role string) int64 {
	h := fnv.New64a()
	h.Write([]byte("agentd leader\x00" + role))
	return int64(h.Sum64())
}

// lead is a leadership held by its connection. Its goroutine (watch)
// owns the connection: it checks it every LeadCheck, and closes it when
// the leadership is released or lost.
type lead struct {
	conn *pgx.Conn
	lost chan struct{} // closed when the leadership ends
	stop chan struct{} // closed by Release
	once sync.Once
	done chan struct{} // closed when watch has closed the connection
}

func (l *lead) Lost() <-chan struct{} { return l.lost }

// Release ends the leadership and waits until its connection is closed,
// which releases the lock.
func (l *lead) Release() {
	l.once.Do(func() { close(l.stop) })
	<-l.done
}

func (l *lead) watch(gone func()) {
	defer close(l.done)
	defer gone()
	defer close(l.lost)
	t := time.NewTicker(LeadCheck)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			l.conn.Close(ctx) // ends the session: PostgreSQL releases the lock
			cancel()
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), LeadCheck)
			err := l.conn.Ping(ctx)
			cancel()
			if err != nil {
				l.conn.Close(context.Background())
				return
			}
		}
	}
}

// leads are the store's leaderships, released at Close.
type leads struct {
	mu     sync.Mutex
	m      map[*lead]struct{}
	closed bool // releaseAll began: no more
}

// add records l, unless the store is closing.
func (ls *leads) add(l *lead) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return false
	}
	if ls.m == nil {
		ls.m = map[*lead]struct{}{}
	}
	ls.m[l] = struct{}{}
	return true
}

func (ls *leads) remove(l *lead) {
	ls.mu.Lock()
	delete(ls.m, l)
	ls.mu.Unlock()
}

// releaseAll releases every leadership.
func (ls *leads) releaseAll() {
	ls.mu.Lock()
	ls.closed = true
	all := make([]*lead, 0, len(ls.m))
	for l := range ls.m {
		all = append(all, l)
	}
	ls.mu.Unlock()
	for _, l := range all {
		l.Release()
	}
}
