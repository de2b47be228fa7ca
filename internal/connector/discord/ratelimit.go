package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"agentd/internal/connector"
)

// Discord's limits, from https://docs.discord.com/developers/topics/rate-limits
// and https://support-dev.discord.com/hc/en-us/articles/6223003921559:
// per-route buckets named by X-RateLimit-Bucket (shared by the routes that
// name the same bucket, per top-level resource: the channel), a global 50
// requests a second per bot, and 10,000 invalid requests (401, 403, 429
// other than scope "shared") in 10 minutes before Cloudflare bans the IP.
const (
	globalPerSecond = 50
	invalidWindow   = 10 * time.Minute
	// invalidStop is where agentd stops sending: half the ban's budget.
	invalidStop = 5000
)

// errSpent: too many invalid requests lately; every call waits a minute
// (the caller sees a global *connector.RetryAfter too).
var errSpent = errors.New("discord: too many refused requests in 10 minutes, sending paused")

func errBudget() error {
	return fmt.Errorf("%w: %w", errSpent, &connector.RetryAfter{D: time.Minute, Global: true})
}

// limiter holds what Discord's headers said. Its mu is a leaf lock: held
// only to read and write these fields, never across a call or a wait.
type limiter struct {
	mu      sync.Mutex
	routes  map[string]string  // route key → bucket name (X-RateLimit-Bucket)
	buckets map[string]*bucket // bucket name + ":" + top-level id → its state
	// global: no call before globalUntil (a global 429); at most
	// globalPerSecond calls in the second from winStart.
	globalUntil time.Time
	winStart    time.Time
	winCount    int
	invalid     [10]minuteCount // refused requests per minute, the last 10 minutes
}

type bucket struct {
	remaining int
	reset     time.Time
}

type minuteCount struct {
	minute int64
	n      int
}

func newLimiter() *limiter {
	return &limiter{routes: map[string]string{}, buckets: map[string]*bucket{}}
}

// route is one call's rate-limit identity: its key (method and path with
// the ids that are not top-level replaced) and its top-level id.
type route struct {
	key   string // e.g. "PATCH /channels/{id}/messages/{id}"
	major string // the channel id
}

// wait blocks until a call of r may go, and reserves it.
func (l *limiter) wait(ctx context.Context, r route) error {
	for {
		d, err := l.reserve(r, time.Now())
		if err != nil || d <= 0 {
			return err
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// reserve takes a slot for r at now, or says how long to wait first.
func (l *limiter) reserve(r route, now time.Time) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.invalidCount(now) >= invalidStop {
		return 0, errBudget()
	}
	if now.Before(l.globalUntil) {
		return l.globalUntil.Sub(now), nil
	}
	b := l.bucketOf(r)
	if b != nil && b.remaining <= 0 && now.Before(b.reset) {
		return b.reset.Sub(now), nil
	}
	if now.Sub(l.winStart) >= time.Second {
		l.winStart, l.winCount = now, 0
	}
	if l.winCount >= globalPerSecond {
		return l.winStart.Add(time.Second).Sub(now), nil
	}
	l.winCount++
	if b != nil && now.Before(b.reset) {
		b.remaining--
	}
	return 0, nil
}

func (l *limiter) bucketOf(r route) *bucket {
	name, ok := l.routes[r.key]
	if !ok {
		return nil
	}
	return l.buckets[name+":"+r.major]
}

// update records what an answer to a call of r said. For a 429 it
// returns the wait as a *connector.RetryAfter; body is the answer's body.
func (l *limiter) update(r route, h http.Header, status int, body []byte, now time.Time) *connector.RetryAfter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if name := h.Get("X-RateLimit-Bucket"); name != "" {
		l.routes[r.key] = name
		b := l.buckets[name+":"+r.major]
		if b == nil {
			b = &bucket{}
			l.buckets[name+":"+r.major] = b
		}
		if n, err := strconv.Atoi(h.Get("X-RateLimit-Remaining")); err == nil {
			b.remaining = n
		}
		if s, err := strconv.ParseFloat(h.Get("X-RateLimit-Reset-After"), 64); err == nil {
			b.reset = now.Add(seconds(s))
		}
	}
	scope := h.Get("X-RateLimit-Scope")
	if status == http.StatusUnauthorized || status == http.StatusForbidden ||
		(status == http.StatusTooManyRequests && scope != "shared") {
		l.countInvalid(now)
	}
	if status != http.StatusTooManyRequests {
		return nil
	}
	var tm struct {
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
	}
	_ = json.Unmarshal(body, &tm)
	d := seconds(tm.RetryAfter)
	if d <= 0 {
		if s, err := strconv.ParseFloat(h.Get("Retry-After"), 64); err == nil {
			d = seconds(s)
		} else {
			d = time.Second
		}
	}
	ra := &connector.RetryAfter{D: d, Global: tm.Global || scope == "global", Bucket: h.Get("X-RateLimit-Bucket")}
	if ra.Global {
		l.globalUntil = now.Add(d)
		return ra
	}
	name := l.routes[r.key]
	if name == "" {
		name = r.key // no bucket header: pause the route itself
		l.routes[r.key] = name
	}
	b := l.buckets[name+":"+r.major]
	if b == nil {
		b = &bucket{}
		l.buckets[name+":"+r.major] = b
	}
	b.remaining, b.reset = 0, now.Add(d)
	return ra
}

func (l *limiter) countInvalid(now time.Time) {
	m := now.Unix() / 60
	c := &l.invalid[m%int64(len(l.invalid))]
	if c.minute != m {
		*c = minuteCount{minute: m}
	}
	c.n++
}

func (l *limiter) invalidCount(now time.Time) int {
	m := now.Unix() / 60
	n := 0
	for _, c := range l.invalid {
		if m-c.minute < int64(invalidWindow/time.Minute) {
			n += c.n
		}
	}
	return n
}

// seconds is s seconds (Discord sends floats: 1.234).
func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}
