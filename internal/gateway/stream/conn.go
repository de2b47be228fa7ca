package stream

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// frame is one message waiting to be written: pre (a subscription's event
// prefix, or nil) followed by body. session and seq identify a stored
// event, for de-duplication; delta is set for a text delta, which may be
// joined to the ones queued after it (coalesce.go).
type frame struct {
	pre, body    []byte
	session, seq int64
	delta        *delta
	// A frame coalesce made of several: how many queued frames it
	// stands for, and their cost; 0 for any other frame.
	parts, partsCost int
}

func (f *frame) size() int { return len(f.pre) + len(f.body) }

// cost is what f counts toward a connection's byte bound: its size, but at
// most a quarter of the bound, so that one event larger than the bound (an
// input with images) is delivered rather than taken for a reader falling
// behind. A live event's bytes are shared by every connection it goes to.
func (c *conn) cost(f *frame) int { return min(f.size(), c.h.o.MaxQueueBytes/4) }

// conn is one WebSocket connection. While it is idle it has one goroutine,
// its read loop; a writer goroutine exists only while frames wait.
type conn struct {
	h    *Handler
	ws   *websocket.Conn
	cork *corkWriter // under ws; nil if the upgrade did not go through smallBuffers

	mu           sync.Mutex
	subs         []*sub  // nil until the first subscription
	queue        []frame // nil while empty
	pending      int     // frames queued or being written
	pendingBytes int
	writing      bool          // a writer goroutine runs
	closing      bool          // no more frames; the connection is going away
	space        chan struct{} // closed when the queue has room again; nil if nobody waits
	pinging      bool          // a ping waits for its pong
	nextPing     int64         // unix nanoseconds
}

// sub is one subscription of a connection.
type sub struct {
	c      *conn
	id     string
	prefix []byte
	scope  scope
	addr   string // scopeSession
	agent  string // scopeAgent

	// Guarded by c.mu.
	dead      bool
	replaying bool
	held      []frame // live events that arrived while replaying
	heldBytes int
	// replayed is the last sequence number replayed, by session id: a
	// stored event at or below it has been sent already.
	replayed map[int64]int64
}

// deliver queues a routed event for s; the caller holds hub.mu.
func (s *sub) deliver(f frame) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || s.dead {
		return
	}
	f.pre = s.prefix
	if s.replaying {
		if len(s.held) >= c.h.o.MaxQueue || s.heldBytes+c.cost(&f) > c.h.o.MaxQueueBytes {
			c.slowLocked(fmt.Sprintf("slow consumer: %d events arrived during replay", len(s.held)+1))
			return
		}
		s.held = append(s.held, f)
		s.heldBytes += c.cost(&f)
		return
	}
	if f.seq > 0 && f.seq <= s.replayed[f.session] {
		return
	}
	c.pushLocked(f)
}

// pushLocked queues f, starting a writer if none runs; a connection whose
// queue is full is closed instead. c.mu is held.
func (c *conn) pushLocked(f frame) bool {
	if c.closing {
		return false
	}
	o := &c.h.o
	if c.pending+1 > o.MaxQueue {
		c.slowLocked(fmt.Sprintf("slow consumer: %d events queued", c.pending))
		return false
	}
	if c.pendingBytes+c.cost(&f) > o.MaxQueueBytes {
		c.slowLocked(fmt.Sprintf("slow consumer: %d bytes queued", c.pendingBytes))
		return false
	}
	c.queue = append(c.queue, f)
	c.pending++
	c.pendingBytes += c.cost(&f)
	if !c.writing {
		c.writing = c.h.spawn(c.writeLoop)
	}
	return true
}

// send queues a frame that is not an event.
func (c *conn) send(body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushLocked(frame{body: body})
}

func (c *conn) slowLocked(reason string) {
	c.h.slow.Add(1)
	c.h.log.Info("stream: closing a slow consumer", "reason", reason)
	c.closeLocked(StatusSlowConsumer, reason)
}

// closeAsync starts closing the connection with a status and reason.
func (c *conn) closeAsync(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked(code, reason)
}

// closeLocked marks the connection closing and starts its close handshake
// in a goroutine. c.mu is held.
func (c *conn) closeLocked(code websocket.StatusCode, reason string) {
	if c.closing {
		return
	}
	c.closing = true
	c.queue = nil
	c.wakeLocked()
	c.h.spawn(func() { c.finish(code, reason) })
}

// finish forgets the connection and closes it.
func (c *conn) finish(code websocket.StatusCode, reason string) {
	if code != websocket.StatusAbnormalClosure {
		c.ws.Close(code, reason)
	}
	c.ws.CloseNow()
	c.h.hub.removeConn(c)
}

// wakeLocked wakes replays waiting for room in the queue.
func (c *conn) wakeLocked() {
	if c.space != nil {
		close(c.space)
		c.space = nil
	}
}

// writeLoop writes queued frames until the queue is empty, then ends.
func (c *conn) writeLoop() {
	h := c.h
	h.writers.Add(1)
	defer h.writers.Add(-1)
	bp := h.buf.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			h.buf.Put(bp)
		}
	}()
	hi, hiBytes := h.o.MaxQueue/2, h.o.MaxQueueBytes/2
	for {
		c.mu.Lock()
		if c.closing || len(c.queue) == 0 {
			c.writing = false
			c.mu.Unlock()
			return
		}
		batch := c.queue
		c.queue = nil
		c.mu.Unlock()
		if len(batch) > 1 {
			batch = c.coalesce(batch)
		}
		// Several frames queued: one write for all of them.
		corked := len(batch) > 1 && c.cork != nil
		if corked {
			c.cork.cork()
		}
		for i := range batch {
			f := &batch[i]
			msg := f.body
			if f.pre != nil {
				b := append((*bp)[:0], f.pre...)
				b = append(b, f.body...)
				*bp = b
				msg = b
			}
			// No deadline: a connection that stops reading fills its
			// queue and is closed, which ends this write.
			err := c.ws.Write(context.Background(), websocket.MessageText, msg)
			n, cost := 1, c.cost(f)
			if f.parts > 0 {
				n, cost = f.parts, f.partsCost
			}
			c.mu.Lock()
			c.pending -= n
			c.pendingBytes -= cost
			if c.pending <= hi && c.pendingBytes <= hiBytes {
				c.wakeLocked()
			}
			if err != nil {
				// The connection is broken; the read loop sees it too.
				c.closeLocked(websocket.StatusAbnormalClosure, "")
			}
			if c.closing {
				c.writing = false
				c.mu.Unlock()
				if corked {
					c.cork.uncork()
				}
				return
			}
			c.mu.Unlock()
		}
		if corked {
			if err := c.cork.uncork(); err != nil {
				c.mu.Lock()
				c.closeLocked(websocket.StatusAbnormalClosure, "")
				c.writing = false
				c.mu.Unlock()
				return
			}
		}
	}
}

// waitSpace waits until the queue is at most half full; false if s or
// the connection ended meanwhile.
func (c *conn) waitSpace(s *sub) bool {
	hi, hiBytes := c.h.o.MaxQueue/2, c.h.o.MaxQueueBytes/2
	for {
		c.mu.Lock()
		if c.closing || s.dead {
			c.mu.Unlock()
			return false
		}
		if c.pending < hi && c.pendingBytes < hiBytes {
			c.mu.Unlock()
			return true
		}
		if c.space == nil {
			c.space = make(chan struct{})
		}
		ch := c.space
		c.mu.Unlock()
		<-ch
	}
}

// maybePing pings the peer if it is time, in a goroutine that lasts
// until the pong; a peer that does not answer in time is dropped.
func (c *conn) maybePing(now int64) {
	h := c.h
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || c.pinging || now < c.nextPing {
		return
	}
	c.pinging = c.h.spawn(func() {
		ctx, cancel := context.WithTimeout(context.Background(), h.o.PongTimeout)
		err := c.ws.Ping(ctx)
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.pinging = false
		c.nextPing = time.Now().UnixNano() + int64(h.o.PingInterval)
		if err != nil && !c.closing {
			h.log.Debug("stream: peer did not answer a ping", "err", err)
			c.closeLocked(websocket.StatusAbnormalClosure, "")
		}
	})
}

// readLoop reads client messages until the connection ends.
func (c *conn) readLoop() {
	for {
		typ, data, err := c.ws.Read(context.Background())
		if err != nil {
			// The peer went away, sent a close frame, or broke the
			// protocol (the library has answered that); nothing more to say.
			c.closeAsync(websocket.StatusAbnormalClosure, "")
			return
		}
		if typ != websocket.MessageText {
			c.send(errorFrame("", "messages are JSON text"))
			continue
		}
		cmd, id, err := parseMessage(data, c.h.o.MaxReplaySessions)
		if err != nil {
			c.send(errorFrame(id, err.Error()))
			continue
		}
		c.handle(cmd)
	}
}

// handle carries out a client request.
func (c *conn) handle(cmd *command) {
	switch cmd.op {
	case opPing:
		c.send([]byte(pongFrame))
	case opUnsubscribe:
		c.mu.Lock()
		s := c.find(cmd.id)
		if s == nil {
			c.pushLocked(frame{body: errorFrame(cmd.id, "no such subscription")})
			c.mu.Unlock()
			return
		}
		c.endLocked(s)
		c.mu.Unlock()
		c.h.hub.remove(s)
		c.send(unsubscribedFrame(cmd.id))
	case opSubscribe:
		c.subscribe(cmd)
	}
}

// find returns the subscription with an id, nil if none; c.mu is held.
func (c *conn) find(id string) *sub {
	for _, s := range c.subs {
		if s.id == id {
			return s
		}
	}
	return nil
}

// endLocked ends a subscription; c.mu is held.
func (c *conn) endLocked(s *sub) {
	if i := slices.Index(c.subs, s); i >= 0 {
		c.subs = slices.Delete(c.subs, i, i+1)
	}
	s.dead = true
	s.held = nil
	c.wakeLocked()
}

func (c *conn) subscribe(cmd *command) {
	h := c.h
	s := &sub{c: c, id: cmd.id, prefix: eventPrefix(cmd.id), scope: cmd.scope, addr: cmd.addr, agent: cmd.agent,
		replaying: cmd.replays()}
	c.mu.Lock()
	switch {
	case c.closing:
		c.mu.Unlock()
		return
	case c.find(cmd.id) != nil:
		c.pushLocked(frame{body: errorFrame(cmd.id, "subscription id in use")})
		c.mu.Unlock()
		return
	case len(c.subs) >= h.o.MaxSubscriptions:
		c.pushLocked(frame{body: errorFrame(cmd.id, fmt.Sprintf("at most %d subscriptions", h.o.MaxSubscriptions))})
		c.mu.Unlock()
		return
	}
	c.subs = append(c.subs, s)
	// Acknowledge before routing starts, so that it comes first.
	c.pushLocked(frame{body: subscribedFrame(cmd.id)})
	c.mu.Unlock()
	// Routing starts before the log is read: an event committed after
	// the read is routed, one committed before it is read, and one that is
	// both is sent once (see replayed).
	if !h.hub.add(s) || !s.replaying {
		return
	}
	h.replays.Add(1)
	if !h.spawn(func() {
		defer h.replays.Add(-1)
		c.replay(s, cmd)
	}) {
		h.replays.Add(-1)
	}
}
