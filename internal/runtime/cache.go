package runtime

import (
	"container/list"
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
)

// The cache's defaults (see Options). A cached session costs ~30 KB of
// memory per hundred turns of its conversation, and reloading one from
// the log ~1 ms per thousand events: the budget keeps the conversations of
// the sessions in use without letting idle ones hold memory.
const (
	DefaultCacheSessions       = 256
	DefaultCacheBytes    int64 = 4 << 20
	// DefaultCacheIdle: a session unused for a minute is dropped, so that
	// what the cache holds follows what is in use, not what once was.
	DefaultCacheIdle = time.Minute
)

// session is the in-memory side of a session. Its fields are guarded by
// mu, except s.ID/Agent/Key which never change.
type session struct {
	s    store.Session
	elt  *list.Element // in Runtime.lru while idle
	used time.Time     // when last looked up; guarded by Runtime.mu

	// lmu orders the changes of the session's lease (lease.go): it is held
	// across the store's lease calls, taken before Runtime.mu and mu.
	lmu sync.Mutex

	mu      sync.Mutex
	queue   []queued
	working bool                    // a worker goroutine exists
	cancel  context.CancelCauseFunc // of the running turn, nil if none
	turn    int64                   // the running turn's id, with cancel
	conv    *engine.Conversation    // the context since the last reset; nil until loaded
	// published is the state last published as a session_state event.
	published string
	// leased: this node holds the session's lease, at epoch (the last
	// epoch it held, once it gave the lease up). s.LastSeq is the last
	// sequence number this node knows the session's log to end at.
	leased bool
	epoch  int64
	// grace, while the lease is kept idle after the queue emptied
	// (grace.go), ends it.
	grace *time.Timer
	// asked: another node accepted an input for the session, or asked
	// for its lease, while no grace ran; the next rest begins none.
	asked bool
	// stopped: Stop was called; the queued inputs are refused, and new
	// ones until the session is reopened.
	stopped bool
	// seen is the highest id of the inputs a merge found pending in the
	// store (lease.go): an input this node accepted with an id up to it
	// was queued from there already, and may have run (admit).
	seen int64
}

// setConv replaces the session's cached conversation, keeping the cache's
// byte count. sess.mu is held.
func (r *Runtime) setConv(sess *session, c *engine.Conversation) {
	var d int64
	if sess.conv != nil {
		d -= int64(sess.conv.Size())
	}
	if c != nil {
		d += int64(c.Size())
	}
	sess.conv = c
	r.cached.Add(d)
}

// follow adds durable events to the session's cached context, if it has
// one. sess.mu is held.
func (r *Runtime) follow(sess *session, evs []event.Event) {
	c := sess.conv
	if c == nil {
		return
	}
	before := c.Size()
	for _, e := range evs {
		switch e.Kind {
		case event.Reset:
			r.cached.Add(int64(c.Size() - before))
			r.setConv(sess, new(engine.Conversation))
			c, before = sess.conv, 0
		case event.Summary:
			// The context now starts from the summary: load it from the
			// log when next needed.
			r.cached.Add(int64(c.Size() - before))
			r.setConv(sess, nil)
			return
		default:
			c.Add(e)
		}
	}
	r.cached.Add(int64(c.Size() - before))
}

// CachedBytes is roughly how much memory the cached conversations take.
func (r *Runtime) CachedBytes() int64 { return r.cached.Load() }

// trimCache drops the cached conversations of the least recently used idle
// sessions while the cache is over its byte budget.
func (r *Runtime) trimCache() {
	if r.cached.Load() <= r.o.CacheBytes {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for e := r.lru.Back(); e != nil && r.cached.Load() > r.o.CacheBytes*9/10; e = e.Prev() {
		sess := e.Value.(*session)
		if sess.mu.TryLock() {
			if !sess.working && sess.conv != nil {
				r.setConv(sess, nil)
			}
			sess.mu.Unlock()
		}
	}
}

func (s *session) state() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s.State
}

// session returns the in-memory session for s, adding it if needed.
func (r *Runtime) session(s store.Session) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sess := r.sessions[s.ID]; sess != nil {
		r.touch(sess)
		return sess
	}
	sess := &session{s: s, used: time.Now()}
	r.sessions[s.ID] = sess
	r.byAddr[s.Address()] = sess
	r.peak = max(r.peak, len(r.sessions))
	sess.elt = r.lru.PushFront(sess)
	r.evict()
	return sess
}

// touch marks sess recently used. r.mu is held.
func (r *Runtime) touch(sess *session) {
	sess.used = time.Now()
	if sess.elt != nil {
		r.lru.MoveToFront(sess.elt)
	}
}

// evict drops the least recently used idle sessions beyond the cache
// bound, and those unused for longer than CacheIdle; never the most
// recently used, which its caller is about to use. r.mu is held.
func (r *Runtime) evict() {
	stale := time.Now().Add(-r.o.CacheIdle)
	for e := r.lru.Back(); e != nil && e != r.lru.Front(); {
		prev := e.Prev()
		sess := e.Value.(*session)
		if r.lru.Len() <= r.o.CacheSessions && !sess.used.Before(stale) {
			break // the rest were used since
		}
		if sess.mu.TryLock() {
			if !sess.working && len(sess.queue) == 0 && sess.grace == nil {
				r.setConv(sess, nil)
				r.lru.Remove(e)
				sess.elt = nil
				delete(r.sessions, sess.s.ID)
				delete(r.byAddr, sess.s.Address())
			}
			sess.mu.Unlock()
		}
		e = prev
	}
	r.shrinkMaps()
}

// shrinkMaps makes the session maps again once they hold a quarter of what
// they once held, if that was more than four times the cache's bound: a Go
// map keeps the room of its largest size, so a burst of sessions (many
// busy at once) would otherwise keep it for good. r.mu is held.
func (r *Runtime) shrinkMaps() {
	if r.peak <= 4*r.o.CacheSessions || len(r.sessions) > r.peak/4 {
		return
	}
	r.sessions = remake(r.sessions)
	r.byAddr = remake(r.byAddr)
	r.peak = len(r.sessions)
}

// remake copies m into a map of its size (maps.Clone keeps m's room).
func remake[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	maps.Copy(out, m)
	return out
}

// context returns the session's conversation since the last reset (with
// the skills it loaded), kept in memory while the session is cached and
// loaded from the log otherwise.
func (r *Runtime) context(ctx context.Context, sess *session) ([]model.Message, []engine.Mark, []int, []string, error) {
	sess.mu.Lock()
	if c := sess.conv; c != nil {
		m, marks, toks, skills := c.Messages(), c.Marks(), c.Tokens(), c.Skills()
		sess.mu.Unlock()
		return m, marks, toks, skills, nil
	}
	sess.mu.Unlock()
	evs, err := r.st.ContextEvents(ctx, sess.s.ID)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("runtime: load context: %w", err)
	}
	c := new(engine.Conversation)
	c.Add(engine.FromSummary(evs)...)
	sess.mu.Lock()
	defer sess.mu.Unlock()
	// Only this session's worker loads or changes the conversation, so
	// nothing was added meanwhile.
	r.setConv(sess, c)
	return c.Messages(), c.Marks(), c.Tokens(), c.Skills(), nil
}
