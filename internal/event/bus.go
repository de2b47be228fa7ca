package event

import (
	"sync"
)

// Bus fans events out to subscribers in process. Publish never blocks: a
// subscriber whose buffer is full is dropped and its channel closed, with
// Subscription.Err saying why, so a slow reader can never stall a turn.
// Stored events can always be re-read from the log by sequence number.
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
	bus     *Bus
	once    sync.Once
	mu      sync.Mutex
	err     string
}

// Subscribe returns a subscription to one session's events (session > 0) or
// to all events (session == 0), buffered to size events.
func (b *Bus) Subscribe(session int64, size int) *Subscription {
	if size <= 0 {
		size = 256
	}
	c := make(chan Event, size)
	s := &Subscription{C: c, c: c, session: session, bus: b}
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

// Publish delivers evs to every matching subscriber without blocking.
func (b *Bus) Publish(evs ...Event) {
	var slow []*Subscription
	b.mu.RLock()
	for s := range b.subs {
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
