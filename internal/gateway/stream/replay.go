package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"agentd/internal/store"
)

// replayPage is how many stored events one log read returns.
const replayPage = 256

// replay sends the stored events a subscription asked for, then the live
// events that arrived meanwhile, less those it sent already, and says so
// with a replayed frame.
func (c *conn) replay(s *sub, cmd *command) {
	ctx := c.h.hub.ctx
	replayed := make(map[int64]int64)
	if cmd.scope == scopeSession {
		id, last, ok := c.replaySession(ctx, s, cmd.addr, cmd.after)
		if !ok {
			return
		}
		if id != 0 {
			replayed[id] = last
		}
		c.finishReplay(s, replayed, replayedFrame(s.id, cmd.addr, id, last, true))
		return
	}
	plan, err := c.plan(ctx, s, cmd)
	if err != nil {
		c.replayFailed(s, err)
		return
	}
	for _, p := range plan {
		id, last, ok := c.replaySession(ctx, s, p.addr, p.after)
		if !ok {
			return
		}
		if id == 0 {
			continue
		}
		replayed[id] = last
		c.mu.Lock()
		ok = !s.dead && c.pushLocked(frame{body: replayedFrame(s.id, p.addr, id, last, false)})
		c.mu.Unlock()
		if !ok {
			return
		}
	}
	c.finishReplay(s, replayed, replayedFrame(s.id, "", 0, 0, true))
}

type planned struct {
	id    int64
	addr  string
	after int64
}

// plan lists the sessions an agent or all-sessions subscription replays:
// each session of its cursors after its cursor, and each other session
// updated at or after since from its start.
func (c *conn) plan(ctx context.Context, s *sub, cmd *command) ([]planned, error) {
	h := c.h
	by := make(map[int64]planned)
	for _, cur := range cmd.cursors {
		var sess store.Session
		var err error
		key := cur.addr
		if cur.id != 0 {
			key = strconv.FormatInt(cur.id, 10)
			sess, err = h.src.SessionByID(ctx, cur.id)
		} else {
			sess, _, err = h.src.Events(ctx, cur.addr, 0, 1)
		}
		if errors.Is(err, store.ErrNotFound) {
			// Nothing logged yet: all of it will arrive live.
			continue
		}
		if err != nil {
			return nil, err
		}
		if cmd.scope == scopeAgent && sess.Agent != cmd.agent {
			c.send(errorFrame(s.id, fmt.Sprintf("cursor %s: not a session of agent %s", truncate(key, 80), cmd.agent)))
			continue
		}
		if p, ok := by[sess.ID]; ok && p.after <= cur.seq {
			continue
		}
		by[sess.ID] = planned{id: sess.ID, addr: sess.Address(), after: cur.seq}
	}
	if cmd.hasSince {
		limit := h.o.MaxReplaySessions
		list, err := h.src.Sessions(ctx, store.SessionFilter{Agent: cmd.agent, Limit: limit})
		if err != nil {
			return nil, err
		}
		n := 0
		for _, sess := range list {
			if sess.UpdatedAt.Before(cmd.since) {
				continue
			}
			n++
			if _, ok := by[sess.ID]; !ok {
				by[sess.ID] = planned{id: sess.ID, addr: sess.Address()}
			}
		}
		if n >= limit {
			c.send(errorFrame(s.id, fmt.Sprintf("replay truncated: more than %d sessions were updated since %s; the least recently updated are not replayed",
				limit, cmd.since.UTC().Format(time.RFC3339))))
		}
	}
	out := make([]planned, 0, len(by))
	for _, p := range by {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b planned) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

// replaySession sends a session's stored events after a sequence number,
// up to its last one as of the first read (later ones are routed live).
// It returns the session id (0 if the session does not exist) and the last
// sequence number sent (after if none); ok is false if the subscription or
// connection ended, or the read failed.
func (c *conn) replaySession(ctx context.Context, s *sub, addr string, after int64) (id, last int64, ok bool) {
	last = after
	target := int64(-1)
	q := quote(addr)
	for {
		sess, evs, err := c.h.src.Events(ctx, addr, last, replayPage)
		if errors.Is(err, store.ErrNotFound) {
			return 0, last, true
		}
		if err != nil {
			c.replayFailed(s, err)
			return 0, 0, false
		}
		id = sess.ID
		if target < 0 {
			target = sess.LastSeq
		}
		for i := range evs {
			if !c.waitSpace(s) {
				return 0, 0, false
			}
			f := frame{pre: s.prefix, body: encodeEvent(q, &evs[i]), session: id, seq: evs[i].Seq}
			c.mu.Lock()
			ok := !s.dead && c.pushLocked(f)
			c.mu.Unlock()
			if !ok {
				return 0, 0, false
			}
			last = evs[i].Seq
		}
		if len(evs) < replayPage || last >= target {
			return id, last, true
		}
	}
}

// finishReplay sends the live events held during the replay that it did
// not send, then done, and lets live events through.
func (c *conn) finishReplay(s *sub, replayed map[int64]int64, done []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing || s.dead {
		return
	}
	if len(replayed) > 0 {
		s.replayed = replayed
	}
	held := s.held
	s.held, s.heldBytes, s.replaying = nil, 0, false
	for _, f := range held {
		if f.seq > 0 && f.seq <= replayed[f.session] {
			continue
		}
		if !c.pushLocked(f) {
			return
		}
	}
	c.pushLocked(frame{body: done})
}

// replayFailed ends a subscription whose log could not be read; the
// client may subscribe again.
func (c *conn) replayFailed(s *sub, err error) {
	h := c.h
	c.mu.Lock()
	if c.closing || s.dead {
		c.mu.Unlock()
		return
	}
	h.log.Warn("stream: replay failed", "sub", s.id, "err", err)
	c.endLocked(s)
	c.pushLocked(frame{body: errorFrame(s.id, "reading the log failed; subscribe again")})
	c.mu.Unlock()
	h.hub.remove(s)
	c.send(unsubscribedFrame(s.id))
}
