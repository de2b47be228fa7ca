package web

import (
	"sync"
	"time"
)

// cache keeps search answers per session and query for a while, with a
// bound on the entries: when full, expired entries go first, then the
// oldest. It is safe for concurrent use; a restart empties it.
type cache struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	now     func() time.Time
	entries map[string]cacheEntry
}

type cacheEntry struct {
	text string
	at   time.Time
}

func newCache(max int, ttl time.Duration, now func() time.Time) *cache {
	if max <= 0 {
		max = 256
	}
	if ttl <= 0 {
		ttl = 15 * time.Minute
	}
	return &cache{ttl: ttl, max: max, now: now, entries: make(map[string]cacheEntry)}
}

func (c *cache) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.now().Sub(e.at) >= c.ttl {
		return "", false
	}
	return e.text, true
}

func (c *cache) put(key, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		oldest := ""
		for k, e := range c.entries {
			if now.Sub(e.at) >= c.ttl {
				delete(c.entries, k)
				continue
			}
			if oldest == "" || e.at.Before(c.entries[oldest].at) {
				oldest = k
			}
		}
		if len(c.entries) >= c.max {
			delete(c.entries, oldest)
		}
	}
	c.entries[key] = cacheEntry{text: text, at: now}
}
