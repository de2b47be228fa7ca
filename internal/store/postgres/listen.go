package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/event"
)

// Publisher takes the events other nodes committed: an event.Bus.
type Publisher interface {
	PublishRemote(evs ...event.Event)
}

// ListenOptions configure Listen. The zero value (or nil) gives the
// defaults.
type ListenOptions struct {
	// Inbox, when set, is called with the session of every input another
	// node accepted (InboxChannel), from Listen's goroutine: it must not
	// block.
	Inbox func(session int64)
	// Release, when set, is called with the session of every request
	// for its lease (ControlChannel, AskRelease), from Listen's
	// goroutine: it must not block.
	Release func(session int64)
	// Cancel, when set, is called with every cancel of a turn a node
	// sent (ControlChannel, CancelTurn), this node's included, from
	// Listen's goroutine: it must not block. The node running that turn
	// cancels it; the others find nothing to do.
	Cancel func(session, turn int64)
	// Retry is the longest wait between attempts to connect again
	// (default 2 s); the first attempt after a loss is at once.
	Retry time.Duration
	// MaxSessions bounds the sessions whose last published sequence
	// number the listener keeps (default 10,000); past it, it forgets
	// one, whose next commit is then published alone.
	MaxSessions int
}

// ErrListening is returned by Listen while another Listen of the store
// runs: a node has one listener.
var ErrListening = errors.New("the store already has a listener")

// maxRead bounds the events the listener reads for one session at a time:
// a session further behind than that (after a long loss of the
// connection) skips ahead, and its watchers resume from the log.
const maxRead = 1000

// The listener's reads. qCommitEvents reads the events of the
// transaction that appended a session's event seq, for a session the
// listener has no position in: they share the row version's xmin, and
// are consecutive up to seq.
const (
	qCommitEvents = `WITH x AS (SELECT xmin AS t FROM events WHERE session_id = $1 AND seq = $2)
	SELECT ` + eventCols + ` FROM events, x WHERE session_id = $1 AND seq <= $2 AND seq > coalesce(
		(SELECT max(seq) FROM events WHERE session_id = $1 AND seq <= $2 AND xmin <> x.t), 0)
	ORDER BY seq`
	qEventsRange = `SELECT ` + eventCols + ` FROM events WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`
	// The events after each session's position, at most $3 of each.
	qCatchUp = `SELECT e.session_id, e.seq, e.turn, e.kind, e.ts, e.data
	FROM unnest($1::bigint[], $2::bigint[]) AS w(session_id, after)
	CROSS JOIN LATERAL (SELECT ` + eventCols + ` FROM events
		WHERE events.session_id = w.session_id AND events.seq > w.after ORDER BY events.seq LIMIT $3) e
	ORDER BY e.session_id, e.seq`
)

// Listen follows the other nodes' commits until ctx is done, and
// publishes their events on pub, in each session's order, each once
// (and the live-only events their Relay sends, as they come):
// on a connection of its own it LISTENs on EventsChannel, and for each
// notification another node sent it reads the events after the last one
// it published of that session. Events this node committed are not
// published again (the runtime published them): a notification from one
// of the store's own connections only moves the position.
//
// It also tells the functions WatchExtensions registered of every
// extension row any node changes (ExtensionsChannel), and, each time it
// connects, of a change of every row ("", "").
//
// When the connection is lost, Listen connects again (waiting up to
// Options.Retry between attempts), then reads every session it follows
// from its position, so that what was committed meanwhile is published
// too. Listening reports whether it is connected. Listen returns nil when
// ctx is done, ErrListening if the store has a listener already.
func (s *Store) Listen(ctx context.Context, pub Publisher, o *ListenOptions) error {
	var lo ListenOptions
	if o != nil {
		lo = *o
	}
	if lo.Retry <= 0 {
		lo.Retry = 2 * time.Second
	}
	if lo.MaxSessions <= 0 {
		lo.MaxSessions = 10000
	}
	if !s.fan.start(lo.MaxSessions) {
		return ErrListening
	}
	defer s.fan.stop()
	wait := time.Duration(0)
	for first := true; ; first = false {
		err := s.listen(ctx, pub, &lo, !first)
		if s.fan.connected.Swap(false) {
			wait = 0 // it was connected: try again at once
		}
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("store listener lost its connection; events of other nodes wait until it is back", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(max(2*wait, 100*time.Millisecond), lo.Retry)
	}
}

// Listening reports whether the store's listener is connected.
func (s *Store) Listening() bool { return s.fan.connected.Load() }

// listen is one connection of Listen: it returns when the connection
// fails or ctx is done. After a loss (again), it first catches up.
func (s *Store) listen(ctx context.Context, pub Publisher, o *ListenOptions, again bool) error {
	cfg := s.connCfg.Copy()
	cfg.RuntimeParams["application_name"] += " listener" // for pg_stat_activity
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("postgres: listen: %w", classify(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{EventsChannel, InboxChannel, LiveChannel, ControlChannel, ExtensionsChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return fmt.Errorf("postgres: listen: %w", classify(err))
		}
	}
	s.fan.connected.Store(true)
	// Extension changes made before LISTEN took effect were not heard:
	// every row is to be read again.
	s.extWatch.changed("", "")
	if again {
		if err := s.catchUp(ctx, pub); err != nil {
			return err
		}
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("postgres: listen: %w", classify(err))
		}
		switch n.Channel {
		case InboxChannel:
			var id int64
			if _, err := fmt.Sscan(n.Payload, &id); err == nil && o.Inbox != nil && !s.own.has(n.PID) {
				o.Inbox(id)
			}
		case ControlChannel:
			verb, session, turn, err := parseControl(n.Payload)
			switch {
			case err != nil:
				s.log.Warn("store listener: a notification it cannot read", "err", err)
			case verb == "cancel" && o.Cancel != nil:
				o.Cancel(session, turn)
			case verb == "release" && o.Release != nil:
				o.Release(session)
			}
		case LiveChannel:
			if s.own.has(n.PID) {
				continue
			}
			evs, err := liveEvents(n.Payload)
			if err != nil {
				s.log.Warn("store listener: live events it cannot read", "err", err)
				continue
			}
			if len(evs) > 0 {
				pub.PublishRemote(evs...)
			}
		case ExtensionsChannel:
			typ, name, err := parseExtensionPayload(n.Payload)
			if err != nil {
				s.log.Warn("store listener: a notification it cannot read", "err", err)
				continue
			}
			s.extWatch.changed(typ, name)
		case EventsChannel:
			session, last, err := parseEventsPayload(n.Payload)
			if err != nil {
				s.log.Warn("store listener: a notification it cannot read", "err", err)
				continue
			}
			if s.own.has(n.PID) {
				s.fan.advance(session, last)
				continue
			}
			if err := s.published(ctx, pub, session, last); err != nil {
				return err
			}
		}
	}
}

// published publishes what another node's commit appended to session, up
// to last: the events after the listener's position, or, without one, the
// commit's own events.
func (s *Store) published(ctx context.Context, pub Publisher, session, last int64) error {
	from, known := s.fan.position(session)
	if known && from >= last {
		return nil
	}
	var rows pgx.Rows
	var err error
	if known {
		rows, err = s.pool.Query(ctx, qEventsRange, session, max(from, last-maxRead), last, maxRead)
	} else {
		rows, err = s.pool.Query(ctx, qCommitEvents, session, last)
	}
	if err != nil {
		return fmt.Errorf("postgres: listen: read session %d: %w", session, classify(err))
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return fmt.Errorf("postgres: listen: read session %d: %w", session, classify(err))
	}
	s.fan.deliver(pub, session, last, evs)
	return nil
}

// catchUp publishes, after the listener connected again, what other
// nodes committed to the sessions it follows while it was away, reading
// them in one query. The events it reads may hold this node's own commits
// of that time: it waits until every write in flight when it read has
// recorded its commit, so that it can tell them apart.
func (s *Store) catchUp(ctx context.Context, pub Publisher) error {
	ps := s.fan.positions()
	if len(ps) == 0 {
		return nil
	}
	ids, after := make([]int64, len(ps)), make([]int64, len(ps))
	for i, p := range ps {
		ids[i], after[i] = p.session, p.seq
	}
	rows, err := s.pool.Query(ctx, qCatchUp, ids, after, maxRead)
	if err != nil {
		return fmt.Errorf("postgres: listen: catch up: %w", classify(err))
	}
	evs, err := scanEvents(rows)
	if err != nil {
		return fmt.Errorf("postgres: listen: catch up: %w", classify(err))
	}
	if err := s.fan.settled(ctx); err != nil {
		return err
	}
	for len(evs) > 0 { // by session, in order
		n := 1
		for n < len(evs) && evs[n].Session == evs[0].Session {
			n++
		}
		s.fan.deliver(pub, evs[0].Session, evs[n-1].Seq, evs[:n])
		evs = evs[n:]
	}
	return nil
}

// fanout is what the listener knows of the sessions it follows: the last
// sequence number up to which each is published on this node (by the
// runtime for this node's commits, by the listener for the others'), and
// this node's commits above it that the listener has not seen the
// notification of.
//
// Lock order: fanout.mu is taken alone.
type fanout struct {
	connected atomic.Bool
	flights   []flight // one per writer

	mu    sync.Mutex
	on    bool // a listener runs: writers record their commits
	max   int
	watch map[int64]*watched
}

type watched struct {
	seq int64  // published up to here; -1: unknown
	own []span // this node's commits above seq, in order
}

type span struct{ first, last int64 }

// flight counts a writer's groups sent and finished, for catchUp to wait
// for those in flight.
type flight struct{ begun, ended atomic.Int64 }

func newFanout(writers int) *fanout { return &fanout{flights: make([]flight, writers)} }

func (f *fanout) start(maxSessions int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.on {
		return false
	}
	f.on, f.max, f.watch = true, maxSessions, map[int64]*watched{}
	return true
}

func (f *fanout) stop() {
	f.mu.Lock()
	f.on, f.watch = false, nil
	f.mu.Unlock()
}

// begin is called by writer i before it sends a group.
func (f *fanout) begin(i int) { f.flights[i].begun.Add(1) }

// end is called by writer i once a group is committed (or not): the
// events of a committed one are this node's, and already published.
func (f *fanout) end(i int, reqs []*request, committed bool) {
	defer f.flights[i].ended.Add(1)
	if !committed {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.on {
		return
	}
	for _, r := range reqs {
		if r.op != opCommit || r.session == 0 || len(r.events) == 0 || r.err != nil {
			continue
		}
		w := f.get(r.session)
		if sp := (span{r.events[0].Seq, r.events[len(r.events)-1].Seq}); sp.last > w.seq {
			w.own = append(w.own, sp)
		}
	}
}

// settled waits until every group in flight when it was called has ended.
func (f *fanout) settled(ctx context.Context) error {
	for i := range f.flights {
		target := f.flights[i].begun.Load()
		for f.flights[i].ended.Load() < target {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Millisecond):
			}
		}
	}
	return nil
}

// get returns session's entry, made (position unknown) if it has none;
// f.mu is held.
func (f *fanout) get(session int64) *watched {
	w := f.watch[session]
	if w == nil {
		if len(f.watch) >= f.max {
			for k := range f.watch { // forget one, whichever
				delete(f.watch, k)
				break
			}
		}
		w = &watched{seq: -1}
		f.watch[session] = w
	}
	return w
}

// advance moves session's position to last, for a commit of this node's
// ending there: the notifications of every earlier commit came before.
func (f *fanout) advance(session, last int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.watch != nil {
		f.get(session).to(last)
	}
}

// position returns session's position, if known.
func (f *fanout) position(session int64) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w := f.watch[session]; w != nil && w.seq >= 0 {
		return w.seq, true
	}
	return 0, false
}

type position struct{ session, seq int64 }

// positions lists the sessions whose position is known.
func (f *fanout) positions() []position {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []position
	for id, w := range f.watch {
		if w.seq >= 0 {
			out = append(out, position{id, w.seq})
		}
	}
	return out
}

// deliver publishes the events of evs above session's position that are
// not this node's own, and moves the position to last.
func (f *fanout) deliver(pub Publisher, session, last int64, evs []event.Event) {
	f.mu.Lock()
	if f.watch == nil {
		f.mu.Unlock()
		return
	}
	w := f.get(session)
	out := evs[:0:0]
	for _, e := range evs {
		if e.Seq > w.seq && !w.mine(e.Seq) {
			out = append(out, e)
		}
	}
	w.to(last)
	f.mu.Unlock()
	if len(out) > 0 {
		pub.PublishRemote(out...)
	}
}

// to moves w's position up to seq and forgets the commits below it.
func (w *watched) to(seq int64) {
	if seq <= w.seq {
		return
	}
	w.seq = seq
	i := 0
	for i < len(w.own) && w.own[i].last <= seq {
		i++
	}
	w.own = w.own[i:]
}

// mine reports whether seq is in one of this node's commits.
func (w *watched) mine(seq int64) bool {
	for _, sp := range w.own {
		if seq >= sp.first && seq <= sp.last {
			return true
		}
	}
	return false
}
