package event

import (
	"sync"
)

// Bus fans events out to subscribers in process. Publish never blocks: a
// subscriber whose buffer is full is dropped and its channel closed, with
// Subscription.Err saying why, so a slow reader can never stall a turn.
// Stored events can always be re-read from the log by sequence number.
//
// On a node of a cluster, the bus also carries the events other nodes
// committed (PublishRemote, from the store's listener), so that whoever
// watches a session here sees its turns wherever they run. What acts on
// events rather than showing them — counting them, calling a model about
// them — subscribes with SubscribeLocal, to act once in the cluster: on
// the node that ran the turn.
type Bus struct {
	mu   sync.RWMutex
	subs map[*Subscription]struct{}
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{subs: make(map[*Subscription]struct{})} }

// Subscription receives published events on C until it is closed.
type Subscription struct {
	C       <-chan Event
	c       chan Event
	session int64 // 0: every session
	from    origin
	bus     *Bus
	once    sync.Once
	mu      sync.Mutex
	err     string
}

// Subscribe returns a subscription to one session's events (session > 0) or
// to all events (session == 0), buffered to size events.
// It receives this node's events and those other nodes committed.
func (b *Bus) Subscribe(session int64, size int) *Subscription {
	return b.subscribe(session, size, anyNode)
}

// SubscribeLocal is Subscribe for this node's events only: those of
// Publish, not PublishRemote.
func (b *Bus) SubscribeLocal(session int64, size int) *Subscription {
	return b.subscribe(session, size, thisNode)
}

// SubscribeRemote is Subscribe for the events other nodes committed
// only: those of PublishRemote, not Publish.
func (b *Bus) SubscribeRemote(session int64, size int) *Subscription {
	return b.subscribe(session, size, otherNodes)
}

// origin says which node's events a subscription receives.
type origin uint8

const (
	anyNode origin = iota
	thisNode
	otherNodes
)

func (b *Bus) subscribe(session int64, size int, from origin) *Subscription {
	if size <= 0 {
		size = 256
	}
	c := make(chan Event, size)
	s := &Subscription{C: c, c: c, session: session, from: from, bus: b}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Close ends the subscription; C is closed.
func (s *Subscription) Close() { s.close("") }

// Err says why the bus closed the subscription ("" if it was closed by its owner).
func (s *Subscription) Err() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Subscription) close(reason string) {
	s.once.Do(func() {
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
		s.mu.Lock()
		s.err = reason
		s.mu.Unlock()
		close(s.c)
	})
}

// Publish delivers evs, this node's, to every matching subscriber without
// blocking.
func (b *Bus) Publish(evs ...Event) { b.publish(evs, false) }

// PublishRemote delivers evs, which another node committed, to every
// matching subscriber but the local-only ones, without blocking.
func (b *Bus) PublishRemote(evs ...Event) { b.publish(evs, true) }

func (b *Bus) publish(evs []Event, remote bool) {
	var slow []*Subscription
	b.mu.RLock()
	for s := range b.subs {
		if remote && s.from == thisNode || !remote && s.from == otherNodes {
			continue
		}
		for _, e := range evs {
			if s.session != 0 && s.session != e.Session {
				continue
			}
			select {
			case s.c <- e:
			default:
				slow = append(slow, s)
			}
			if len(slow) > 0 && slow[len(slow)-1] == s {
				break
			}
		}
	}
	b.mu.RUnlock()
	for _, s := range slow {
		s.close("subscriber too slow: buffer full")
	}
}
