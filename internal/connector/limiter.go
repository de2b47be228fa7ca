package connector

import (
	"sync"
	"time"
)

// StrangerEvery is the least time between two replies to one stranger
// (a pairing code, "this bot is private"): the bot cannot be made an
// amplifier.
const StrangerEvery = 10 * time.Minute

// limiter remembers when each key was last let through. Its lock is a
// leaf.
type limiter struct {
	every time.Duration
	mu    sync.Mutex
	last  map[string]time.Time
}

func newLimiter(every time.Duration) *limiter {
	return &limiter{every: every, last: map[string]time.Time{}}
}

// allow reports whether key may pass at now, and if so records it.
func (l *limiter) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[key]; ok && now.Sub(t) < l.every {
		return false
	}
	if len(l.last) > 10000 { // forget the old ones rather than grow
		for k, t := range l.last {
			if now.Sub(t) >= l.every {
				delete(l.last, k)
			}
		}
	}
	l.last[key] = now
	return true
}
