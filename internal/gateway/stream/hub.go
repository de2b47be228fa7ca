package stream

import (
	"context"
	"slices"
	"sync"
	"time"

	"agentd/internal/event"
)

// hub owns the Handler's one bus subscription and routes each event to
// the subscriptions it matches. Routing only queues: it never waits for a
// connection.
//
// Lock order: hub.mu, then conn.mu, then Handler.life.
type hub struct {
	h      *Handler
	ctx    context.Context // ends with stop
	cancel context.CancelFunc

	mu      sync.RWMutex
	bus     *event.Subscription
	stopped bool
	empty   chan struct{} // closed when stopped and the last connection is gone
	conns   map[*conn]struct{}
	byAddr  map[string]map[*sub]struct{}
	byAgent map[string]map[*sub]struct{}
	every   map[*sub]struct{}
	nsubs   int

	// cache maps session ids to addresses; only run touches it.
	cache map[int64]*sessionInfo
}

type sessionInfo struct {
	addr, agent string
	quoted      []byte // addr as a JSON string
}

func newHub(h *Handler) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{h: h, ctx: ctx, cancel: cancel,
		bus:     h.src.Bus().Subscribe(0, h.o.BusBuffer),
		conns:   make(map[*conn]struct{}),
		byAddr:  make(map[string]map[*sub]struct{}),
		byAgent: make(map[string]map[*sub]struct{}),
		every:   make(map[*sub]struct{}),
		cache:   make(map[int64]*sessionInfo),
	}
}

func (hb *hub) run() {
	defer hb.h.wg.Done()
	for {
		hb.mu.RLock()
		bs := hb.bus
		hb.mu.RUnlock()
		for e := range bs.C {
			hb.dispatch(&e)
		}
		// The bus dropped the subscription (or stop closed it). Events
		// are lost in between: every connection resumes from the log.
		hb.mu.Lock()
		if hb.stopped {
			hb.mu.Unlock()
			return
		}
		hb.bus = hb.h.src.Bus().Subscribe(0, hb.h.o.BusBuffer)
		n := len(hb.conns)
		for c := range hb.conns {
			c.closeAsync(StatusOverrun, ReasonOverrun)
		}
		hb.mu.Unlock()
		hb.h.overruns.Add(1)
		hb.h.log.Warn("event stream fell behind the bus; connections closed to resume from the log",
			"reason", bs.Err(), "connections", n)
	}
}

// stop ends run and refuses new connections.
func (hb *hub) stop() {
	hb.mu.Lock()
	hb.stopped = true
	hb.empty = make(chan struct{})
	if len(hb.conns) == 0 {
		close(hb.empty)
	}
	bs := hb.bus
	hb.mu.Unlock()
	hb.cancel()
	bs.Close()
}

// all returns the open connections.
func (hb *hub) all() []*conn {
	hb.mu.RLock()
	defer hb.mu.RUnlock()
	out := make([]*conn, 0, len(hb.conns))
	for c := range hb.conns {
		out = append(out, c)
	}
	return out
}

// waitEmpty waits, after stop, until every connection is gone or d (if
// not negative) passes.
func (hb *hub) waitEmpty(d time.Duration) bool {
	hb.mu.RLock()
	ch := hb.empty
	hb.mu.RUnlock()
	if d < 0 {
		<-ch
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

func (hb *hub) counts() (conns, subs int) {
	hb.mu.RLock()
	defer hb.mu.RUnlock()
	return len(hb.conns), hb.nsubs
}

func (hb *hub) addConn(c *conn) bool {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if hb.stopped {
		return false
	}
	hb.conns[c] = struct{}{}
	return true
}

// removeConn forgets a connection and its subscriptions; c is closing.
func (hb *hub) removeConn(c *conn) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if _, ok := hb.conns[c]; !ok {
		return
	}
	c.mu.Lock()
	subs := slices.Clone(c.subs)
	c.mu.Unlock()
	for _, s := range subs {
		hb.removeLocked(s)
	}
	delete(hb.conns, c)
	if hb.stopped && len(hb.conns) == 0 {
		close(hb.empty)
	}
}

// add routes events to s, unless its connection is closing.
func (hb *hub) add(s *sub) bool {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	s.c.mu.Lock()
	closing := s.c.closing
	s.c.mu.Unlock()
	if closing {
		return false
	}
	if _, ok := hb.conns[s.c]; !ok {
		return false
	}
	switch s.scope {
	case scopeSession:
		addTo(hb.byAddr, s.addr, s)
	case scopeAgent:
		addTo(hb.byAgent, s.agent, s)
	default:
		hb.every[s] = struct{}{}
	}
	hb.nsubs++
	return true
}

func addTo(m map[string]map[*sub]struct{}, k string, s *sub) {
	set := m[k]
	if set == nil {
		set = make(map[*sub]struct{}, 1)
		m[k] = set
	}
	set[s] = struct{}{}
}

func (hb *hub) remove(s *sub) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.removeLocked(s)
}

func (hb *hub) removeLocked(s *sub) {
	var set map[*sub]struct{}
	switch s.scope {
	case scopeSession:
		set = hb.byAddr[s.addr]
	case scopeAgent:
		set = hb.byAgent[s.agent]
	default:
		set = hb.every
	}
	if _, ok := set[s]; !ok {
		return
	}
	delete(set, s)
	hb.nsubs--
	if len(set) == 0 {
		switch s.scope {
		case scopeSession:
			delete(hb.byAddr, s.addr)
		case scopeAgent:
			delete(hb.byAgent, s.agent)
		}
	}
}

// dispatch queues e for every subscription it matches.
func (hb *hub) dispatch(e *event.Event) {
	hb.mu.RLock()
	none := hb.nsubs == 0
	hb.mu.RUnlock()
	if none {
		return
	}
	info := hb.lookup(e.Session)
	quoted := []byte(`""`)
	if info != nil {
		quoted = info.quoted
	}
	body, head := encodeEventHead(quoted, e)
	f := frame{body: body, session: e.Session, seq: e.Seq}
	if e.Kind == event.TextDelta {
		f.delta = newDelta(e, head)
	}

	hb.mu.RLock()
	defer hb.mu.RUnlock()
	for s := range hb.every {
		s.deliver(f)
	}
	if info == nil {
		if e.Seq > 0 {
			// A stored event that cannot be routed: the connections that
			// might want it resume from the log rather than miss it.
			for _, m := range []map[string]map[*sub]struct{}{hb.byAddr, hb.byAgent} {
				for _, set := range m {
					for s := range set {
						s.c.closeAsync(StatusInternal, ReasonInternal)
					}
				}
			}
		}
		return
	}
	for s := range hb.byAgent[info.agent] {
		s.deliver(f)
	}
	for s := range hb.byAddr[info.addr] {
		s.deliver(f)
	}
}

// lookup returns a session's address, from the cache or the directory;
// nil if it cannot be found.
func (hb *hub) lookup(id int64) *sessionInfo {
	if info, ok := hb.cache[id]; ok {
		return info
	}
	ctx, cancel := context.WithTimeout(hb.ctx, 10*time.Second)
	defer cancel()
	s, err := hb.h.src.SessionByID(ctx, id)
	if err != nil {
		hb.h.log.Error("stream: cannot route an event", "session_id", id, "err", err)
		return nil
	}
	if len(hb.cache) >= hb.h.o.SessionCache {
		// Forget an arbitrary eighth; forgotten ones are read again.
		n := len(hb.cache) / 8
		for k := range hb.cache {
			if n <= 0 {
				break
			}
			delete(hb.cache, k)
			n--
		}
	}
	info := &sessionInfo{addr: s.Address(), agent: s.Agent}
	info.quoted = quote(info.addr)
	hb.cache[id] = info
	return info
}
